import Testing
@testable import EdgeEngine

/// FIFO batch stamps against the true capture times of a simulated chip
/// whose clock runs 1 % slow, exact or 1 % fast (PS-MPU-6000A-00 rev 3.4
/// §6.4), at 100 Hz read every 20 ms by a loop whose wake-ups jitter by up
/// to 0.5 ms - next to the driver's own stamps (newest = read time, older
/// ones a nominal period apart), which repeat a stamp (so a sample is
/// dropped) or double a gap whenever the chip's clock slips a sample
/// against the loop's.
@Suite struct SampleClockTests {
    @Test(arguments: [0.99, 1.0, 1.01])
    func followsTheChipClockThroughJitteryReads(_ speed: Double) {
        let nominal: UInt64 = 10_000_000                // 100 Hz
        let truePeriod = Double(nominal) / speed
        var clock = SampleClock()
        var g = SplitMix(seed: 11)
        var made = 0
        var stamps: [Double] = [], driver: [Double] = [], truths: [Double] = []
        for tick in 1...2000 {
            // The loop wakes every 20 ms, up to 0.5 ms late.
            let read = Double(tick) * 20_000_000 + 1_000_000 + Double(g.next() % 500_000)
            let total = Int(read / truePeriod)       // samples made by the read
            let n = total - made
            let (newest, period) = clock.stamp(count: n, readAt: UInt64(read), nominalPeriod: nominal)
            for i in 0..<n {
                stamps.append(Double(newest) - Double(n - 1 - i) * period)
                driver.append(read - Double(n - 1 - i) * Double(nominal))
                truths.append(Double(made + i + 1) * truePeriod)
            }
            made = total
        }
        func intervalJitter(_ s: [Double]) -> Double {
            let late = Array(s.dropFirst(s.count / 4))
            let e = zip(late.dropFirst(), late).map { ($0 - $1) - truePeriod }
            return (e.map { $0 * $0 }.reduce(0, +) / Double(e.count)).squareRoot()
        }
        let ours = intervalJitter(stamps), theirs = intervalJitter(driver)
        #expect(ours < theirs, "\(speed): interval error RMS \(ours) ns against the driver's \(theirs) ns")
        // Strictly increasing, never a doubled gap: nothing lost, nothing repeated.
        let gaps = zip(stamps.dropFirst(), stamps).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 > 0.85 * truePeriod && $0 < 1.15 * truePeriod },
                "\(speed): gaps \(gaps.min()!)...\(gaps.max()!) ns")
        if speed != 1 {
            let driverGaps = zip(driver.dropFirst(), driver).map { $0 - $1 }
            #expect(driverGaps.contains { $0 <= 0 || $0 > 1.5 * truePeriod }, "the driver's stamps do slip here")
        }
    }

    @Test func startsOverAfterAGap() {
        var c = SampleClock()
        _ = c.stamp(count: 2, readAt: 20_000_000, nominalPeriod: 10_000_000)
        let (n, p) = c.stamp(count: 2, readAt: 40_000_000, nominalPeriod: 10_000_000)
        #expect(p == 10_000_000 && n == 40_000_000)
        // 100 ms of nothing, then 3 samples: a fresh history from the read.
        let (m, _) = c.stamp(count: 3, readAt: 140_000_000, nominalPeriod: 10_000_000)
        #expect(m == 140_000_000)
    }
}
