// libm without Foundation: the pure modules import nothing else.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
@inlinable @inline(__always) public func mathSin(_ x: Double) -> Double { sin(x) }
@inlinable @inline(__always) public func mathCos(_ x: Double) -> Double { cos(x) }
@inlinable @inline(__always) public func mathAcos(_ x: Double) -> Double { acos(x) }
@inlinable @inline(__always) public func mathAsin(_ x: Double) -> Double { asin(x) }
@inlinable @inline(__always) public func mathAtan2(_ y: Double, _ x: Double) -> Double { atan2(y, x) }
@inlinable @inline(__always) public func mathTan(_ x: Double) -> Double { tan(x) }
@inlinable @inline(__always) public func mathExp(_ x: Double) -> Double { exp(x) }
@inlinable @inline(__always) public func mathLog(_ x: Double) -> Double { log(x) }
@inlinable @inline(__always) public func mathCbrt(_ x: Double) -> Double { cbrt(x) }
