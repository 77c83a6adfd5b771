// Round trips truth → BMP280Model registers → real BMP280 driver → Pa / °C,
// through both the integer compensation (what read()/measure() return) and
// the double compensation, for every oversampling preset, IIR off and on,
// normal and forced mode, every standby setting; forced-mode timing; the
// skipped value; BME280 and other identities.
import Testing
import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeSim
#if canImport(Glibc)
import Glibc
#endif

/// Pressure that climbs linearly with time, so a reading tells when its
/// conversion was taken.
final class PressureRampTruth: TruthSource, @unchecked Sendable {
    let base: PhysicalTruth, t0: UInt64, pascalsPerSecond: Double
    init(base: PhysicalTruth, t0: UInt64, pascalsPerSecond: Double) {
        self.base = base; self.t0 = t0; self.pascalsPerSecond = pascalsPerSecond
    }
    func pressure(at t: UInt64) -> Double {
        base.pressure + pascalsPerSecond * (Double(t) - Double(t0)) / 1e9
    }
    func truth(atNanoseconds t: UInt64, body: SimBody) -> PhysicalTruth {
        var v = base; v.pressure = pressure(at: t); return v
    }
}

@Suite struct DriverRoundTripBMP280Tests {
    /// Noise on (DS Tables 8/9), quantisation to the oversampling's
    /// resolution on, offsets and timing errors off.
    static let noisy = BMP280Imperfections(noiseScale: 1, pressureOffset: 0, pressureTempco: 0, temperatureOffset: 0,
                                           conversionTimeScale: 1, standbyError: 0, measuringFlagDelay: 0.0001,
                                           quantization: true)

    /// Extra allowance of the integer formulas over the double one
    /// (docs/simulators.md: int64 pressure ~1 Pa; integer temperature 0.01 °C).
    static let intPressureExtra = 1.0
    static let intTemperatureExtra = 0.01

    struct Rig {
        var clock: VirtualClock
        var board: SimulatedBoard
        var bmp: BMP280<SimulatedBus>
        var model: BMP280Model
    }

    static func start(_ config: BMP280Configuration, truth: any TruthSource, imperfections: BMP280Imperfections = noisy,
                      identity: UInt8? = nil, seed: UInt64 = 1, clock: VirtualClock? = nil) throws -> Rig {
        let clock = clock ?? VirtualClock(startNanoseconds: 7 * nsPerSecond)
        let board = try SimulatedBoard(
            chips: [SimulatedChipSpec(kind: "bmp280", address: 0x76, identity: identity, imperfections: .bmp280(imperfections))],
            truth: truth, clock: clock, seed: seed)
        var bmp = BMP280(bus: board.bus, address: 0x76, clock: clock)
        try bmp.start(config)
        let model = try #require(board.device(at: 0x76) as? BMP280Model)
        return Rig(clock: clock, board: board, bmp: bmp, model: model)
    }

    // MARK: presets

    /// DS Table 7's oversampling presets (pressure, temperature).
    struct Preset: Sendable, CustomTestStringConvertible {
        var name: String
        var pressure: BMP280Oversampling
        var temperature: BMP280Oversampling
        var testDescription: String { name }
    }
    static let presets = [
        Preset(name: "ultra low power", pressure: .x1, temperature: .x1),
        Preset(name: "low power", pressure: .x2, temperature: .x1),
        Preset(name: "standard resolution", pressure: .x4, temperature: .x1),
        Preset(name: "high resolution", pressure: .x8, temperature: .x1),
        Preset(name: "ultra high resolution", pressure: .x16, temperature: .x2),
    ]

    struct Point: Sendable, CustomTestStringConvertible {
        var pressure: Double
        var temperature: Double
        var testDescription: String { "\(pressure) Pa / \(temperature) °C" }
        var truth: PhysicalTruth {
            var t = PhysicalTruth.restingLevel; t.pressure = pressure; t.temperature = temperature; return t
        }
    }
    static let points = [Point(pressure: 95_000, temperature: 12.3), Point(pressure: 101_325, temperature: 25),
                         Point(pressure: 70_000, temperature: -5)]

    struct Case: Sendable, CustomTestStringConvertible {
        var preset: Preset
        var filter: BMP280Filter
        var mode: BMP280Mode
        var point: Point
        var testDescription: String {
            "\(preset.name), IIR \(filter.coefficient), \(mode.key), \(point.testDescription)"
        }
        var configuration: BMP280Configuration {
            BMP280Configuration(mode: mode, pressureOversampling: preset.pressure,
                                temperatureOversampling: preset.temperature, filter: filter, standby: .ms0_5)
        }
    }
    static let cases: [Case] = presets.flatMap { p in
        [BMP280Filter.off, .c4, .c16].flatMap { f in
            [BMP280Mode.normal, .forced].flatMap { m in points.map { Case(preset: p, filter: f, mode: m, point: $0) } }
        }
    }

    /// Reads one sample the way the mode wants: normal mode waits one cycle
    /// and reads; forced mode runs measure(). Returns the driver's integer
    /// sample and the same raw values through the double formulas.
    static func next(_ rig: Rig) throws -> (int: BMP280Sample, double: (celsius: Double, pascals: Double?)) {
        let c = rig.bmp.configuration
        let s: BMP280Sample
        if c.mode == .normal {
            rig.clock.sleep(milliseconds: c.measurementTime.typical + c.standby.milliseconds)
            s = try rig.bmp.read()
        } else {
            s = try rig.bmp.measure()
        }
        let raw = try rig.bmp.readRaw()   // the same conversion: nothing new is started in sleep / within the cycle
        let cal = try #require(rig.bmp.calibration)
        let t = BMP280Compensation.temperatureDouble(adcT: raw.adcT, cal)
        let p = BMP280Compensation.pressureDouble(adcP: raw.adcP, tFine: t.tFine, cal)
        return (s, (t.celsius, p))
    }

    @Test(arguments: cases)
    func everyPresetFilterAndMode(_ c: Case) throws {
        let seed = UInt64(c.preset.pressure.rawValue) << 8 | UInt64(c.filter.rawValue) << 4 | UInt64(c.mode.rawValue)
            ^ UInt64(c.point.pressure)
        let rig = try Self.start(c.configuration, truth: ConstantTruth(c.point.truth), seed: seed)
        // Let the IIR forget its seed (the tolerance is the steady state's):
        // the seed's weight ((c−1)/c)^n drops below 0.2 % after 6c samples.
        let warm = c.filter == .off ? 1 : 6 * c.filter.coefficient
        for _ in 0..<warm { _ = try Self.next(rig) }
        var tallyInt = ToleranceTally("\(c.testDescription) integer")
        var tallyDouble = ToleranceTally("\(c.testDescription) double")
        for i in 0..<8 {
            let (s, d) = try Self.next(rig)
            let tol = rig.model.roundTripTolerance
            let p = try #require(s.pressurePascals)
            tallyInt.check("#\(i) P", got: p, want: c.point.pressure, tolerance: tol.pressure + Self.intPressureExtra)
            tallyInt.check("#\(i) T", got: s.temperatureCelsius, want: c.point.temperature,
                           tolerance: tol.temperature + Self.intTemperatureExtra)
            tallyDouble.check("#\(i) P", got: try #require(d.pascals), want: c.point.pressure, tolerance: tol.pressure)
            tallyDouble.check("#\(i) T", got: d.celsius, want: c.point.temperature, tolerance: tol.temperature)
        }
        tallyInt.verify()
        tallyDouble.verify()
    }

    // MARK: standby / normal-mode rate

    /// Every standby setting: with a pressure ramp the conversions are seen
    /// changing at 1000 / (t_typ + t_sb) Hz (the driver's `normalModeRateHz`),
    /// and each reading is the truth at its conversion's end.
    @Test(arguments: BMP280Standby.allCases)
    func normalModeRateForEveryStandby(_ standby: BMP280Standby) throws {
        let clock = VirtualClock(startNanoseconds: 7 * nsPerSecond)
        let config = BMP280Configuration(mode: .normal, pressureOversampling: .x4, temperatureOversampling: .x1,
                                         filter: .off, standby: standby)
        let cycleMs = config.measurementTime.typical + standby.milliseconds
        // ~40 Pa per cycle: far more than noise + a resolution step, so every conversion differs.
        let ramp = PressureRampTruth(base: Point(pressure: 90_000, temperature: 18).truth, t0: clock.nowNanoseconds,
                                     pascalsPerSecond: 40 / (cycleMs / 1000))
        let rig = try Self.start(config, truth: ramp, seed: UInt64(standby.rawValue) + 40, clock: clock)
        let step = UInt64(cycleMs * 1e6 / 40)
        var changes: [(t: UInt64, sample: BMP280Sample)] = []
        var last: BMP280RawSample?
        var polls = 0
        while changes.count < 6, polls < 2000 {
            clock.advance(nanoseconds: step)
            polls += 1
            let raw = try rig.bmp.readRaw()
            if raw.adcT == 0x80000 { continue }   // no conversion yet
            if let l = last, l.adcP == raw.adcP, l.adcT == raw.adcT { continue }
            last = raw
            changes.append((clock.nowNanoseconds, try rig.bmp.read()))
        }
        try #require(changes.count == 6)
        let cycle = cycleMs * 1e6
        let gaps = zip(changes.dropFirst(), changes).map { Double($0.t - $1.t) }
        for g in gaps { #expect(abs(g - cycle) <= Double(step) + 1, "gap \(g) ns, cycle \(cycle) ns") }
        let mean = gaps.reduce(0, +) / Double(gaps.count)
        #expect(abs(1e9 / mean - config.normalModeRateHz) <= config.normalModeRateHz * Double(step) / cycle / Double(gaps.count) + 1e-9,
                "rate \(1e9 / mean) Hz, driver says \(config.normalModeRateHz) Hz")
        // Each value is the truth at its conversion's end: seen within one
        // poll step after it, so the pressure is between p(t − step) and p(t).
        var tally = ToleranceTally("standby \(standby.milliseconds) ms")
        let tol = rig.model.roundTripTolerance
        for (t, s) in changes {
            let want = ramp.pressure(at: t - step / 2)
            let slack = ramp.pascalsPerSecond * Double(step) / 2e9
            tally.check("P at \(t)", got: try #require(s.pressurePascals), want: want,
                        tolerance: tol.pressure + Self.intPressureExtra + slack)
        }
        tally.verify()
    }

    // MARK: forced-mode timing

    /// measure() writes the forced mode, sleeps exactly the data sheet's
    /// maximum measurement time on the clock, and reads: the capture time is
    /// t_max after the call, for every oversampling combination.
    @Test(arguments: presets)
    func forcedMeasureTakesTheMaximumTime(_ p: Preset) throws {
        let config = BMP280Configuration(mode: .forced, pressureOversampling: p.pressure,
                                         temperatureOversampling: p.temperature, filter: .off)
        let point = Point(pressure: 95_000, temperature: 12.3)
        let rig = try Self.start(config, truth: ConstantTruth(point.truth), seed: 11)
        let t = p.temperature.factor, q = p.pressure.factor
        let tMaxMs = 1.25 + 2.3 * Double(t) + 2.3 * Double(q) + 0.575     // DS t_max, written here independently
        #expect(abs(config.measurementTime.maximum - tMaxMs) < 1e-9)
        for _ in 0..<3 {
            let before = rig.clock.nowNanoseconds
            let s = try rig.bmp.measure()
            let took = rig.clock.nowNanoseconds - before
            #expect(abs(Double(took) - tMaxMs * 1e6) <= 1, "measure() took \(took) ns, t_max \(tMaxMs) ms")
            #expect(s.captureNanoseconds == rig.clock.nowNanoseconds)
            // The model's conversion (t_typ) ended before the driver looked.
            #expect(Double(rig.model.measurementNanoseconds) <= Double(took))
            // The mode bits fell back to sleep; the oversampling still verifies.
            try rig.bmp.verifyConfiguration()
        }
    }

    /// A part at the slow end (t_meas × 1.15 ≈ the DS t_max) still completes
    /// in time; one beyond t_max (× 1.2) is reported as a timeout, not read
    /// as a stale value.
    @Test(arguments: [(1.15, false), (1.2, true)])
    func forcedMeasureOnASlowPart(_ scale: Double, _ timesOut: Bool) throws {
        var imp = Self.noisy
        imp.conversionTimeScale = scale
        let config = BMP280Configuration(mode: .forced, pressureOversampling: .x16, temperatureOversampling: .x2, filter: .off)
        let point = Point(pressure: 101_325, temperature: 25)
        let rig = try Self.start(config, truth: ConstantTruth(point.truth), imperfections: imp, seed: 12)
        if timesOut {
            let e = #expect(throws: DriverError.self) { _ = try rig.bmp.measure() }
            guard case let .timeout(chip, address, _, ms)? = e else {
                Issue.record("expected timeout, got \(String(describing: e))"); return
            }
            #expect(chip == .bmp280 && address == 0x76 && abs(ms - config.measurementTime.maximum) < 1e-9)
        } else {
            let s = try rig.bmp.measure()
            let tol = rig.model.roundTripTolerance
            #expect(abs(try #require(s.pressurePascals) - point.pressure) <= 5 / 3 * (tol.pressure + Self.intPressureExtra))
        }
    }

    // MARK: skipped values

    /// Before the first conversion the data registers hold 0x80000: the
    /// driver says skippedMeasurement, never a number. Normal mode read
    /// right after start, and a forced-mode part read without measure().
    @Test(arguments: [BMP280Mode.normal, .forced])
    func skippedBeforeTheFirstConversion(_ mode: BMP280Mode) throws {
        let config = BMP280Configuration(mode: mode)
        let rig = try Self.start(config, truth: ConstantTruth(Point(pressure: 95_000, temperature: 12.3).truth), seed: 13)
        let raw = try rig.bmp.readRaw()
        #expect(raw.adcP == 0x80000 && raw.adcT == 0x80000)
        let e = #expect(throws: DriverError.self) { _ = try rig.bmp.read() }
        #expect(e == .decode(.skippedMeasurement(chip: .bmp280, channel: "temperature")))
        // After one conversion time it reads.
        if mode == .normal {
            rig.clock.sleep(milliseconds: config.measurementTime.typical)
            #expect(try rig.bmp.read().pressurePascals != nil)
        } else {
            #expect(try rig.bmp.measure().pressurePascals != nil)
        }
    }

    /// Pressure oversampling 0: the chip leaves 0x80000 in the pressure
    /// registers on purpose; the driver reports the temperature and no pressure.
    @Test(arguments: [BMP280Mode.normal, .forced])
    func pressureSkippedOnPurpose(_ mode: BMP280Mode) throws {
        let config = BMP280Configuration(mode: mode, pressureOversampling: .skipped, temperatureOversampling: .x4, filter: .off)
        let point = Point(pressure: 70_000, temperature: -5)
        let rig = try Self.start(config, truth: ConstantTruth(point.truth), seed: 14)
        let (s, _) = try Self.next(rig)
        #expect(s.pressurePascals == nil)
        #expect(try rig.bmp.readRaw().adcP == 0x80000)
        let tol = rig.model.roundTripTolerance
        #expect(abs(s.temperatureCelsius - point.temperature) <= 5 / 3 * (tol.temperature + Self.intTemperatureExtra))
    }

    // MARK: reconfiguration and calibration

    /// Reconfiguring a part that is running in normal mode: the driver goes
    /// through sleep, so the chip accepts the new config (it ignores config
    /// writes in normal mode) and verifyConfiguration() passes.
    @Test func reconfigureWhileInNormalMode() throws {
        let point = Point(pressure: 95_000, temperature: 12.3)
        var rig = try Self.start(BMP280Configuration(mode: .normal, pressureOversampling: .x1, temperatureOversampling: .x1,
                                                     filter: .off, standby: .ms0_5),
                                 truth: ConstantTruth(point.truth), seed: 17)
        rig.clock.sleep(milliseconds: 50)
        _ = try rig.bmp.read()
        let second = BMP280Configuration(mode: .normal, pressureOversampling: .x16, temperatureOversampling: .x2,
                                         filter: .c16, standby: .ms62_5)
        try rig.bmp.configure(second)
        try rig.bmp.verifyConfiguration()
        for _ in 0..<100 { _ = try Self.next(rig) }
        var tally = ToleranceTally("after reconfiguration")
        for i in 0..<6 {
            let (s, _) = try Self.next(rig)
            let tol = rig.model.roundTripTolerance
            tally.check("#\(i) P", got: try #require(s.pressurePascals), want: point.pressure,
                        tolerance: tol.pressure + Self.intPressureExtra)
        }
        tally.verify()
    }

    /// A calibration other than the data sheet example (values of the kind
    /// real parts carry): the driver reads the same words and the round trip
    /// holds through both formulas.
    @Test(arguments: points)
    func anotherCalibration(_ point: Point) throws {
        let cal = EdgeSim.BMP280Calibration(T1: 28009, T2: 25654, T3: 50, P1: 39145, P2: -10750, P3: 3024,
                                            P4: 5667, P5: -120, P6: -7, P7: 15500, P8: -14600, P9: 6000)
        let clock = VirtualClock(startNanoseconds: nsPerSecond)
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: "bmp280", address: 0x77, calibration: cal,
                                                                 imperfections: .bmp280(Self.noisy))],
                                       truth: ConstantTruth(point.truth), clock: clock, seed: 18)
        var bmp = BMP280(bus: board.bus, address: 0x77, clock: clock)
        try bmp.start(BMP280Configuration(mode: .forced, pressureOversampling: .x8, temperatureOversampling: .x1, filter: .off))
        let got = try #require(bmp.calibration)
        #expect(got.t1 == cal.T1 && got.t2 == cal.T2 && got.t3 == cal.T3 && got.p1 == cal.P1 && got.p2 == cal.P2
                && got.p3 == cal.P3 && got.p4 == cal.P4 && got.p5 == cal.P5 && got.p6 == cal.P6 && got.p7 == cal.P7
                && got.p8 == cal.P8 && got.p9 == cal.P9)
        let model = try #require(board.device(at: 0x77) as? BMP280Model)
        let rig = Rig(clock: clock, board: board, bmp: bmp, model: model)
        var tally = ToleranceTally("calibration 2, \(point.testDescription)")
        for i in 0..<8 {
            let (s, d) = try Self.next(rig)
            let tol = model.roundTripTolerance
            tally.check("#\(i) P int", got: try #require(s.pressurePascals), want: point.pressure,
                        tolerance: tol.pressure + Self.intPressureExtra)
            tally.check("#\(i) T int", got: s.temperatureCelsius, want: point.temperature,
                        tolerance: tol.temperature + Self.intTemperatureExtra)
            tally.check("#\(i) P double", got: try #require(d.pascals), want: point.pressure, tolerance: tol.pressure)
            tally.check("#\(i) T double", got: d.celsius, want: point.temperature, tolerance: tol.temperature)
        }
        tally.verify()
    }

    /// The corners of the DS operating range (300..1100 hPa, −40..85 °C),
    /// where the integer formulas' intermediates are largest, with the data
    /// sheet calibration and a second one, every pressure oversampling.
    @Test(arguments: [Point(pressure: 30_000, temperature: -40), Point(pressure: 30_000, temperature: 85),
                      Point(pressure: 110_000, temperature: -40), Point(pressure: 110_000, temperature: 85)],
          [false, true])
    func operatingRangeCorners(_ point: Point, _ secondCalibration: Bool) throws {
        let clock = VirtualClock(startNanoseconds: nsPerSecond)
        let cal: EdgeSim.BMP280Calibration? = secondCalibration
            ? EdgeSim.BMP280Calibration(T1: 28009, T2: 25654, T3: 50, P1: 39145, P2: -10750, P3: 3024,
                                        P4: 5667, P5: -120, P6: -7, P7: 15500, P8: -14600, P9: 6000)
            : nil
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: "bmp280", address: 0x76, calibration: cal,
                                                                 imperfections: .bmp280(Self.noisy))],
                                       truth: ConstantTruth(point.truth), clock: clock, seed: 19)
        var bmp = BMP280(bus: board.bus, address: 0x76, clock: clock)
        let model = try #require(board.device(at: 0x76) as? BMP280Model)
        var tally = ToleranceTally("corner \(point.testDescription), calibration \(secondCalibration ? 2 : 1)")
        for p in BMP280Oversampling.allCases where p != .skipped {
            try bmp.start(BMP280Configuration(mode: .forced, pressureOversampling: p, temperatureOversampling: .x2, filter: .off))
            let rig = Rig(clock: clock, board: board, bmp: bmp, model: model)
            for i in 0..<3 {
                let (s, d) = try Self.next(rig)
                let tol = model.roundTripTolerance
                tally.check("×\(p.factor) #\(i) P int", got: try #require(s.pressurePascals), want: point.pressure,
                            tolerance: tol.pressure + Self.intPressureExtra)
                tally.check("×\(p.factor) #\(i) T int", got: s.temperatureCelsius, want: point.temperature,
                            tolerance: tol.temperature + Self.intTemperatureExtra)
                tally.check("×\(p.factor) #\(i) P double", got: try #require(d.pascals), want: point.pressure,
                            tolerance: tol.pressure)
                tally.check("×\(p.factor) #\(i) T double", got: d.celsius, want: point.temperature, tolerance: tol.temperature)
            }
        }
        tally.verify()
    }

    // MARK: identities

    /// A BME280 (id 0x60) is accepted with its note, runs the round trip,
    /// and refuses standby 2000/4000 ms (its codes mean 10/20 ms).
    @Test func bme280Identity() throws {
        let point = Point(pressure: 95_000, temperature: 12.3)
        let config = BMP280Configuration(mode: .normal, pressureOversampling: .x16, temperatureOversampling: .x2,
                                         filter: .c4, standby: .ms1000)
        let rig = try Self.start(config, truth: ConstantTruth(point.truth), identity: 0x60, seed: 15)
        #expect(rig.bmp.variant.chipID == 0x60)
        #expect(rig.bmp.variant.isBME280)
        #expect(rig.bmp.variant.note?.contains("BME280") == true)
        var tally = ToleranceTally("BME280")
        for _ in 0..<30 { _ = try Self.next(rig) }
        for i in 0..<6 {
            let (s, _) = try Self.next(rig)
            let tol = rig.model.roundTripTolerance
            tally.check("#\(i) P", got: try #require(s.pressurePascals), want: point.pressure,
                        tolerance: tol.pressure + Self.intPressureExtra)
            tally.check("#\(i) T", got: s.temperatureCelsius, want: point.temperature,
                        tolerance: tol.temperature + Self.intTemperatureExtra)
        }
        tally.verify()
        var bmp = rig.bmp
        for standby in [BMP280Standby.ms2000, .ms4000] {
            let e = #expect(throws: DriverError.self) {
                try bmp.configure(BMP280Configuration(mode: .normal, standby: standby))
            }
            guard case .unsupportedConfiguration(.bmp280, _)? = e else {
                Issue.record("expected unsupportedConfiguration, got \(String(describing: e))"); continue
            }
        }
        try bmp.verifyConfiguration()   // the refused configure wrote nothing
    }

    /// Engineering samples (0x56/0x57) are accepted with a note; a BMP180
    /// (0x55) and a BME680 (0x61) are wrongChip naming the part.
    @Test(arguments: [(UInt8(0x56), true), (0x57, true), (0x55, false), (0x61, false)])
    func otherIdentities(_ id: UInt8, _ accepted: Bool) throws {
        let clock = VirtualClock(startNanoseconds: nsPerSecond)
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: "bmp280", address: 0x76, identity: id,
                                                                 imperfections: .bmp280(Self.noisy))],
                                       truth: ConstantTruth(), clock: clock, seed: 16)
        var bmp = BMP280(bus: board.bus, address: 0x76, clock: clock)
        if accepted {
            try bmp.start(BMP280Configuration(mode: .forced, filter: .off))
            #expect(bmp.variant.chipID == id && bmp.variant.note != nil)
            let s = try bmp.measure()
            #expect(abs(try #require(s.pressurePascals) - 101_325) < 10)
        } else {
            let e = #expect(throws: DriverError.self) { try bmp.identify() }
            guard case .wrongChip(.bmp280, 0x76, 0xD0, let found, let name)? = e else {
                Issue.record("expected wrongChip, got \(String(describing: e))"); return
            }
            #expect(found == id && name != nil)
        }
    }
}
