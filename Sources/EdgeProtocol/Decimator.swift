/// Decides which samples of a stream one subscriber gets, by capture time:
/// the rule the agent applies per connection (ClientProtocol.md,
/// `subscribe`) and EdgeClient applies again per subscriber of a shared
/// wire subscription. One definition, so both agree.
///
/// Deliver when the sample is due, then advance the due time by one
/// interval (keeping the average rate even with jittery timestamps). A
/// tolerance of 1/16 interval accepts a sample that arrives a hair early,
/// and the next due time counts from such a sample rather than from the
/// grid: a chip whose clock runs a little fast (the MPU-6050's is within
/// ±1 % on its PLL, PS-MPU-6000A-00 rev 3.4) then has every sample
/// delivered to a subscriber asking for its rate, instead of one dropped
/// each time the grid has drifted a tolerance ahead; the average rate is
/// then the chip's, at most its clock error above the one asked for. A
/// subscriber that fell more than an interval behind (a gap in the data)
/// restarts the grid at the next sample instead of bursting to catch up.
public struct Decimator: Sendable, Hashable {
    /// ns; 0: every sample.
    public var intervalNs: UInt64
    /// Capture time (ns) from which the next sample is due; nil: the next sample.
    public private(set) var nextDueNs: UInt64?

    public init(intervalNs: UInt64) { self.intervalNs = intervalNs }

    /// Whether the sample captured at `ts` (ns) is delivered; updates the grid.
    public mutating func admit(_ ts: UInt64) -> Bool {
        if intervalNs == 0 { return true }
        let tolerance = intervalNs / 16
        if let due = nextDueNs, ts &+ tolerance < due { return false }
        var next = (nextDueNs.map { min(ts, $0) } ?? ts) &+ intervalNs
        if next &+ tolerance <= ts { next = ts &+ intervalNs } // fell behind: restart the grid
        nextDueNs = next
        return true
    }

    /// Starts again (the next sample is delivered).
    public mutating func reset() { nextDueNs = nil }
}
