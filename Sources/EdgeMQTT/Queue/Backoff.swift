import EdgeValues
/// Capped exponential backoff with jitter, for reconnecting to the broker.
///
/// Attempt n waits a random time in [d/2, d] with d = initial · 2ⁿ capped
/// at `maximum`, so a fleet of bridges that lost the same broker does not
/// come back in lock-step, and no wait exceeds the cap.
public struct Backoff: Sendable {
    public var initialNs: UInt64
    public var maximumNs: UInt64
    public private(set) var attempt = 0
    private var random: SplitMix64

    public init(initialNs: UInt64, maximumNs: UInt64, seed: UInt64 = UInt64.random(in: 0...UInt64.max)) {
        self.initialNs = initialNs; self.maximumNs = max(initialNs, maximumNs)
        random = SplitMix64(seed: seed)
    }

    /// The ceiling of the next wait (before jitter), ns.
    public var currentCeilingNs: UInt64 {
        var d = initialNs
        for _ in 0..<min(attempt, 63) where d < maximumNs { d = d &* 2 }
        return min(d, maximumNs)
    }

    /// The wait before the next attempt, ns; each call doubles the ceiling.
    public mutating func next() -> UInt64 {
        let ceiling = currentCeilingNs
        attempt += 1
        let half = ceiling / 2
        return half + random.next() % (ceiling - half + 1)
    }

    /// After a successful connection: the next wait starts at `initial` again.
    public mutating func reset() { attempt = 0 }
}
