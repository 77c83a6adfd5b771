// Round trips truth → MS5837Model (command protocol) → MS5837 driver → Pa /
// °C at every OSR; the datasheet's example through the model; the command
// protocol's documented behaviour (ADC read before the conversion ends or
// twice gives 0; a read during a conversion spoils its result); the PROM
// CRC written by the model and checked by the driver (two implementations).
import Testing
import EdgeBus
import EdgeChips
import EdgeSim

@Suite struct DriverRoundTripMS5837Tests {
    struct Rig {
        var clock: VirtualClock
        var board: SimulatedBoard
        var truth: ConstantTruth
        var model: MS5837Model
    }

    static func rig(pressure: Double = 101_325, temperature: Double = 20,
                    imperfections: MS5837Imperfections = .ideal) throws -> Rig {
        let clock = VirtualClock(startNanoseconds: 5 * 1_000_000_000)
        let t = ConstantTruth(truth(pressure: pressure, temperature: temperature))
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: "ms5837", address: 0x76, imperfections: .ms5837(imperfections))],
                                       truth: t, clock: clock, seed: 3)
        return Rig(clock: clock, board: board, truth: t, model: try #require(board.ms5837(at: 0x76)))
    }

    /// Every OSR pair, pressures across the 0..30 bar range and temperatures
    /// across both second-order branches: the driver returns the truth within
    /// the model's stated tolerance (20 Pa, 0.02 °C).
    @Test(arguments: MS5837Oversampling.allCases)
    func roundTripAtEveryOversampling(_ osr: MS5837Oversampling) throws {
        for (p, t) in [(101_325.0, 20.0), (300_000, 5), (2_500_000, 28), (50_000, -18), (1_000_000, 40)] {
            let r = try Self.rig(pressure: p, temperature: t)
            var d = MS5837(bus: r.board.bus, clock: r.clock, pressureOversampling: osr, temperatureOversampling: osr)
            #expect(try d.start() == .ms5837_30ba)
            let s = try d.measure()
            #expect(abs(s.pressurePascals - p) <= 20, "OSR \(osr.rawValue) at \(p) Pa, \(t) °C: got \(s.pressurePascals)")
            #expect(abs(s.temperatureCelsius - t) <= 0.02, "OSR \(osr.rawValue) at \(t) °C: got \(s.temperatureCelsius)")
        }
    }

    /// The datasheet's example state (19.81 °C, 3999.8 mbar) through the
    /// model and back through the integer formula gives the datasheet's
    /// TEMP and P.
    @Test func datasheetExampleThroughTheModel() throws {
        let r = try Self.rig(pressure: 399_980, temperature: 19.81)
        var d = MS5837(bus: r.board.bus, clock: r.clock)
        try d.start()
        let raw = try d.readRaw()
        let s = try MS5837Compensation.steps(d1: raw.d1, d2: raw.d2, try #require(d.calibration))
        #expect(s.temp == 1981)
        #expect(abs(s.p - 39998) <= 1)
        #expect(abs(Int(raw.d2) - 6_815_414) < 330)   // one TEMP count is 2^23/C6 ≈ 321 D2 counts
    }

    /// "If the ADC read command is sent during conversion the result will be
    /// 0, the conversion will not stop and the final result will be wrong";
    /// "if the conversion is not executed before the ADC read command, or
    /// the ADC read command is repeated, it will give 0".
    @Test func adcReadBeforeConversionEndsReadsZero() throws {
        let r = try Self.rig(pressure: 200_000, temperature: 15)
        let bus = r.board.bus
        func adc() throws -> UInt32 {
            let b = try bus.read(0x76, 0x00, 3)
            return UInt32(b[0]) << 16 | UInt32(b[1]) << 8 | UInt32(b[2])
        }
        try bus.write(0x76, [0x1E])
        #expect(try adc() == 0)                           // no conversion yet
        try bus.write(0x76, [0x48])                       // D1, OSR 4096 (typ 8.22 ms)
        r.clock.sleep(milliseconds: 8.0)
        #expect(try adc() == 0)                           // still converting
        r.clock.sleep(milliseconds: 1.1)
        let spoiled = try adc()
        #expect(spoiled != 0)
        #expect(try adc() == 0)                           // repeated read
        try bus.write(0x76, [0x48])
        r.clock.sleep(milliseconds: 9.04)
        let good = try adc()
        #expect(good != 0 && good != spoiled)              // the spoiled result was wrong
        #expect(r.model.zeroReads == 3)
    }

    /// The driver's wait is the datasheet's maximum: a chip converting at the
    /// typical time is always done. A driver that waited too little would
    /// read 0 and say so (timeout), never report 0 as a pressure.
    @Test func conversionTimesPerOversampling() throws {
        for osr in MS5837Oversampling.allCases {
            #expect(MS5837Model.conversionMilliseconds(osr: osr.rawValue) < osr.maximumConversionMilliseconds)
            let r = try Self.rig()
            let bus = r.board.bus
            try bus.write(0x76, [MS5837Command.convert(.temperature, osr).byte])
            r.clock.sleep(milliseconds: osr.typicalConversionMilliseconds * 0.95)
            #expect(try bus.read(0x76, 0x00, 3) == [0, 0, 0])
            try bus.write(0x76, [MS5837Command.convert(.temperature, osr).byte])
            r.clock.sleep(milliseconds: osr.maximumConversionMilliseconds)
            #expect(try bus.read(0x76, 0x00, 3) != [0, 0, 0])
        }
    }

    /// A 0 from the ADC (here: a reset between the conversion command and
    /// the read drops the conversion) is a timeout naming the conversion,
    /// never a pressure of 0.
    @Test func aZeroResultIsATimeoutNotAReading() throws {
        let r = try Self.rig()
        var d = MS5837(bus: r.board.bus, clock: r.clock)
        try d.start()
        try d.beginConversion(.pressure, .osr4096)
        try r.board.bus.write(0x76, [0x1E])
        r.clock.sleep(milliseconds: 10)
        #expect {
            _ = try d.readConversion(.pressure, .osr4096)
        } throws: { e in
            if case .timeout(.ms5837, 0x76, let what, 9.04)? = e as? DriverError { return what.contains("D1") }
            return false
        }
        #expect(try d.measure().pressurePascals > 100_000)   // and it reads on
    }

    /// The model writes its own CRC-4; the driver's independent CRC accepts
    /// it, and a PROM with a wrong version code is refused as another chip.
    @Test func promCRCAndVersion() throws {
        let words = MS5837PROM.datasheetExample.words
        #expect(words.count == 8 && words[7] == 0)
        #expect(throws: Never.self) { try MS5837Calibration(words: Array(words.prefix(7))) }
        #expect(MS5837Calibration.datasheetExample.words == Array(words.prefix(7)))
        let clock = VirtualClock()
        let bus = SimulatedBus(clock: clock)
        bus.attach(MS5837Model(truth: ConstantTruth(), prom: MS5837PROM(c1: 34982, c2: 36352, c3: 20328, c4: 22354, c5: 26646, c6: 26146, versionCode: 0x15)),
                   at: 0x76)
        var d = MS5837(bus: bus, clock: clock)
        #expect {
            try d.start()
        } throws: { e in
            if case .wrongChip(.ms5837, 0x76, _, 0x15, "MS5837-02BA21") = e as? DriverError { return true }
            return false
        }
        let id = try identifyChip(on: bus, at: 0x76)
        #expect(id == .unsupported(part: "MS5837-02BA21", reason: MS5837Variant.ms5837_02ba21.note!, registers: id.registers))
    }

    @Test func probeRecognisesTheChipAndABMP280Next() throws {
        let r = try Self.rig()
        #expect(try identifyChip(on: r.board.bus, at: 0x76).chip == .ms5837)
    }

    /// Noise: the realistic model's scatter shrinks with OSR (≈ 20 Pa RMS at
    /// 8192, √2 more per halving) and stays unbiased.
    @Test func realisticNoiseScalesWithOversampling() throws {
        var spreads: [Double] = []
        for osr in [MS5837Oversampling.osr256, .osr8192] {
            let r = try Self.rig(pressure: 200_000, imperfections: .realistic)
            var d = MS5837(bus: r.board.bus, clock: r.clock, pressureOversampling: osr, temperatureOversampling: osr)
            try d.start()
            var xs: [Double] = []
            for _ in 0..<200 { xs.append(try d.measure().pressurePascals) }
            let mean = xs.reduce(0, +) / Double(xs.count)
            let sd = (xs.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(xs.count - 1)).squareRoot()
            #expect(abs(mean - 200_000) < 4 * sd / Double(xs.count).squareRoot() + 10)
            spreads.append(sd)
        }
        #expect(spreads[1] > 12 && spreads[1] < 30)
        #expect(spreads[0] > 3 * spreads[1])
    }
}
