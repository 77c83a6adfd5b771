/// The value types every layer shares, defined once: the sensors' 3-vectors,
/// rotations, Core Motion's reference frames and field accuracy, and the
/// constants of the units. Pure: imports only the C maths library.
///
/// 3-vectors are `SIMD3<Double>` (on the wire and in the maths alike); the
/// unit and the frame are said where they are used.
public typealias Vector3 = SIMD3<Double>

extension SIMD3 where Scalar == Double {
    @inlinable @inline(__always) public func dot(_ o: Self) -> Double { (self * o).sum() }
    @inlinable @inline(__always) public func cross(_ o: Self) -> Self {
        Self(y * o.z - z * o.y, z * o.x - x * o.z, x * o.y - y * o.x)
    }
    @inlinable @inline(__always) public var norm: Double { dot(self).squareRoot() }
    @inlinable @inline(__always) public var normalized: Self { let n = norm; return n > 0 ? self * (1 / n) : self }
    /// Element-wise absolute values.
    @inlinable public var magnitudes: Self { Self(Swift.abs(x), Swift.abs(y), Swift.abs(z)) }
}

