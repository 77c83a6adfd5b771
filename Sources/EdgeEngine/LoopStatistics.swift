/// Wake-up lateness of the fixed-rate loop: a fixed-size histogram (1 µs
/// buckets up to 100 ms, allocated once), so recording never allocates.
public struct LoopStatistics: Sendable {
    /// Bucket i counts wake-ups that were i µs late.
    private var buckets: [UInt32]
    /// Wake-ups later than the histogram covers.
    public private(set) var beyondRange = 0
    public private(set) var count = 0
    /// Largest lateness, ns.
    public private(set) var maxLatenessNanoseconds: UInt64 = 0
    /// Wake-ups later than one full period.
    public private(set) var overruns = 0
    /// Periods skipped because the loop fell more than a period behind.
    public private(set) var skippedPeriods = 0
    /// Data-ready edges that did not come within two periods (GPIO mode).
    public private(set) var missedEdges = 0

    public static let rangeMicroseconds = 100_000

    public init() { buckets = [UInt32](repeating: 0, count: Self.rangeMicroseconds) }

    @inline(__always)
    public mutating func record(latenessNanoseconds l: UInt64, periodNanoseconds: UInt64) {
        count &+= 1
        if l > maxLatenessNanoseconds { maxLatenessNanoseconds = l }
        if l > periodNanoseconds { overruns &+= 1 }
        let us = Int(l / 1000)
        if us < buckets.count { buckets[us] &+= 1 } else { beyondRange &+= 1 }
    }

    public mutating func recordSkipped(_ n: Int) { skippedPeriods &+= n }
    public mutating func recordMissedEdge() { missedEdges &+= 1 }

    /// The lateness below which `q` (0...1) of the wake-ups fall, ns
    /// (resolution 1 µs; upper bucket edge).
    public func percentile(_ q: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let target = Int((q * Double(count)).rounded(.up))
        var seen = 0
        for (i, c) in buckets.enumerated() {
            seen += Int(c)
            if seen >= max(1, target) { return UInt64(i + 1) * 1000 }
        }
        return maxLatenessNanoseconds
    }

    /// e.g. "lateness p50 12 µs, p99 48 µs, max 210 µs; overruns 0 of 12000 wake-ups"
    public var summary: String {
        "lateness p50 \(percentile(0.5) / 1000) µs, p99 \(percentile(0.99) / 1000) µs, max \(maxLatenessNanoseconds / 1000) µs; overruns \(overruns) of \(count) wake-ups"
            + (missedEdges > 0 ? ", \(missedEdges) missed data-ready edges" : "")
    }
}
