/// Wake-up lateness of the fixed-rate loop: a fixed-size histogram
/// (allocated once, 31 KB), so recording never allocates. Exact 1 µs
/// buckets below 4.096 ms, where loop lateness lives; above, 256 buckets per
/// doubling (0.4 % wide) up to 134 s. A 1 µs bucket for every value to
/// 100 ms held 400 KB resident in an agent whose whole budget is 14 MB.
public struct LoopStatistics: Sendable {
    /// Bucket counts (see ``bucket(forMicroseconds:)``).
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

    /// Below this many µs every bucket is 1 µs wide.
    static let linearMicroseconds = 4096
    static let subBuckets = 256
    /// Doublings above the linear range (4.096 ms · 2^15 = 134 s).
    static let octaves = 15
    /// Lateness the histogram resolves, µs.
    public static var rangeMicroseconds: Int { linearMicroseconds << octaves }

    public init() { buckets = [UInt32](repeating: 0, count: Self.linearMicroseconds + Self.octaves * Self.subBuckets) }

    /// The bucket of a lateness of `us` µs (nil beyond the range).
    @inline(__always)
    static func bucket(forMicroseconds us: Int) -> Int? {
        if us < linearMicroseconds { return us }
        guard us < rangeMicroseconds else { return nil }
        let octave = (Int.bitWidth - 1 - us.leadingZeroBitCount) - 12    // 2^12 = 4096
        let base = linearMicroseconds << octave
        return linearMicroseconds + octave * subBuckets + (us - base) * subBuckets / base
    }

    /// The upper edge of bucket `i`, µs.
    static func upperEdge(ofBucket i: Int) -> Int {
        if i < linearMicroseconds { return i + 1 }
        let octave = (i - linearMicroseconds) / subBuckets, sub = (i - linearMicroseconds) % subBuckets
        let base = linearMicroseconds << octave
        return base + (sub + 1) * base / subBuckets
    }

    @inline(__always)
    public mutating func record(latenessNanoseconds l: UInt64, periodNanoseconds: UInt64) {
        count &+= 1
        if l > maxLatenessNanoseconds { maxLatenessNanoseconds = l }
        if l > periodNanoseconds { overruns &+= 1 }
        if let b = Self.bucket(forMicroseconds: Int(min(l / 1000, UInt64(Int.max)))) { buckets[b] &+= 1 } else { beyondRange &+= 1 }
    }

    public mutating func recordSkipped(_ n: Int) { skippedPeriods &+= n }
    public mutating func recordMissedEdge() { missedEdges &+= 1 }

    /// The lateness below which `q` (0...1) of the wake-ups fall, ns (the
    /// upper edge of its bucket: 1 µs resolution below 4.096 ms, 0.4 % above).
    public func percentile(_ q: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let target = Int((q * Double(count)).rounded(.up))
        var seen = 0
        for (i, c) in buckets.enumerated() where c > 0 {
            seen += Int(c)
            if seen >= max(1, target) { return UInt64(Self.upperEdge(ofBucket: i)) * 1000 }
        }
        return maxLatenessNanoseconds
    }

    /// e.g. "lateness p50 12 µs, p99 48 µs, max 210 µs; overruns 0 of 12000 wake-ups"
    public var summary: String {
        "lateness p50 \(percentile(0.5) / 1000) µs, p99 \(percentile(0.99) / 1000) µs, max \(maxLatenessNanoseconds / 1000) µs; overruns \(overruns) of \(count) wake-ups"
            + (missedEdges > 0 ? ", \(missedEdges) missed data-ready edges" : "")
    }
}
