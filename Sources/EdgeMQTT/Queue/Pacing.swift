/// Lets a sample through at most every `intervalNs` of **capture time**, on
/// a fixed grid so the average rate holds when samples jitter: the agent's
/// own rule for `interval_s` (ClientProtocol.md, `subscribe`), a sample
/// counts as on time up to 1/16 of the interval early. Pure: the caller
/// passes the sample's `timestamp_ns`, never a clock.
public struct RateGate: Sendable, Hashable {
    public var intervalNs: UInt64
    private var nextNs: UInt64?

    public init(intervalNs: UInt64) { self.intervalNs = intervalNs }

    /// Whether the sample captured at `t` is published.
    public mutating func admit(_ t: UInt64) -> Bool {
        guard intervalNs > 0 else { return true }
        let slack = intervalNs / 16
        guard let next = nextNs else {
            nextNs = t &+ intervalNs
            return true
        }
        if t &+ slack < next { return false }
        // On the grid; a gap of more than one interval (the stream paused,
        // the agent restarted) starts a new grid at this sample.
        let following = next &+ intervalNs
        nextNs = following &+ slack <= t ? t &+ intervalNs : following
        return true
    }

    /// Forgets the grid (a new connection to the agent).
    public mutating func reset() { nextNs = nil }
}

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

/// A small deterministic generator (seedable for tests).
struct SplitMix64: Sendable {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
