import Testing
import EdgeValues
@testable import EdgeEngine

/// The lateness histogram against percentiles computed directly from the
/// recorded values (the nearest-rank definition: the smallest value with at
/// least q of the values at or below it).
@Suite struct LoopStatisticsTests {
    func nearestRank(_ v: [UInt64], _ q: Double) -> UInt64 {
        let s = v.sorted()
        return s[max(0, Int((q * Double(s.count)).rounded(.up)) - 1)]
    }

    @Test func exactToTheMicrosecondBelowFourMilliseconds() {
        var st = LoopStatistics()
        var g = SplitMix(seed: 3)
        var values: [UInt64] = []
        for _ in 0..<20_000 {
            let us = UInt64(g.next() % 4000)
            values.append(us * 1000 + 500)            // x.5 µs: inside bucket x
            st.record(latenessNanoseconds: us * 1000 + 500, periodNanoseconds: 10_000_000)
        }
        for q in [0.5, 0.9, 0.99, 0.999] {
            // The bucket's upper edge: the value rounded up to the next µs.
            #expect(st.percentile(q) == (nearestRank(values, q) / 1000 + 1) * 1000, "q \(q)")
        }
    }

    @Test func withinHalfAPercentAboveAndCountedBeyond() {
        var st = LoopStatistics()
        var values: [UInt64] = []
        for i in 1...10_000 {
            let ns = UInt64(i) * 10_000_000 / 10_000 * 7   // up to 70 ms
            values.append(ns)
            st.record(latenessNanoseconds: ns, periodNanoseconds: 5_000_000)
        }
        for q in [0.5, 0.9, 0.99] {
            let exact = Double(nearestRank(values, q)), got = Double(st.percentile(q))
            #expect(got >= exact && got <= exact * 1.005, "q \(q): \(got) vs \(exact)")
        }
        #expect(st.overruns == values.filter { $0 > 5_000_000 }.count)
        st.record(latenessNanoseconds: 200 * 1_000_000_000, periodNanoseconds: 5_000_000)
        #expect(st.beyondRange == 1 && st.maxLatenessNanoseconds == 200_000_000_000)
    }

    @Test func bucketsAreContiguousAndOrdered() {
        var last = 0
        for us in stride(from: 0, to: LoopStatistics.rangeMicroseconds, by: 997) {
            let b = LoopStatistics.bucket(forMicroseconds: us)!
            #expect(b >= last)
            #expect(LoopStatistics.upperEdge(ofBucket: b) > us, "\(us) µs lies below its bucket's upper edge")
            last = b
        }
        #expect(LoopStatistics.bucket(forMicroseconds: LoopStatistics.rangeMicroseconds) == nil)
    }
}

typealias SplitMix = SplitMix64
