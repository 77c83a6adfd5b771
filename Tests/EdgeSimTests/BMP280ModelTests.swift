import Testing
import EdgeBus
import EdgeFusion
@testable import EdgeSim

/// The data sheet's compensation, written out again here (DS 8.1 double,
/// DS 3.11.3 integer with data-sheet shifts), independently of the model.
struct DSCompensation {
    var T1 = 0.0, T2 = 0.0, T3 = 0.0, P = [Double](repeating: 0, count: 10)
    init(nvm b: [UInt8]) {
        func u(_ i: Int) -> Double { Double(UInt16(b[i + 1]) << 8 | UInt16(b[i])) }
        func s(_ i: Int) -> Double { Double(Int16(bitPattern: UInt16(b[i + 1]) << 8 | UInt16(b[i]))) }
        T1 = u(0); T2 = s(2); T3 = s(4)
        P[1] = u(6)
        for k in 2...9 { P[k] = s(6 + 2 * (k - 1)) }
    }
    func doubleT(_ adcT: Int) -> (Double, Double) {
        let x = Double(adcT)
        let v1 = (x / 16384.0 - T1 / 1024.0) * T2
        let v2 = (x / 131072.0 - T1 / 8192.0) * (x / 131072.0 - T1 / 8192.0) * T3
        return ((v1 + v2) / 5120.0, Double(Int32(v1 + v2)))
    }
    func doubleP(_ adcP: Int, tFine: Double) -> Double {
        var var1 = tFine / 2.0 - 64000.0
        var var2 = var1 * var1 * P[6] / 32768.0
        var2 = var2 + var1 * P[5] * 2.0
        var2 = var2 / 4.0 + P[4] * 65536.0
        var1 = (P[3] * var1 * var1 / 524288.0 + P[2] * var1) / 524288.0
        var1 = (1.0 + var1 / 32768.0) * P[1]
        var p = 1048576.0 - Double(adcP)
        p = (p - var2 / 4096.0) * 6250.0 / var1
        var1 = P[9] * p * p / 2147483648.0
        var2 = p * P[8] / 32768.0
        return p + (var1 + var2 + P[7]) / 16.0
    }
    func intT(_ adcT: Int64) -> (Int64, Int64) {
        let t1 = Int64(T1), t2 = Int64(T2), t3 = Int64(T3)
        let v1 = (((adcT >> 3) - (t1 << 1)) * t2) >> 11
        let d = (adcT >> 4) - t1
        let v2 = (((d * d) >> 12) * t3) >> 14
        let tFine = v1 + v2
        return ((tFine * 5 + 128) >> 8, tFine)
    }
    /// Pa as Q24.8.
    func int64P(_ adcP: Int64, tFine: Int64) -> Int64 {
        let p = P.map { Int64($0) }
        var v1 = tFine - 128000
        var v2 = v1 * v1 * p[6]
        v2 = v2 + ((v1 * p[5]) << 17)
        v2 = v2 + (p[4] << 35)
        v1 = ((v1 * v1 * p[3]) >> 8) + ((v1 * p[2]) << 12)
        v1 = (((Int64(1) << 47) + v1) * p[1]) >> 33
        if v1 == 0 { return 0 }
        var q = 1048576 - adcP
        q = (((q << 31) - v2) * 3125) / v1
        v1 = (p[9] * (q >> 13) * (q >> 13)) >> 25
        v2 = (p[8] * q) >> 19
        return ((q + v1 + v2) >> 8) + (p[7] << 4)
    }
}

@Suite struct BMP280ModelTests {
    static let addr: UInt8 = 0x76
    static let STATUS: UInt8 = 0xF3, CTRL_MEAS: UInt8 = 0xF4, CONFIG: UInt8 = 0xF5, PRESS_MSB: UInt8 = 0xF7

    struct Rig { let bus: SimulatedBus; let clock: VirtualClock; let bmp: BMP280Model }

    static func rig(_ truth: any TruthSource = ConstantTruth(.restingLevel), variant: BMP280Variant = .bmp280,
                    imperfections: BMP280Imperfections = .ideal, seed: UInt64 = 3) -> Rig {
        let clock = VirtualClock(startNanoseconds: 7_000 * ms)
        let bmp = BMP280Model(truth: truth, variant: variant, imperfections: imperfections, seed: seed,
                              powerOnAtNanoseconds: clock.nowNanoseconds)
        let bus = SimulatedBus(clock: clock)
        bus.attach(bmp, at: addr)
        return Rig(bus: bus, clock: clock, bmp: bmp)
    }

    func raw(_ r: Rig) throws -> (p: Int, t: Int) {
        let b = try r.bus.read(Self.addr, Self.PRESS_MSB, 6)
        return (Int(b[0]) << 12 | Int(b[1]) << 4 | Int(b[2]) >> 4, Int(b[3]) << 12 | Int(b[4]) << 4 | Int(b[5]) >> 4)
    }

    @Test func powerOnState() throws {
        let r = Self.rig()
        #expect(try r.bus.read(Self.addr, 0xD0, 1) == [0x58])
        #expect(try r.bus.read(Self.addr, Self.STATUS, 1) == [0x01])     // im_update: NVM copy
        r.clock.advance(nanoseconds: 2 * ms)
        #expect(try r.bus.read(Self.addr, Self.STATUS, 3) == [0x00, 0x00, 0x00])
        #expect(try r.bus.read(Self.addr, Self.PRESS_MSB, 6) == [0x80, 0, 0, 0x80, 0, 0])
        // The data sheet example calibration, little-endian words.
        #expect(try r.bus.read(Self.addr, 0x88, 24) == [0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, 0x7D, 0x8E,
                                                        0x43, 0xD6, 0xD0, 0x0B, 0x27, 0x0B, 0x8C, 0x00,
                                                        0xF9, 0xFF, 0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17])
        #expect(try Self.rig(variant: .forChipID(0x60)).bus.read(Self.addr, 0xD0, 1) == [0x60])
    }

    @Test func testFormulasMatchTheWorkedExample() {
        let c = DSCompensation(nvm: BMP280Calibration.datasheetExample.bytes)
        let (t, tFine) = c.doubleT(519888)
        #expect(abs(t - 25.082478) < 1e-6 && tFine == 128422)
        #expect(abs(c.doubleP(415148, tFine: tFine) - 100653.258) < 1e-3)
        let (ti, tFineI) = c.intT(519888)
        #expect(ti == 2508 && tFineI == 128422)
        #expect(c.int64P(415148, tFine: tFineI) == 25767233)
    }

    @Test func forcedModeConvertsOnceThenSleeps() throws {
        let step = StepTruth(before: truth(pressure: 100_000, temperature: 20),
                             after: truth(pressure: 90_000, temperature: 30), stepAt: 7_050 * ms)
        let r = Self.rig(step)
        r.clock.advance(nanoseconds: 2 * ms)
        try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x25])   // ×1, ×1, forced: t_meas 5.5 ms
        #expect(try r.bus.read(Self.addr, Self.STATUS, 2) == [0x08, 0x25])
        r.clock.advance(nanoseconds: 5_499_999)
        #expect(try r.bus.read(Self.addr, Self.STATUS, 2) == [0x08, 0x25])
        #expect(try raw(r).p == 0x80000)
        r.clock.advance(nanoseconds: 1)
        #expect(try r.bus.read(Self.addr, Self.STATUS, 2) == [0x00, 0x24])   // back to sleep
        let first = try raw(r)
        #expect(first.p != 0x80000 && first.t != 0x80000)
        r.clock.advance(nanoseconds: 100 * ms)                               // truth stepped; no new conversion
        #expect(try raw(r) == first)
        try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x26])                   // mode 10 is forced too
        r.clock.advance(nanoseconds: 6 * ms)
        #expect(try raw(r) != first)
    }

    @Test func normalModeCyclesWithStandby() throws {
        let r = Self.rig()
        r.clock.advance(nanoseconds: 2 * ms)
        try r.bus.write(Self.addr, [Self.CONFIG, 0x20])                      // t_sb 62.5 ms, filter off
        try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x2F])                   // ×1 T, ×4 P, normal: t_meas 11.5 ms
        #expect(r.bmp.measurementNanoseconds == 11_500_000)
        var conversions: [UInt64] = []
        var last = try raw(r)
        let start = r.clock.nowNanoseconds
        var measuringSeen = 0
        for _ in 0..<(300 * 10) {   // 300 ms in 0.1 ms steps
            r.clock.advance(nanoseconds: 100_000)
            let status = try r.bus.read(Self.addr, Self.STATUS, 1)[0]
            if status & 0x08 != 0 { measuringSeen += 1 }
            let now = try raw(r)
            if now != last || (conversions.isEmpty && now.p != 0x80000) {
                conversions.append(r.clock.nowNanoseconds - start)
            }
            last = now
        }
        // Results at 11.5 ms, then every 11.5 + 62.5 = 74 ms (ODR 13.51 Hz, DS Table 14).
        #expect(conversions.first == 11_500_000)
        #expect(measuringSeen > 0)
        // With a constant truth the ideal data do not change, so cycles are counted on `measuring`.
        // Conversions start at 0, 74, 148, 222 and 296 ms: 4 × 11.5 ms + 4 ms seen in 300 ms.
        #expect(measuringSeen == 4 * 115 + 40)
        #expect(try r.bus.read(Self.addr, Self.CTRL_MEAS, 1) == [0x2F])
        // Config writes are ignored in normal mode (DS 5.4.6).
        try r.bus.write(Self.addr, [Self.CONFIG, 0x00])
        #expect(try r.bus.read(Self.addr, Self.CONFIG, 1) == [0x20])
    }

    @Test func skippedChannelReads0x80000() throws {
        let r = Self.rig()
        r.clock.advance(nanoseconds: 2 * ms)
        try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x21])                   // T ×1, P skipped, forced
        r.clock.advance(nanoseconds: 3 * ms)                                 // 1 + 2 = 3 ms
        let v = try raw(r)
        #expect(v.p == 0x80000 && v.t != 0x80000)
    }

    @Test(arguments: [(101_325.0, 20.0), (90_000.0, -5.0), (70_000.0, 40.0), (105_000.0, 0.5)])
    func inverseCompensationRoundTrip(pressure: Double, temperature: Double) throws {
        for imperfect in [false, true] {
            var imp = BMP280Imperfections.ideal
            if imperfect { imp.noiseScale = 1; imp.quantization = true }
            let r = Self.rig(ConstantTruth(truth(pressure: pressure, temperature: temperature)), imperfections: imp)
            r.clock.advance(nanoseconds: 2 * ms)
            try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x55])                   // ×2 T, ×16 P, forced
            r.clock.advance(nanoseconds: 50 * ms)
            let (p, t) = try raw(r)
            let tol = r.bmp.roundTripTolerance
            let c = DSCompensation(nvm: try r.bus.read(Self.addr, 0x88, 24))
            let (dt, tFine) = c.doubleT(t)
            #expect(abs(dt - temperature) <= tol.temperature)
            #expect(abs(c.doubleP(p, tFine: tFine) - pressure) <= tol.pressure)
            let (it, itFine) = c.intT(Int64(t))
            #expect(abs(Double(it) / 100 - temperature) <= tol.temperature + 0.01)
            // int64 vs double differ by up to ~1 Pa: the integer t_fine drops adc_T's
            // 3 LSBs (BST-BMP280-DS001-26 rev 1.26 §3.11.3 against §8.1).
            #expect(abs(Double(c.int64P(Int64(p), tFine: itFine)) / 256 - pressure) <= tol.pressure + 1.0)
            if !imperfect {
                #expect(tol.pressure < 0.3 && tol.temperature < 0.001)
            }
        }
    }

    @Test(arguments: [(1, 2), (2, 5), (3, 11), (4, 22)])
    func iirStepResponse(filterCode: Int, samplesTo75: Int) throws {
        let step = StepTruth(before: truth(pressure: 100_000, temperature: 20),
                             after: truth(pressure: 101_000, temperature: 20), stepAt: 7_100 * ms)
        let r = Self.rig(step)
        r.clock.advance(nanoseconds: 2 * ms)
        try r.bus.write(Self.addr, [Self.CONFIG, UInt8(filterCode << 2)])    // t_sb 0.5 ms
        try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x27])                   // ×1, ×1, normal: 6 ms cycle
        // Before the step the filter has settled on the old value.
        r.clock.sleep(untilNanoseconds: 7_100 * ms - 1)
        let old = Double(try raw(r).p)
        let c = Double(1 << filterCode)
        // The first conversion after the step ends at the next cycle boundary.
        let firstStart = r.clock.nowNanoseconds
        var outputs: [Double] = []
        var last = old
        while outputs.count < samplesTo75 + 1 {
            r.clock.advance(nanoseconds: 100_000)
            let now = Double(try raw(r).p)
            if now != last { outputs.append(now); last = now }
            if r.clock.nowNanoseconds - firstStart > 1_000 * ms { break }
        }
        let target = r.bmp.calibration.rawPressure(
            for: 101_000, tFine: r.bmp.calibration.temperature(adcT: r.bmp.calibration.rawTemperature(for: 20)).tFine)
        #expect(outputs.count == samplesTo75 + 1)
        var expected = old
        for (n, out) in outputs.enumerated() {
            expected = (expected * (c - 1) + target) / c
            #expect(abs(out - expected) <= 1.5, "sample \(n + 1)")
            let fraction = (out - old) / (target.rounded() - old)
            if n + 1 < samplesTo75 { #expect(fraction < 0.75) } else { #expect(fraction >= 0.75 - 1e-3) }   // c = 2 reaches exactly 75 %
        }
    }

    @Test func filterResetOnConfigWrite() throws {
        let step = StepTruth(before: truth(pressure: 100_000, temperature: 20),
                             after: truth(pressure: 101_000, temperature: 20), stepAt: 7_020 * ms)
        let r = Self.rig(step)
        r.clock.advance(nanoseconds: 2 * ms)
        try r.bus.write(Self.addr, [Self.CONFIG, 4 << 2])                    // IIR 16
        try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x25])
        r.clock.advance(nanoseconds: 10 * ms)
        let before = try raw(r).p
        r.clock.advance(nanoseconds: 20 * ms)
        try r.bus.write(Self.addr, [Self.CONFIG, 4 << 2])                    // rewrite: resets the filter
        try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x25])
        r.clock.advance(nanoseconds: 10 * ms)
        let after = try raw(r).p
        // A reset filter is seeded by the new sample: the full step appears at once.
        let cal = r.bmp.calibration
        let tf = cal.temperature(adcT: cal.rawTemperature(for: 20)).tFine
        #expect(abs(Double(before) - cal.rawPressure(for: 100_000, tFine: tf)) <= 1)
        #expect(abs(Double(after) - cal.rawPressure(for: 101_000, tFine: tf)) <= 1)
    }

    @Test func noiseMatchesTable8() throws {
        var imp = BMP280Imperfections.ideal
        imp.noiseScale = 1
        let r = Self.rig(imperfections: imp)
        r.clock.advance(nanoseconds: 2 * ms)
        try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x57])                   // ×2 T, ×16 P, normal, IIR off
        let c = DSCompensation(nvm: try r.bus.read(Self.addr, 0x88, 24))
        var values: [Double] = []
        for _ in 0..<800 {
            r.clock.advance(nanoseconds: 38 * ms)
            let (p, t) = try raw(r)
            values.append(c.doubleP(p, tFine: c.doubleT(t).1))
        }
        let mean = values.reduce(0, +) / Double(values.count)
        let sd = (values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(values.count)).squareRoot()
        #expect(abs(mean - 101_325) < 0.3)
        #expect(abs(sd - 1.3) < 0.15)   // DS Table 8, ultra high resolution, IIR off
    }

    @Test func softResetRestoresPowerOnState() throws {
        let r = Self.rig()
        r.clock.advance(nanoseconds: 2 * ms)
        try r.bus.write(Self.addr, [Self.CONFIG, 0x10])
        try r.bus.write(Self.addr, [Self.CTRL_MEAS, 0x27])
        r.clock.advance(nanoseconds: 20 * ms)
        #expect(try raw(r).p != 0x80000)
        try r.bus.write(Self.addr, [0xE0, 0xB6])
        #expect(try r.bus.read(Self.addr, 0xE0, 1) == [0x00])
        #expect(try r.bus.read(Self.addr, Self.STATUS, 3) == [0x01, 0x00, 0x00])
        #expect(try raw(r).p == 0x80000)
    }
}
