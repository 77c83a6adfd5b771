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

    /// Every stamp against its read, one sample or two a tick, the loop
    /// late by up to 0.5 or 3 ms, the chip's clock 1 % or 0.2 % either
    /// side or exact: the spacing holds everywhere.
    ///
    /// KNOWN ISSUE (open; docs/agent.md, "Known limits"): the newest sample a
    /// read finds was captured by that read, yet this loop, which follows
    /// the reads on average, stamps it after its read about half the time -
    /// by up to the read jitter on a steady clock, and by up to a period
    /// for a while after the chip's clock slips a sample against the loop's:
    /// a capture in the future of the process that reads it. Stamping the
    /// earliest capture a read allows (the loop less a period) ends it, but
    /// puts every IMU sample before the magnetometer's field of the same
    /// tick, which the fusion's field-freshness rules (FusionStage, and
    /// StaleFieldTests, FaultMatrixTests) take as a sample without a current
    /// field: both sensors' stamps have to move to capture estimates
    /// together.
    @Test(arguments: [0.99, 0.998, 1.0, 1.002, 1.01])
    func theSpacingHoldsAndStampsAfterTheirReadAreAKnownIssue(_ speed: Double) {
        let nominal: UInt64 = 10_000_000
        let truePeriod = Double(nominal) / speed
        for (tick, jitter) in [(10_000_000.0, 500_000), (10_000_000.0, 3_000_000), (20_000_000.0, 500_000)] {
            var clock = SampleClock()
            var g = SplitMix(seed: 5)
            var made = 0
            var previous: Double?
            var afterRead = 0, gaps: [Double] = []
            for k in 1...6000 {
                let read = Double(k) * tick + Double(g.next() % UInt64(jitter))
                let total = Int(read / truePeriod)
                let n = total - made
                guard n > 0 else { continue }
                let (newest, period) = clock.stamp(count: n, readAt: UInt64(read), nominalPeriod: nominal)
                if Double(newest) > read { afterRead += 1 }
                if k > 10, let p = previous { gaps.append((Double(newest) - Double(n - 1) * period - p) / truePeriod) }
                previous = Double(newest)
                made = total
            }
            let what = "speed \(speed), a read every \(tick / 1e6) ms up to \(Double(jitter) / 1e6) ms late"
            #expect(gaps.allSatisfy { $0 > 0.9 && $0 < 1.1 }, "\(what): gaps \(gaps.min()!)...\(gaps.max()!) periods")
            withKnownIssue("stamps after their read (see the doc comment)") {
                #expect(afterRead == 0, "\(what): \(afterRead) stamps after their read")
            }
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
