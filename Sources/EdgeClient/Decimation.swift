// Client-side multiplexing, the pure part: several subscribers of one stream
// in one process share one wire subscription, at an interval that serves
// them all, and each gets its own interval back by capture timestamp.

/// The interval to subscribe at on the wire when several subscribers of one
/// stream want `intervalsNs` (ns; 0: every sample).
///
/// Rules: any 0 → 0. Otherwise the greatest common divisor of the
/// intervals (rounded to whole microseconds), so that every subscriber's
/// interval is a whole number of wire periods and each is served on an
/// exact grid (20 ms and 50 ms → 10 ms); when that divisor is below a
/// quarter of the shortest interval (intervals with no useful common
/// period, such as 1/60 s and 1/100 s) the shortest interval, whose
/// samples the slower subscribers then take the nearest of.
public func wireInterval(for intervalsNs: some Sequence<UInt64>) -> UInt64? {
    var divisor: UInt64?
    var shortest = UInt64.max
    for i in intervalsNs {
        if i == 0 { return 0 }
        shortest = min(shortest, i)
        let us = max(1, (i + 500) / 1000)
        divisor = divisor.map { gcd($0, us) } ?? us
    }
    guard let divisor else { return nil }
    let d = divisor * 1000
    return d * 4 < shortest ? shortest : min(d, shortest)
}

func gcd(_ a: UInt64, _ b: UInt64) -> UInt64 {
    var (a, b) = (a, b)
    while b != 0 { (a, b) = (b, a % b) }
    return a
}

// Which samples one subscriber gets: ``Decimator`` (EdgeProtocol), the rule
// the agent applies per connection, applied again here per subscriber.

/// Reconnection delays: `initial`, doubling to `maximum`; ``reset()`` after
/// a connection that worked.
public struct Backoff: Sendable, Hashable {
    public var initialNs: UInt64
    public var maximumNs: UInt64
    public private(set) var currentNs: UInt64

    public init(initialNs: UInt64 = 50_000_000, maximumNs: UInt64 = 2_000_000_000) {
        self.initialNs = initialNs; self.maximumNs = maximumNs; self.currentNs = initialNs
    }

    /// The delay before the next attempt, and doubles the one after.
    public mutating func next() -> UInt64 {
        let d = currentNs
        currentNs = min(maximumNs, currentNs * 2)
        return d
    }

    public mutating func reset() { currentNs = initialNs }
}
