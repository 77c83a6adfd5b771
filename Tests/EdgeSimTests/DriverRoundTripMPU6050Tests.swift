// Round trips truth → MPU6050Model registers → real MPU6050 driver → SI:
// every gyro × accel range at several DLPF / sample-rate settings, noise on,
// deterministic errors off, asymmetric non-zero values on every axis (so a
// swapped axis or a lost sign cannot pass).
import Testing
import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeSim

@Suite struct DriverRoundTripMPU6050Tests {
    /// Noise at the data sheet's density (noiseScale 1), every deterministic
    /// error off (bias, tempco, scale, cross-axis, clock error).
    static func noisy(dieTemperatureOffset: Double = 0) -> MPU6050Imperfections {
        var i = MPU6050Imperfections.ideal
        i.accel.noiseScale = 1
        i.gyro.noiseScale = 1
        i.dieTemperatureOffset = dieTemperatureOffset
        return i
    }

    /// Asymmetric truth scaled with the range (the ±2 g / ±250 °/s values are
    /// (1.3, −2.7, 9.1) m/s² and (0.21, −0.43, 0.65) rad/s, ≤ 47 % / 15 % of
    /// full scale; wider ranges get proportionally larger values).
    static func truth(gyro: MPU6050GyroRange, accel: MPU6050AccelRange, temperature: Double = 23.7) -> PhysicalTruth {
        var t = PhysicalTruth.restingLevel
        t.specificForce = SIMD3(1.3, -2.7, 9.1) * (Double(accel.g) / 2)
        t.angularRate = SIMD3(0.21, -0.43, 0.65) * (Double(gyro.degreesPerSecond) / 250)
        t.temperature = temperature
        return t
    }

    struct Rig {
        var clock: VirtualClock
        var board: SimulatedBoard
        var mpu: MPU6050<SimulatedBus>
        var model: MPU6050Model
    }

    /// A board with one MPU-6050 at 0x68 and the driver started with `config`.
    static func start(_ config: MPU6050Configuration, truth: PhysicalTruth, mounting: [[Double]] = TestMounting.identity,
                      imperfections: MPU6050Imperfections = noisy(), identity: UInt8? = nil,
                      seed: UInt64 = 1) throws -> Rig {
        let clock = VirtualClock(startNanoseconds: 3 * nsPerSecond)
        let board = try SimulatedBoard(
            chips: [SimulatedChipSpec(kind: "mpu6050", address: 0x68, boardFromChip: mounting, identity: identity,
                                      imperfections: .mpu6050(imperfections))],
            truth: ConstantTruth(truth), clock: clock, seed: seed)
        var mpu = MPU6050(bus: board.bus, address: 0x68, clock: clock)
        try mpu.start(config)
        let model = try #require(board.device(at: 0x68) as? MPU6050Model)
        return Rig(clock: clock, board: board, mpu: mpu, model: model)
    }

    /// Polls `readRawIfReady()` every `step` ns until `count` fresh samples
    /// arrived (after discarding whatever was pending).
    static func freshSamples(_ rig: Rig, count: Int, step: UInt64) throws -> [MPU6050RawSample] {
        _ = try rig.mpu.readRawIfReady()
        var out: [MPU6050RawSample] = []
        var polls = 0
        while out.count < count, polls < count * 1000 {
            rig.clock.advance(nanoseconds: step)
            polls += 1
            if let s = try rig.mpu.readRawIfReady() { out.append(s) }
        }
        return out
    }

    /// Checks decoded samples against the truth in the chip frame.
    static func checkSamples(_ samples: [MPU6050Sample], truth: PhysicalTruth, mounting: [[Double]],
                             tolerance: MPU6050Tolerance, temperature: Double, label: String,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        var tally = ToleranceTally(label)
        let wantA = chipFrame(mounting, truth.specificForce), wantG = chipFrame(mounting, truth.angularRate)
        let tolA = chipFrameTolerance(mounting, tolerance.accel), tolG = chipFrameTolerance(mounting, tolerance.gyro)
        for (i, s) in samples.enumerated() {
            tally.check("#\(i) accel", got: s.acceleration, want: wantA, tolerance: tolA)
            tally.check("#\(i) gyro", got: s.rotationRate, want: wantG, tolerance: tolG)
            // No noise on the temperature: 1 LSB, every sample.
            #expect(abs(s.temperatureCelsius - temperature) <= tolerance.temperature,
                    "\(label) #\(i): temperature \(s.temperatureCelsius) °C, want \(temperature) ± \(tolerance.temperature)",
                    sourceLocation: sourceLocation)
        }
        tally.verify(sourceLocation: sourceLocation)
    }

    // MARK: every range × rate

    struct RateSetting: Sendable, CustomTestStringConvertible {
        var dlpf: MPU6050DLPF
        var hz: Double
        var testDescription: String { "DLPF \(dlpf.bandwidthHz) Hz, \(hz) Hz" }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var gyro: MPU6050GyroRange
        var accel: MPU6050AccelRange
        var rate: RateSetting
        var testDescription: String { "±\(gyro.degreesPerSecond) °/s, ±\(accel.g) g, \(rate.testDescription)" }
        var configuration: MPU6050Configuration {
            MPU6050Configuration(gyroRange: gyro, accelRange: accel, dlpf: rate.dlpf, sampleRateHz: rate.hz)
        }
    }

    /// DLPF 260 runs from the 8 kHz base (dividers 0, 7, 39, 255); the
    /// others from 1 kHz (every DLPF setting; 300 Hz is not a divider and
    /// gets 333.3 Hz; 3.91 Hz is divider 255).
    static let rates: [RateSetting] = [
        RateSetting(dlpf: .hz260, hz: 8000), RateSetting(dlpf: .hz260, hz: 1000), RateSetting(dlpf: .hz260, hz: 200),
        RateSetting(dlpf: .hz260, hz: 31.25),
        RateSetting(dlpf: .hz184, hz: 1000), RateSetting(dlpf: .hz94, hz: 300), RateSetting(dlpf: .hz44, hz: 100),
        RateSetting(dlpf: .hz21, hz: 250), RateSetting(dlpf: .hz10, hz: 3.91), RateSetting(dlpf: .hz5, hz: 50),
    ]

    /// SMPLRT_DIV = round(base / requested) − 1 (RM 4.2, docs/drivers.md),
    /// written here independently: the rate the chip should run at.
    static func expectedRate(_ r: RateSetting) -> Double {
        let base = r.dlpf == .hz260 ? 8000.0 : 1000.0
        return base / max(1, min(256, (base / r.hz).rounded()))
    }

    static let cases: [Case] = rates.flatMap { r in
        MPU6050GyroRange.allCases.flatMap { g in MPU6050AccelRange.allCases.map { a in Case(gyro: g, accel: a, rate: r) } }
    }

    @Test(arguments: cases)
    func everyRangeAndRate(_ c: Case) throws {
        let truth = Self.truth(gyro: c.gyro, accel: c.accel)
        let seed = UInt64(c.rate.hz * 100) << 16 | UInt64(c.gyro.rawValue) << 8 | UInt64(c.accel.rawValue) << 4 | UInt64(c.rate.dlpf.rawValue)
        let rig = try Self.start(c.configuration, truth: truth, seed: seed)
        let config = c.configuration
        // The chip runs at the rate the driver says it achieves, which is
        // what the divider formula gives.
        #expect(abs(rig.model.sampleRateHz - config.achievedSampleRateHz) < 1e-6 * config.achievedSampleRateHz)
        #expect(abs(config.achievedSampleRateHz - Self.expectedRate(c.rate)) < 1e-9)

        let period = 1e9 / config.achievedSampleRateHz
        let step = UInt64(period / 20)
        let raw = try Self.freshSamples(rig, count: 10, step: step)
        try #require(raw.count == 10, "only \(raw.count) fresh samples")
        let samples = raw.map { MPU6050Decoder.decode($0, scales: rig.mpu.scales) }
        Self.checkSamples(samples, truth: truth, mounting: TestMounting.identity, tolerance: rig.model.roundTripTolerance,
                          temperature: truth.temperature, label: c.testDescription)

        // Achieved rate from the capture times of consecutive fresh samples:
        // each is seen on the first poll after it lands, so every gap is the
        // period ± one poll step, and the mean gap is within step/(n-1).
        let gaps = zip(raw.dropFirst(), raw).map { Double($0.captureNanoseconds - $1.captureNanoseconds) }
        for g in gaps { #expect(abs(g - period) <= Double(step), "gap \(g) ns, period \(period) ns") }
        let mean = gaps.reduce(0, +) / Double(gaps.count)
        #expect(abs(mean - period) <= Double(step) / Double(gaps.count) + 1, "mean gap \(mean) ns, period \(period) ns")
    }

    // MARK: mounting

    @Test(arguments: [TestMounting.yaw90, TestMounting.cyclic, TestMounting.upsideDown])
    func mountingGivesChipFrameValues(_ mounting: [[Double]]) throws {
        let config = MPU6050Configuration(gyroRange: .dps500, accelRange: .g4, dlpf: .hz44, sampleRateHz: 200)
        let truth = Self.truth(gyro: .dps500, accel: .g4)
        let rig = try Self.start(config, truth: truth, mounting: mounting, seed: 77)
        let raw = try Self.freshSamples(rig, count: 8, step: 250_000)
        try #require(raw.count == 8)
        let samples = raw.map { MPU6050Decoder.decode($0, scales: rig.mpu.scales) }
        Self.checkSamples(samples, truth: truth, mounting: mounting, tolerance: rig.model.roundTripTolerance,
                          temperature: truth.temperature, label: "mounting \(mounting)")
        // Not the board-frame values: the mounting really moved the axes.
        let board = truth.specificForce
        #expect(samples.allSatisfy { abs($0.acceleration.x - board.x) > 1 || abs($0.acceleration.y - board.y) > 1
                                     || abs($0.acceleration.z - board.z) > 1 })
    }

    // MARK: temperature and identity rows

    /// The die temperature (ambient + the model's die offset) comes back
    /// through each variant's formula within 1 LSB.
    @Test(arguments: [(UInt8(0x68), 25.0), (0x68, -12.5), (0x68, 61.0), (0x70, 25.0), (0x71, -3.0), (0x73, 44.4), (0x72, 18.0)])
    func temperatureThroughTheVariantFormula(_ whoAmI: UInt8, _ ambient: Double) throws {
        var truth = Self.truth(gyro: .dps250, accel: .g2, temperature: ambient)
        truth.angularRate = SIMD3(0.05, -0.07, 0.11)
        let rig = try Self.start(.default, truth: truth, imperfections: Self.noisy(dieTemperatureOffset: 2.5),
                                 identity: whoAmI, seed: UInt64(whoAmI))
        #expect(rig.mpu.variant.whoAmI == whoAmI)
        #expect(rig.mpu.variant.isGenuine == (whoAmI == 0x68))
        let raw = try Self.freshSamples(rig, count: 4, step: 1_000_000)
        try #require(raw.count == 4)
        let samples = raw.map { MPU6050Decoder.decode($0, scales: rig.mpu.scales) }
        Self.checkSamples(samples, truth: truth, mounting: TestMounting.identity, tolerance: rig.model.roundTripTolerance,
                          temperature: ambient + 2.5, label: "WHO_AM_I \(hex(whoAmI))")
    }

    /// The other cores' temperature formulas: MPU-6515 (0x74) and MPU-6880
    /// (0x78) have the 6500 core (/333.87 + 21), 0x98 and the ICM-206xx IDs
    /// the ICM core (/326.8 + 25). (The simulator once gave them the
    /// MPU-6050 formula; this round trip found it.)
    @Test(arguments: [UInt8(0x74), 0x78, 0x98, 0x12])
    func temperatureFormulaOfTheOtherCores(_ whoAmI: UInt8) throws {
        let truth = Self.truth(gyro: .dps250, accel: .g2, temperature: 25)
        let rig = try Self.start(.default, truth: truth, identity: whoAmI, seed: 3)
        let raw = try Self.freshSamples(rig, count: 1, step: 1_000_000)
        let s = MPU6050Decoder.decode(try #require(raw.first), scales: rig.mpu.scales)
        #expect(abs(s.temperatureCelsius - 25) <= rig.model.roundTripTolerance.temperature,
                "WHO_AM_I \(hex(whoAmI)): driver reads \(s.temperatureCelsius) °C for a 25 °C die")
    }

    /// setSleep(true): no samples and zero data registers (what a sleeping
    /// part reads); setSleep(false): samples resume on the configured rate,
    /// configuration kept.
    @Test func sleepAndWake() throws {
        let truth = Self.truth(gyro: .dps500, accel: .g4)
        let rig = try Self.start(MPU6050Configuration(dlpf: .hz44, sampleRateHz: 200), truth: truth, seed: 46)
        #expect(try Self.freshSamples(rig, count: 2, step: 500_000).count == 2)
        try rig.mpu.setSleep(true)
        rig.clock.sleep(nanoseconds: 50_000_000)
        #expect(try rig.mpu.readRawIfReady() == nil)
        let z = try rig.mpu.readRaw()
        #expect(z.accel == .zero && z.gyro == .zero && z.temperature == 0)
        try rig.mpu.setSleep(false)
        try rig.mpu.verifyConfiguration()
        let raw = try Self.freshSamples(rig, count: 4, step: 500_000)
        try #require(raw.count == 4)
        for (a, b) in zip(raw.dropFirst(), raw) { #expect(a.captureNanoseconds - b.captureNanoseconds == 5_000_000) }
        Self.checkSamples(raw.map { MPU6050Decoder.decode($0, scales: rig.mpu.scales) }, truth: truth,
                          mounting: TestMounting.identity, tolerance: rig.model.roundTripTolerance,
                          temperature: truth.temperature, label: "after wake")
    }

    // MARK: saturation

    /// Twice the full scale reads +32767 / −32768 and the driver gives the
    /// full-scale SI value (count × LSB), with the signs kept per axis.
    @Test(arguments: zip(MPU6050GyroRange.allCases, MPU6050AccelRange.allCases))
    func beyondTheRangeSaturates(_ gyro: MPU6050GyroRange, _ accel: MPU6050AccelRange) throws {
        let g = 9.80665
        let fsA = Double(accel.g) * g, fsG = Double(gyro.degreesPerSecond) * Double.pi / 180
        var truth = PhysicalTruth.restingLevel
        truth.specificForce = SIMD3(2.0 * fsA, -1.5 * fsA, 1.2 * fsA)
        truth.angularRate = SIMD3(-1.3 * fsG, 2.0 * fsG, -1.1 * fsG)
        let rig = try Self.start(MPU6050Configuration(gyroRange: gyro, accelRange: accel), truth: truth, seed: 9)
        let raw = try Self.freshSamples(rig, count: 3, step: 1_000_000)
        try #require(raw.count == 3)
        let aLSB = g / [16384.0, 8192, 4096, 2048][Int(accel.rawValue)]
        let gLSB = Double.pi / 180 / [131.0, 65.5, 32.8, 16.4][Int(gyro.rawValue)]
        for r in raw {
            #expect(r.accel == SIMD3<Int16>(32767, -32768, 32767))
            #expect(r.gyro == SIMD3<Int16>(-32768, 32767, -32768))
            let s = MPU6050Decoder.decode(r, scales: rig.mpu.scales)
            let wantA = SIMD3<Double>(32767 * aLSB, -32768 * aLSB, 32767 * aLSB)
            let wantG = SIMD3<Double>(-32768 * gLSB, 32767 * gLSB, -32768 * gLSB)
            for i in 0..<3 {
                #expect(abs(s.acceleration[i] - wantA[i]) <= 1e-9 * fsA, "accel[\(i)] \(s.acceleration[i]) want \(wantA[i])")
                #expect(abs(s.rotationRate[i] - wantG[i]) <= 1e-9 * fsG, "gyro[\(i)] \(s.rotationRate[i]) want \(wantG[i])")
            }
        }
    }

    // MARK: data-ready interrupt

    /// With `data_ready_interrupt` the INT pin gives one edge per sample
    /// (at the sample's own time, one period apart); readRawIfReady()
    /// acknowledges it (INT_STATUS read) and returns that sample. The pin is
    /// latched: after a plain read() (no INT_STATUS read) no edge comes until
    /// readInterruptStatus() acknowledges it.
    @Test(arguments: [RateSetting(dlpf: .hz44, hz: 200), RateSetting(dlpf: .hz184, hz: 1000), RateSetting(dlpf: .hz260, hz: 8000)])
    func dataReadyInterruptEdgesAtTheSampleRate(_ r: RateSetting) throws {
        let config = MPU6050Configuration(gyroRange: .dps2000, accelRange: .g16, dlpf: r.dlpf, sampleRateHz: r.hz,
                                          dataReadyInterrupt: true)
        let truth = Self.truth(gyro: .dps2000, accel: .g16)
        let rig = try Self.start(config, truth: truth, seed: 41)
        let line = try #require(rig.board.dataReadyLine(forAddress: 0x68))
        let wake = rig.clock.nowNanoseconds           // samples land at wake + k·period
        let period = UInt64(1e9 / r.hz)
        _ = try rig.mpu.readInterruptStatus()         // acknowledge whatever configure left pending
        var samples: [MPU6050Sample] = []
        var edges: [UInt64] = []
        for _ in 0..<8 {
            let edge = try #require(try line.waitForEdge(timeoutNanoseconds: 10 * period), "no INT edge")
            edges.append(edge)
            #expect(rig.clock.nowNanoseconds == edge)
            let raw = try #require(try rig.mpu.readRawIfReady(), "INT edge but DATA_RDY clear")
            #expect(raw.captureNanoseconds == edge)
            samples.append(MPU6050Decoder.decode(raw, scales: rig.mpu.scales))
        }
        for e in edges { #expect((e - wake) % period == 0, "edge \(e - wake) ns after wake is not on the \(period) ns grid") }
        for (a, b) in zip(edges.dropFirst(), edges) { #expect(a - b == period) }
        Self.checkSamples(samples, truth: truth, mounting: TestMounting.identity, tolerance: rig.model.roundTripTolerance,
                          temperature: truth.temperature, label: "INT \(r.testDescription)")
        // Latched: the next sample raises the pin; a read() that skips
        // INT_STATUS leaves it high, so no further edge comes.
        let raised = try #require(try line.waitForEdge(timeoutNanoseconds: 2 * period))
        #expect(raised == edges.last! + period)
        _ = try rig.mpu.read()
        let before = rig.clock.nowNanoseconds
        #expect(try line.waitForEdge(timeoutNanoseconds: 5 * period) == nil)
        #expect(rig.clock.nowNanoseconds == before + 5 * period)
        #expect(try rig.mpu.readInterruptStatus().dataReady)
        let next = try #require(try line.waitForEdge(timeoutNanoseconds: 2 * period))
        #expect((next - wake) % period == 0 && next > before + 5 * period && next <= before + 6 * period)
    }

    /// CLKSEL round trip: the model stretches the sample clock by the
    /// internal-oscillator error with CLKSEL 0 and by the PLL error with
    /// CLKSEL 1..3, so the INT edge spacing shows which source the driver's
    /// `clock_source` really selected.
    @Test(arguments: MPU6050ClockSource.allCases)
    func clockSourceSetsWhichClockErrorApplies(_ source: MPU6050ClockSource) throws {
        var imp = Self.noisy()
        imp.internalClockError = 0.02
        imp.pllClockError = 0.002
        let config = MPU6050Configuration(dlpf: .hz44, sampleRateHz: 100, clockSource: source, dataReadyInterrupt: true)
        let rig = try Self.start(config, truth: Self.truth(gyro: .dps500, accel: .g4), imperfections: imp, seed: 43)
        let line = try #require(rig.board.dataReadyLine(forAddress: 0x68))
        _ = try rig.mpu.readInterruptStatus()
        var edges: [UInt64] = []
        for _ in 0..<11 {
            edges.append(try #require(try line.waitForEdge(timeoutNanoseconds: nsPerSecond)))
            _ = try rig.mpu.readInterruptStatus()
        }
        let rate = 1e9 * Double(edges.count - 1) / Double(edges.last! - edges.first!)
        let error = source == .internal ? 0.02 : 0.002
        #expect(abs(rate / (config.achievedSampleRateHz * (1 + error)) - 1) < 1e-6,
                "\(source.key): \(rate) Hz, want \(config.achievedSampleRateHz) × (1 + \(error))")
        try rig.mpu.verifyConfiguration()
    }

    // MARK: self-test

    /// The driver's factory self-test against the model's self-test
    /// response (factory trim × (1 + selfTestResponseError)): a response 3 %
    /// off passes on every axis with that deviation, 30 % off fails; the
    /// configured ranges are restored; a clone refuses to run it.
    @Test(arguments: [0.03, -0.05, 0.3])
    func selfTestAgainstTheModelsResponse(_ responseError: Double) throws {
        var imp = MPU6050Imperfections.realistic
        imp.selfTestResponseError = responseError
        let config = MPU6050Configuration(gyroRange: .dps1000, accelRange: .g16, dlpf: .hz44, sampleRateHz: 200)
        var rig = try Self.start(config, truth: Self.truth(gyro: .dps250, accel: .g2), imperfections: imp, seed: 44)
        let report = try rig.mpu.runSelfTest()
        #expect(report.axes.count == 6)
        for a in report.axes {
            // Noise and rounding on the averaged difference: well under 1 %.
            #expect(abs(a.deviation - responseError) < 0.01, "\(a.name): deviation \(a.deviation), want \(responseError)")
        }
        #expect(report.passed == (abs(responseError) <= 0.14))
        try rig.mpu.verifyConfiguration()
        #expect(rig.mpu.scales.accel == MPU6050AccelRange.g16.metersPerSecondSquaredPerLSB)

        var clone = try Self.start(config, truth: Self.truth(gyro: .dps250, accel: .g2), imperfections: imp, identity: 0x70, seed: 45)
        let e = #expect(throws: DriverError.self) { _ = try clone.mpu.runSelfTest() }
        guard case .unsupportedConfiguration(.mpu6050, _)? = e else {
            Issue.record("expected unsupportedConfiguration, got \(String(describing: e))"); return
        }
    }

    // MARK: FIFO

    static func fifoConfig(_ dlpf: MPU6050DLPF, _ hz: Double, gyro: MPU6050GyroRange = .dps1000,
                           accel: MPU6050AccelRange = .g8) -> MPU6050Configuration {
        MPU6050Configuration(gyroRange: gyro, accelRange: accel, dlpf: dlpf, sampleRateHz: hz, fifo: true)
    }

    /// Drained records match the truth and arrive at the sample rate; their
    /// capture times are one nominal period apart and at most one period
    /// after the sample really landed.
    @Test(arguments: [RateSetting(dlpf: .hz184, hz: 1000), RateSetting(dlpf: .hz44, hz: 200),
                      RateSetting(dlpf: .hz44, hz: 100), RateSetting(dlpf: .hz5, hz: 50)])
    func fifoDrainsMatchTheTruthAtTheRate(_ r: RateSetting) throws {
        let truth = Self.truth(gyro: .dps1000, accel: .g8)
        var rig = try Self.start(Self.fifoConfig(r.dlpf, r.hz), truth: truth, seed: 21)
        let period = UInt64(1e9 / r.hz)
        let fifoStart = rig.clock.nowNanoseconds   // FIFO reset at the end of configure; samples land at +k·period
        var all: [MPU6050Sample] = []
        var drainedAt: [(UInt64, Int)] = []
        // Drain at an awkward interval (7.3 periods) for 6 rounds.
        for round in 1...6 {
            rig.clock.sleep(untilNanoseconds: fifoStart + UInt64(Double(period) * 7.3 * Double(round)))
            let batch = try rig.mpu.readFIFO()
            let n = batch.count
            drainedAt.append((rig.clock.nowNanoseconds, n))
            // Capture times (readFIFO's stamping): one nominal period apart, newest at the drain time.
            for (a, b) in zip(batch.dropFirst(), batch) { #expect(a.captureNanoseconds - b.captureNanoseconds == period) }
            #expect(batch.last?.captureNanoseconds == rig.clock.nowNanoseconds)
            all += batch
        }
        // Arrival at the sample rate: after each drain the total equals the
        // number of samples that fell due since the FIFO reset.
        var total = 0
        for (t, n) in drainedAt {
            total += n
            #expect(total == Int((t - fifoStart) / period), "\(total) records by \(t - fifoStart) ns at \(r.hz) Hz")
        }
        // Capture time vs the true sample time (fifoStart + k·period): late by less than one period.
        for (k, s) in all.enumerated() {
            let landed = fifoStart + UInt64(k + 1) * period
            #expect(s.captureNanoseconds >= landed && s.captureNanoseconds - landed < period,
                    "record \(k) stamped \(s.captureNanoseconds), landed \(landed)")
        }
        Self.checkSamples(all, truth: truth, mounting: TestMounting.identity, tolerance: rig.model.roundTripTolerance,
                          temperature: truth.temperature, label: "FIFO \(r.testDescription)")
    }

    /// Partial drains (maxRecords) leave records for the next drain; every
    /// record is still stamped at or after the moment it landed and less
    /// than one period later, and stamps never go backwards across drains.
    @Test func fifoPartialDrainsKeepPlausibleTimes() throws {
        let truth = Self.truth(gyro: .dps1000, accel: .g8)
        var rig = try Self.start(Self.fifoConfig(.hz44, 100), truth: truth, seed: 22)
        let period: UInt64 = 10_000_000
        let fifoStart = rig.clock.nowNanoseconds
        var all: [MPU6050Sample] = []
        for (at, maxRecords) in [(10.5, 3), (12.2, 4), (13.9, 100), (20.05, 2), (20.5, 100)] {
            rig.clock.sleep(untilNanoseconds: fifoStart + UInt64(at * Double(period)))
            all += try rig.mpu.readFIFO(maxRecords: maxRecords)
        }
        #expect(all.count == 20)
        for (k, s) in all.enumerated() {
            let landed = fifoStart + UInt64(k + 1) * period
            #expect(s.captureNanoseconds >= landed && s.captureNanoseconds - landed < period,
                    "record \(k) stamped \(Double(s.captureNanoseconds - fifoStart) / Double(period)) periods, landed at \(k + 1)")
        }
        for (a, b) in zip(all.dropFirst(), all) { #expect(a.captureNanoseconds > b.captureNanoseconds) }
        Self.checkSamples(all, truth: truth, mounting: TestMounting.identity, tolerance: rig.model.roundTripTolerance,
                          temperature: truth.temperature, label: "partial drains")
    }

    /// Letting the FIFO fill past its size on the virtual clock reaches the
    /// driver as `fifoOverflow`; the FIFO is reset and the next drain is
    /// aligned and correct. Genuine part (1024 bytes) and a 6500 core (512).
    @Test(arguments: [(UInt8(0x68), 1024), (0x70, 512)])
    func fifoOverflowIsReportedAndRecovered(_ whoAmI: UInt8, _ fifoBytes: Int) throws {
        let truth = Self.truth(gyro: .dps1000, accel: .g8)
        var rig = try Self.start(Self.fifoConfig(.hz184, 1000), truth: truth, identity: whoAmI, seed: 5)
        #expect(rig.mpu.variant.fifoBytes == fifoBytes)
        // 1 kHz × 14 bytes: the FIFO is full after fifoBytes/14 ms; wait 3× that.
        rig.clock.sleep(nanoseconds: UInt64(3 * fifoBytes / 14) * 1_000_000)
        let e = #expect(throws: DriverError.self) { try rig.mpu.drainFIFO { _ in } }
        guard case let .fifoOverflow(address, bytes, reason)? = e else {
            Issue.record("expected fifoOverflow, got \(String(describing: e))"); return
        }
        #expect(address == 0x68)
        #expect(bytes == fifoBytes)
        #expect(reason.contains("overflowed"), "\(reason)")
        #expect(rig.mpu.fifoOverflowCount == 1)
        // The next drain works: 20 aligned records of the truth.
        rig.clock.sleep(nanoseconds: 20_500_000)
        let samples = try rig.mpu.readFIFO()
        #expect(samples.count == 20)
        Self.checkSamples(samples, truth: truth, mounting: TestMounting.identity, tolerance: rig.model.roundTripTolerance,
                          temperature: truth.temperature, label: "after overflow, WHO_AM_I \(hex(whoAmI))")
        #expect(rig.mpu.fifoOverflowCount == 1)
    }

    /// With `fifo: true` the driver enables FIFO_OFLOW_EN (INT_ENABLE bit 4,
    /// RM §4.15: "enables a FIFO buffer overflow to generate an
    /// interrupt"), and docs/simulators.md says the INT pin is gated by
    /// INT_ENABLE: the overflow reaches the INT line at the sample that does
    /// not fit, and the driver through INT_STATUS.
    @Test func fifoOverflowInterruptOnTheINTLine() throws {
        let truth = Self.truth(gyro: .dps1000, accel: .g8)
        var rig = try Self.start(Self.fifoConfig(.hz184, 1000), truth: truth, seed: 23)
        let line = try #require(rig.board.dataReadyLine(forAddress: 0x68))
        let start = rig.clock.nowNanoseconds
        let edge = try line.waitForEdge(timeoutNanoseconds: 200_000_000)
        // 14-byte records at 1 kHz overflow 1024 bytes with the 74th sample.
        #expect(edge == start + 74_000_000, "INT edge \(edge.map { "\(Double($0 - start) / 1e6) ms" } ?? "none") after start")
        let e = #expect(throws: DriverError.self) { try rig.mpu.drainFIFO { _ in } }
        guard case .fifoOverflow(0x68, _, let reason)? = e else {
            Issue.record("expected fifoOverflow, got \(String(describing: e))"); return
        }
        #expect(reason.contains("overflowed"))
    }

    /// The driver resets before the hardware overflows: a count within three
    /// records of the size is refused as "about to overflow" (documented in
    /// docs/drivers.md), one record less is drained normally.
    @Test func fifoNearlyFullIsResetBeforeItOverflows() throws {
        let truth = Self.truth(gyro: .dps1000, accel: .g8)
        var rig = try Self.start(Self.fifoConfig(.hz184, 1000), truth: truth, seed: 6)
        let t0 = rig.clock.nowNanoseconds
        // 70 records = 980 bytes < 1024 − 42: drained.
        rig.clock.sleep(untilNanoseconds: t0 + 70_500_000)
        #expect(try rig.mpu.readFIFO().count == 70)
        // 71 records = 994 bytes ≥ 982: reset and reported.
        rig.clock.sleep(untilNanoseconds: t0 + 141_500_000)
        let e = #expect(throws: DriverError.self) { _ = try rig.mpu.readFIFO() }
        guard case let .fifoOverflow(_, bytes, reason)? = e else {
            Issue.record("expected fifoOverflow, got \(String(describing: e))"); return
        }
        #expect(bytes == 994)
        #expect(reason.contains("about to overflow"), "\(reason)")
    }
}
