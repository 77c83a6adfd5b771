import CEdgeShims

/// The clock and the sleep that drivers, simulators and the loop are given,
/// so the same code runs on the real monotonic clock and on a virtual one
/// (tests and replays never sleep on wall-clock time).
///
/// Times are `CLOCK_MONOTONIC` nanoseconds.
public protocol TimeSource: AnyObject {
    /// Current time, monotonic nanoseconds.
    var nowNanoseconds: UInt64 { get }
    /// Sleeps until the absolute monotonic time `deadline` (returns at once
    /// if it has passed).
    func sleep(untilNanoseconds deadline: UInt64)
}

extension TimeSource {
    /// Sleeps for a relative duration in nanoseconds.
    public func sleep(nanoseconds: UInt64) {
        sleep(untilNanoseconds: nowNanoseconds &+ nanoseconds)
    }
    /// Sleeps for a relative duration in milliseconds.
    public func sleep(milliseconds: Double) {
        sleep(nanoseconds: UInt64(milliseconds * 1_000_000))
    }
    /// Current time in seconds.
    public var nowSeconds: Double { Double(nowNanoseconds) / 1e9 }
}

/// The system's `CLOCK_MONOTONIC` with `clock_nanosleep(TIMER_ABSTIME)`.
public final class MonotonicClock: TimeSource, @unchecked Sendable {
    public init() {}
    public var nowNanoseconds: UInt64 { edge_monotonic_ns() }
    public func sleep(untilNanoseconds deadline: UInt64) {
        _ = edge_sleep_until_monotonic_ns(deadline)
    }
}

/// A virtual clock: `sleep` advances time instantly. Simulators read the
/// same clock, so a simulated chip "converts" while the driver "waits".
/// Not thread-safe: one virtual clock belongs to one thread of control.
public final class VirtualClock: TimeSource, @unchecked Sendable {
    public private(set) var nowNanoseconds: UInt64
    public init(startNanoseconds: UInt64 = 0) { nowNanoseconds = startNanoseconds }
    public func sleep(untilNanoseconds deadline: UInt64) {
        if deadline > nowNanoseconds { nowNanoseconds = deadline }
    }
    /// Moves time forward by `nanoseconds` (a bus transfer's duration, say).
    public func advance(nanoseconds: UInt64) { nowNanoseconds &+= nanoseconds }
}
