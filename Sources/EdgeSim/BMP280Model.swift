// Bosch BMP280 register-file model, transcribed from the data sheet
// BST-BMP280-DS001-26 (rev 1.26) itself (not from any driver). Raw ADC values
// come from inverting the data sheet's double-precision compensation (§8.1)
// by bisection, so that compensation returns the truth.
import EdgeBus
import EdgeValues

/// The 12 trimming words in NVM 0x88..0x9F (DS 3.11.2), little-endian.
public struct BMP280Calibration: Codable, Sendable, Equatable {
    public var T1: UInt16, T2: Int16, T3: Int16
    public var P1: UInt16, P2: Int16, P3: Int16, P4: Int16, P5: Int16, P6: Int16, P7: Int16, P8: Int16, P9: Int16

    public init(T1: UInt16, T2: Int16, T3: Int16, P1: UInt16, P2: Int16, P3: Int16, P4: Int16, P5: Int16,
                P6: Int16, P7: Int16, P8: Int16, P9: Int16) {
        self.T1 = T1; self.T2 = T2; self.T3 = T3; self.P1 = P1; self.P2 = P2; self.P3 = P3
        self.P4 = P4; self.P5 = P5; self.P6 = P6; self.P7 = P7; self.P8 = P8; self.P9 = P9
    }

    /// The data sheet's worked example (printed in earlier revisions of Bosch
    /// BST-BMP280-DS001, §3.12).
    public static let datasheetExample = BMP280Calibration(
        T1: 27504, T2: 26435, T3: -1000, P1: 36477, P2: -10685, P3: 3024,
        P4: 2855, P5: 140, P6: -7, P7: 15500, P8: -14600, P9: 6000)

    /// The 24 NVM bytes, each word little-endian (LSB at the lower address).
    public var bytes: [UInt8] {
        let words: [UInt16] = [T1, UInt16(bitPattern: T2), UInt16(bitPattern: T3), P1,
                               UInt16(bitPattern: P2), UInt16(bitPattern: P3), UInt16(bitPattern: P4),
                               UInt16(bitPattern: P5), UInt16(bitPattern: P6), UInt16(bitPattern: P7),
                               UInt16(bitPattern: P8), UInt16(bitPattern: P9)]
        return words.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
    }

    // MARK: data sheet double-precision compensation (BST-BMP280-DS001-26 rev 1.26 §8.1)

    /// Temperature °C and t_fine (truncated toward zero, as the DS casts to int32).
    public func temperature(adcT: Double) -> (celsius: Double, tFine: Double) {
        let v1 = (adcT / 16384 - Double(T1) / 1024) * Double(T2)
        let d = adcT / 131072 - Double(T1) / 8192
        let v2 = d * d * Double(T3)
        return ((v1 + v2) / 5120, (v1 + v2).rounded(.towardZero))
    }

    /// Pressure, Pa; nil when the P1 term makes the divisor zero.
    public func pressure(adcP: Double, tFine: Double) -> Double? {
        var a = tFine / 2 - 64000
        var b = a * a * Double(P6) / 32768
        b += a * Double(P5) * 2
        b = b / 4 + Double(P4) * 65536
        a = (Double(P3) * a * a / 524288 + Double(P2) * a) / 524288
        a = (1 + a / 32768) * Double(P1)
        if a == 0 { return nil }
        var p = 1048576 - adcP
        p = (p - b / 4096) * 6250 / a
        p += (Double(P9) * p * p / 2147483648 + p * Double(P8) / 32768 + Double(P7)) / 16
        return p
    }

    /// Bisection over the 20-bit ADC range for the (continuous) raw value
    /// whose compensated result is `target`.
    static func invert(_ target: Double, _ f: (Double) -> Double) -> Double {
        var lo = 0.0, hi = 1_048_575.0
        let increasing = f(hi) > f(lo)
        if increasing ? target <= f(lo) : target >= f(lo) { return lo }
        if increasing ? target >= f(hi) : target <= f(hi) { return hi }
        for _ in 0..<64 {
            let mid = (lo + hi) / 2
            if (f(mid) < target) == increasing { lo = mid } else { hi = mid }
            if hi - lo < 1e-6 { break }
        }
        return (lo + hi) / 2
    }

    /// The continuous adc_T that compensates to `celsius`.
    public func rawTemperature(for celsius: Double) -> Double {
        Self.invert(celsius) { temperature(adcT: $0).celsius }
    }
    /// The continuous adc_P that compensates to `pascal` at `tFine`.
    public func rawPressure(for pascal: Double, tFine: Double) -> Double {
        Self.invert(pascal) { pressure(adcP: $0, tFine: tFine) ?? 0 }
    }
}

/// Identity rows for parts that answer the BMP280 map.
public struct BMP280Variant: Codable, Sendable, Equatable {
    /// Chip ID at 0xD0.
    public var chipID: UInt8
    /// Standby times for t_sb codes 0..7, ms.
    public var standbyMilliseconds: [Double]
    public init(chipID: UInt8, standbyMilliseconds: [Double]) {
        self.chipID = chipID; self.standbyMilliseconds = standbyMilliseconds
    }
    /// BMP280 (0x58): t_sb 0.5, 62.5, 125, 250, 500, 1000, 2000, 4000 ms.
    public static let bmp280 = BMP280Variant(chipID: 0x58, standbyMilliseconds: [0.5, 62.5, 125, 250, 500, 1000, 2000, 4000])
    /// BME280 (0x60): codes 110/111 mean 10/20 ms; humidity (ctrl_hum 0xF2,
    /// trimming 0xA1 and 0xE1..0xE7, data 0xFD/0xFE) is modelled.
    public static let bme280 = BMP280Variant(chipID: 0x60, standbyMilliseconds: [0.5, 62.5, 125, 250, 500, 1000, 10, 20])
    public static func forChipID(_ id: UInt8) -> BMP280Variant {
        if id == 0x60 { return .bme280 }
        var v = BMP280Variant.bmp280; v.chipID = id; return v
    }
}

/// Imperfections of one BMP280 (Bosch BST-BMP280-DS001-26 rev 1.26 Table 2, Table 8, Table 9).
public struct BMP280Imperfections: Codable, Sendable, Equatable {
    /// Multiplies the DS Table 8/9 noise (IIR-off column, added before the IIR); 0 = off.
    public var noiseScale: Double
    /// Pressure offset, Pa (DS absolute accuracy ±100 Pa).
    public var pressureOffset: Double
    /// Pressure offset drift, Pa per °C away from 25 °C (DS TCO 1.5 Pa/K).
    public var pressureTempco: Double
    /// Temperature offset, °C (DS ±0.5 °C at 25 °C).
    public var temperatureOffset: Double
    /// Conversion time as a multiple of t_meas typ (1.0 = typ; t_max is ≈1.15).
    public var conversionTimeScale: Double
    /// Standby-time error, fraction (DS ±5 % typ).
    public var standbyError: Double
    /// Delay after a conversion starts before `measuring` reads 1, seconds
    /// (real parts can still read 0 right after the forced-mode write).
    public var measuringFlagDelay: Double
    /// Quantise raw values to the oversampling's resolution (16..20 bits, DS 3.3.1).
    public var quantization: Bool
    /// BME280 only: relative-humidity offset, % (BST-BME280-DS002 Table 1: ±3 %RH absolute accuracy).
    public var humidityOffset: Double

    public init(noiseScale: Double, pressureOffset: Double, pressureTempco: Double, temperatureOffset: Double,
                conversionTimeScale: Double, standbyError: Double, measuringFlagDelay: Double, quantization: Bool,
                humidityOffset: Double = 0) {
        self.humidityOffset = humidityOffset
        self.noiseScale = noiseScale; self.pressureOffset = pressureOffset; self.pressureTempco = pressureTempco
        self.temperatureOffset = temperatureOffset; self.conversionTimeScale = conversionTimeScale
        self.standbyError = standbyError; self.measuringFlagDelay = measuringFlagDelay; self.quantization = quantization
    }

    public static let realistic = BMP280Imperfections(
        noiseScale: 1, pressureOffset: 12, pressureTempco: 0.5, temperatureOffset: 0.1,
        conversionTimeScale: 1.0, standbyError: 0.01, measuringFlagDelay: 0.0001, quantization: true,
        humidityOffset: 1.5)
    /// No noise, offsets, timing error or resolution loss (raw rounded to 20 bits).
    public static let ideal = BMP280Imperfections(
        noiseScale: 0, pressureOffset: 0, pressureTempco: 0, temperatureOffset: 0,
        conversionTimeScale: 1.0, standbyError: 0, measuringFlagDelay: 0, quantization: false)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = BMP280Imperfections.realistic
        noiseScale = try c.decodeIfPresent(Double.self, forKey: .noiseScale) ?? d.noiseScale
        pressureOffset = try c.decodeIfPresent(Double.self, forKey: .pressureOffset) ?? d.pressureOffset
        pressureTempco = try c.decodeIfPresent(Double.self, forKey: .pressureTempco) ?? d.pressureTempco
        temperatureOffset = try c.decodeIfPresent(Double.self, forKey: .temperatureOffset) ?? d.temperatureOffset
        conversionTimeScale = try c.decodeIfPresent(Double.self, forKey: .conversionTimeScale) ?? d.conversionTimeScale
        standbyError = try c.decodeIfPresent(Double.self, forKey: .standbyError) ?? d.standbyError
        measuringFlagDelay = try c.decodeIfPresent(Double.self, forKey: .measuringFlagDelay) ?? d.measuringFlagDelay
        quantization = try c.decodeIfPresent(Bool.self, forKey: .quantization) ?? d.quantization
        humidityOffset = try c.decodeIfPresent(Double.self, forKey: .humidityOffset) ?? d.humidityOffset
    }
}

/// Round-trip tolerance for the BMP280's current settings at the last
/// measured operating point: 1 LSB (of the oversampling's resolution) + 3σ
/// (after the IIR, steady state). Excludes the configured offsets.
public struct BMP280Tolerance: Sendable, Equatable {
    /// Pa.
    public var pressure: Double
    /// °C.
    public var temperature: Double
    /// Relative humidity, % (BME280; 0 on a BMP280).
    public var humidity: Double = 0
}

/// The BMP280 as a register file with behaviour. See docs/simulators.md.
public final class BMP280Model: RegisterFileDevice, @unchecked Sendable {
    public let kind = "bmp280"
    public let variant: BMP280Variant
    public let calibration: BMP280Calibration
    /// BME280 humidity trimming (used when the variant is a BME280).
    public let humidityCalibration: BME280HumidityCalibration
    public let body: SimBody
    public let imperfections: BMP280Imperfections
    let truth: any TruthSource
    var rng: SimRandom

    enum Reg {
        static let calib00: UInt8 = 0x88, id: UInt8 = 0xD0, reset: UInt8 = 0xE0, ctrlHum: UInt8 = 0xF2
        static let status: UInt8 = 0xF3, ctrlMeas: UInt8 = 0xF4, config: UInt8 = 0xF5
        static let pressMSB: UInt8 = 0xF7, tempXLSB: UInt8 = 0xFC, humMSB: UInt8 = 0xFD, humLSB: UInt8 = 0xFE
        static let calibH1: UInt8 = 0xA1, calibE1: UInt8 = 0xE1
    }
    /// BME280 humidity noise, %RH σ (BST-BME280-DS002 Table 1: RMS noise 0.02 %RH;
    /// the same at every oversampling here, our simplification).
    static let humidityNoise = 0.02
    static let humiditySkipped: UInt16 = 0x8000
    /// How long `im_update` reads 1 after a power-on or soft reset (NVM copy), ns.
    public static let nvmCopyNanoseconds: UInt64 = 1_000_000
    static let pressureNoise: [Double] = [3.3, 2.6, 2.1, 1.6, 1.3]      // DS Table 8, IIR off, ×1..×16
    static let temperatureNoise: [Double] = [0.005, 0.004, 0.003, 0.003, 0.002]   // DS Table 9
    static let skipped: UInt32 = 0x80000

    var regs = [UInt8](repeating: 0, count: 256)
    var pointer: UInt8 = 0
    var lastTime: UInt64
    var nvmUntil: UInt64 = 0
    var adcP: UInt32 = 0x80000, adcT: UInt32 = 0x80000
    var adcH: UInt16 = 0x8000
    /// osrs_h in force: ctrl_hum (0xF2) is copied here on each ctrl_meas
    /// write (BST-BME280-DS002 §5.4.3: ctrl_hum only takes effect after a
    /// write to ctrl_meas).
    var activeOsrsH: UInt8 = 0
    var isBME280: Bool { variant.chipID == 0x60 }
    var iirP: Double?, iirT: Double?
    /// Forced conversion in progress: start and end.
    var forced: (start: UInt64, end: UInt64)?
    /// Normal mode: start of the cycle whose result is still pending.
    var cycleStart: UInt64 = 0
    /// Last measured truth (for tolerance at the operating point).
    var lastTruth: (p: Double, t: Double, h: Double) = (101_325, 20, 45)

    public init(truth: any TruthSource, body: SimBody = .board, variant: BMP280Variant = .bmp280,
                calibration: BMP280Calibration = .datasheetExample,
                humidityCalibration: BME280HumidityCalibration = .typical,
                imperfections: BMP280Imperfections = .realistic, seed: UInt64 = 0,
                powerOnAtNanoseconds t: UInt64 = 0) {
        self.truth = truth; self.body = body; self.variant = variant; self.calibration = calibration
        self.humidityCalibration = humidityCalibration
        self.imperfections = imperfections
        rng = SimRandom(seed: seed)
        lastTime = t
        loadPowerOnValues(at: t)
    }

    func loadPowerOnValues(at t: UInt64) {
        regs = [UInt8](repeating: 0, count: 256)
        for (i, b) in calibration.bytes.enumerated() { regs[0x88 + i] = b }
        regs[Int(Reg.id)] = variant.chipID
        if isBME280 {
            regs[Int(Reg.calibH1)] = humidityCalibration.a1
            for (i, b) in humidityCalibration.e1toE7.enumerated() { regs[Int(Reg.calibE1) + i] = b }
        }
        adcP = Self.skipped; adcT = Self.skipped
        adcH = Self.humiditySkipped; activeOsrsH = 0
        iirP = nil; iirT = nil
        forced = nil
        nvmUntil = t &+ Self.nvmCopyNanoseconds
    }

    // MARK: settings

    var mode: UInt8 { regs[Int(Reg.ctrlMeas)] & 3 }
    static func oversampling(_ code: UInt8) -> Int { code == 0 ? 0 : 1 << min(Int(code) - 1, 4) }
    var osrsT: UInt8 { regs[Int(Reg.ctrlMeas)] >> 5 }
    var osrsP: UInt8 { (regs[Int(Reg.ctrlMeas)] >> 2) & 7 }
    /// IIR coefficient c (1 = off).
    var filterCoefficient: Int { let f = (regs[Int(Reg.config)] >> 2) & 7; return f == 0 ? 1 : 1 << min(Int(f), 4) }

    /// t_meas typ (ms) = 1 + 2·osrs_t + (2·osrs_p + 0.5) [+ (2·osrs_h + 0.5) on a
    /// BME280, BST-BME280-DS002 §9.1], skipped terms omitted (DS 9.1).
    public var measurementNanoseconds: UInt64 {
        let t = Self.oversampling(osrsT), p = Self.oversampling(osrsP), h = Self.oversampling(activeOsrsH)
        var ms = 1.0
        if t > 0 { ms += 2 * Double(t) }
        if p > 0 { ms += 2 * Double(p) + 0.5 }
        if h > 0 { ms += 2 * Double(h) + 0.5 }
        return UInt64((ms * 1e6 * imperfections.conversionTimeScale).rounded())
    }
    var standbyNanoseconds: UInt64 {
        let ms = variant.standbyMilliseconds[Int(regs[Int(Reg.config)] >> 5)]
        return UInt64((ms * 1e6 * (1 + imperfections.standbyError)).rounded())
    }
    var flagDelay: UInt64 { UInt64((max(0, imperfections.measuringFlagDelay) * 1e9).rounded()) }

    // MARK: time

    public func advance(toNanoseconds t: UInt64) {
        guard t >= lastTime else { return }
        lastTime = t
        if let f = forced, f.end <= t {
            measure(at: f.end)
            forced = nil
            regs[Int(Reg.ctrlMeas)] &= ~0x03   // back to sleep: mode bits read 00
        }
        if mode == 3 {
            let tm = measurementNanoseconds, cycle = tm + standbyNanoseconds
            if cycleStart &+ tm <= t {
                let n = (t - cycleStart - tm) / cycle + 1
                if n > 512 { cycleStart &+= (n - 512) * cycle }
                while cycleStart &+ tm <= t { measure(at: cycleStart &+ tm); cycleStart &+= cycle }
            }
        }
    }

    func quantise(_ raw: Double, code: UInt8) -> Double {
        guard imperfections.quantization else { return raw }
        let bits = 16 + min(Int(code) - 1, 4)
        let step = Double(1 << (20 - bits))
        return (raw / step).rounded() * step
    }

    func filtered(_ q: Double, _ memory: inout Double?) -> UInt32 {
        let c = Double(filterCoefficient)
        var out = q
        if c > 1 {
            out = memory.map { ($0 * (c - 1) + q) / c } ?? q
            memory = out
        }
        return UInt32(min(1_048_575, max(0, out.rounded())))
    }

    /// One T+P conversion whose results land at `ts`.
    func measure(at ts: UInt64) {
        let world = truth.truth(atNanoseconds: ts, body: body)
        let tTrue = world.temperature + imperfections.temperatureOffset
        let pTrue = world.pressure + imperfections.pressureOffset + imperfections.pressureTempco * (tTrue - 25)
        let hTrue = min(100, max(0, world.relativeHumidity + imperfections.humidityOffset))
        lastTruth = (pTrue, tTrue, hTrue)
        let cal = calibration
        var tFine: Double
        if osrsT != 0 {
            let sigma = Self.temperatureNoise[min(Int(osrsT), 5) - 1] * imperfections.noiseScale
            let raw = cal.rawTemperature(for: tTrue + rng.gaussian(sigma: sigma))
            adcT = filtered(quantise(raw, code: osrsT), &iirT)
            tFine = cal.temperature(adcT: Double(adcT)).tFine
        } else {
            adcT = Self.skipped
            tFine = cal.temperature(adcT: cal.rawTemperature(for: tTrue)).tFine
        }
        if osrsP != 0 {
            let sigma = Self.pressureNoise[min(Int(osrsP), 5) - 1] * imperfections.noiseScale
            let raw = cal.rawPressure(for: pTrue + rng.gaussian(sigma: sigma), tFine: tFine)
            adcP = filtered(quantise(raw, code: osrsP), &iirP)
        } else {
            adcP = Self.skipped
        }
        // Humidity: 16-bit, never IIR-filtered (BST-BME280-DS002 §3.4.4).
        if isBME280 && activeOsrsH != 0 {
            let noisy = min(100, max(0, hTrue + rng.gaussian(sigma: Self.humidityNoise * imperfections.noiseScale)))
            let raw = humidityCalibration.rawHumidity(for: noisy, tFine: tFine)
            adcH = UInt16(min(65535, max(0, raw.rounded())))
        } else {
            adcH = Self.humiditySkipped
        }
    }

    // MARK: register file

    func readRegister(_ r: UInt8, atNanoseconds t: UInt64) -> UInt8 {
        switch r {
        case Reg.status:
            var s: UInt8 = 0
            if t < nvmUntil { s |= 0x01 }
            if let f = forced, t >= f.start &+ flagDelay, t < f.end { s |= 0x08 }
            if mode == 3, t >= cycleStart &+ flagDelay, t < cycleStart &+ measurementNanoseconds { s |= 0x08 }
            return s
        case Reg.pressMSB...Reg.tempXLSB:
            let v = r < 0xFA ? adcP : adcT
            switch (r - Reg.pressMSB) % 3 {
            case 0: return UInt8(v >> 12)
            case 1: return UInt8((v >> 4) & 0xFF)
            default: return UInt8((v & 0xF) << 4)
            }
        case Reg.humMSB where isBME280:
            return UInt8(adcH >> 8)
        case Reg.humLSB where isBME280:
            return UInt8(adcH & 0xFF)
        case Reg.reset:
            return 0
        default:
            return regs[Int(r)]
        }
    }

    func writeRegister(_ r: UInt8, _ v: UInt8, atNanoseconds t: UInt64) {
        switch r {
        case Reg.reset:
            if v == 0xB6 { loadPowerOnValues(at: t) }
        case Reg.ctrlMeas:
            let old = mode
            regs[Int(r)] = v
            if isBME280 { activeOsrsH = regs[Int(Reg.ctrlHum)] & 7 }
            switch v & 3 {
            case 0: forced = nil
            case 3: if old != 3 { forced = nil; cycleStart = t }
            default: forced = (t, t &+ measurementNanoseconds)
            }
        case Reg.config:
            // DS 5.4.6: writes to config in normal mode may be ignored; this model ignores them.
            guard mode != 3 else { return }
            regs[Int(r)] = v
            iirP = nil; iirT = nil   // writing the filter setting resets the filter
        case Reg.ctrlHum where variant.chipID == 0x60:
            regs[Int(r)] = v & 7
        default:
            return   // calibration, id, status and data are read-only
        }
    }

    public func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer,
                         atNanoseconds t: UInt64) throws(SimulatedDeviceFault) {
        registerTransfer(write: write, read: read, atNanoseconds: t)
    }

    public func powerOnReset(atNanoseconds t: UInt64) {
        advance(toNanoseconds: t)
        loadPowerOnValues(at: t)
        pointer = 0
    }

    // MARK: tolerance

    /// Noise σ after a first-order IIR in steady state: σ·√(1/(2c − 1)).
    /// (This reproduces DS Table 8's IIR columns from its IIR-off column.)
    func iirNoiseFactor() -> Double { (1 / Double(2 * filterCoefficient - 1)).squareRoot() }

    public var roundTripTolerance: BMP280Tolerance {
        let cal = calibration
        let tCode = osrsT == 0 ? UInt8(5) : osrsT, pCode = osrsP == 0 ? UInt8(5) : osrsP
        let stepT = imperfections.quantization ? Double(1 << (20 - (16 + min(Int(tCode) - 1, 4)))) : 1
        let stepP = imperfections.quantization ? Double(1 << (20 - (16 + min(Int(pCode) - 1, 4)))) : 1
        let rawT = cal.rawTemperature(for: lastTruth.t)
        let (t0, f0) = cal.temperature(adcT: rawT)
        let (t1, f1) = cal.temperature(adcT: rawT + stepT)
        let rawP = cal.rawPressure(for: lastTruth.p, tFine: f0)
        let p0 = cal.pressure(adcP: rawP, tFine: f0) ?? 0
        let dPdRaw = abs((cal.pressure(adcP: rawP + stepP, tFine: f0) ?? 0) - p0)
        let dPdT = abs((cal.pressure(adcP: rawP, tFine: f1) ?? 0) - p0)   // one T step moves P this much
        let k = iirNoiseFactor() * imperfections.noiseScale
        let sigmaT = Self.temperatureNoise[min(Int(tCode), 5) - 1] * k
        let sigmaP = Self.pressureNoise[min(Int(pCode), 5) - 1] * k
        let dT = abs(t1 - t0)
        var humidity = 0.0
        if isBME280 {
            // One adc_H count, 3σ, the temperature's effect through t_fine, and
            // 0.01 %RH for the integer formula's rounding (Q22.10 output).
            let hc = humidityCalibration
            let rawH = hc.rawHumidity(for: lastTruth.h, tFine: f0)
            let h0 = hc.humidity(adcH: rawH, tFine: f0)
            let dHdRaw = abs(hc.humidity(adcH: rawH + 1, tFine: f0) - h0)
            let dHdT = abs(hc.humidity(adcH: rawH, tFine: f1) - h0)
            humidity = dHdRaw + 3 * Self.humidityNoise * imperfections.noiseScale
                + dHdT * (1 + 3 * sigmaT / max(dT, 1e-9)) + 0.01
        }
        return BMP280Tolerance(pressure: dPdRaw + 3 * sigmaP + dPdT * (1 + 3 * sigmaT / max(dT, 1e-9)),
                               temperature: dT + 3 * sigmaT, humidity: humidity)
    }
}
