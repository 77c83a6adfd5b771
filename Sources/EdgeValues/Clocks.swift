#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// CLOCK_MONOTONIC now, ns: the clock of every sample's `timestamp_ns`.
/// The project's one reading of it outside the engine's `TimeSource`s.
@inline(__always)
public func monotonicNowNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CLOCK_REALTIME now, ns since 1970 (UTC).
@inline(__always)
public func realtimeNowNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC now, ns: what turns a capture time
/// (monotonic) into a date. Reading the two clocks one after the other is
/// off by however long the thread was preempted between the readings:
/// milliseconds on a loaded machine, and a recorded sample then dated that
/// much early or late. So the
/// realtime reading is bracketed by two monotonic ones, and the narrowest of
/// up to four brackets is used (exact to half its width: well under a
/// microsecond when the thread is not preempted).
@inline(__always)
public func realtimeMinusMonotonicNs() -> Int64 {
    realtimeMinusMonotonicNs(monotonic: monotonicNowNs, realtime: realtimeNowNs)
}

/// ``realtimeMinusMonotonicNs()`` over given clocks (tests script them).
@inline(__always)
public func realtimeMinusMonotonicNs(monotonic: () -> UInt64, realtime: () -> UInt64) -> Int64 {
    var narrowest = UInt64.max
    var offset: Int64 = 0
    for _ in 0..<4 {
        let m0 = monotonic(), r = realtime(), m1 = monotonic()
        let width = m1 &- m0
        if width < narrowest {
            narrowest = width
            offset = Int64(bitPattern: r) &- Int64(bitPattern: m0 &+ width / 2)
        }
        if width < 20_000 { break }
    }
    return offset
}
