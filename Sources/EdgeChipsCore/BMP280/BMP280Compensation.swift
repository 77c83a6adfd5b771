import EdgeValues


/// The factory calibration words (DS §3.11.2, Table 17): 24 bytes at
/// 0x88..0x9F, little-endian; T1 and P1 unsigned, the rest signed.
public struct BMP280Calibration: Sendable, Equatable {
    public var t1: UInt16, t2: Int16, t3: Int16
    public var p1: UInt16, p2: Int16, p3: Int16, p4: Int16, p5: Int16, p6: Int16, p7: Int16, p8: Int16, p9: Int16

    public init(t1: UInt16, t2: Int16, t3: Int16, p1: UInt16, p2: Int16, p3: Int16, p4: Int16,
                p5: Int16, p6: Int16, p7: Int16, p8: Int16, p9: Int16) {
        self.t1 = t1; self.t2 = t2; self.t3 = t3
        self.p1 = p1; self.p2 = p2; self.p3 = p3; self.p4 = p4; self.p5 = p5
        self.p6 = p6; self.p7 = p7; self.p8 = p8; self.p9 = p9
    }

    /// Parses and validates the 24 calibration bytes. An all-0x00 or all-0xFF
    /// block (a bad read) or dig_P1 = 0 (it divides) is
    /// ``DecodeError/invalidCalibration``.
    public init(bytes b: [UInt8]) throws(DecodeError) {
        guard b.count == 24 else {
            throw .invalidCalibration(chip: .bmp280, reason: "expected 24 bytes at 0x88..0x9F, got \(b.count)")
        }
        if b.allSatisfy({ $0 == 0x00 }) || b.allSatisfy({ $0 == 0xFF }) {
            throw .invalidCalibration(chip: .bmp280, reason: "all 24 bytes read \(hex(b[0])) (a bad read, or not a BMP280)")
        }
        func s(_ i: Int) -> Int16 { int16LittleEndian(b[i], b[i + 1]) }
        self.init(t1: uint16LittleEndian(b[0], b[1]), t2: s(2), t3: s(4),
                  p1: uint16LittleEndian(b[6], b[7]), p2: s(8), p3: s(10), p4: s(12), p5: s(14),
                  p6: s(16), p7: s(18), p8: s(20), p9: s(22))
        guard p1 != 0 else {
            throw .invalidCalibration(chip: .bmp280, reason: "dig_P1 is 0, which would divide by zero in the pressure formula")
        }
    }

    /// The 24 bytes as stored in the chip (simulators, fixtures).
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        func u(_ v: UInt16) { out.append(UInt8(v & 0xFF)); out.append(UInt8(v >> 8)) }
        func s(_ v: Int16) { u(UInt16(bitPattern: v)) }
        u(t1); s(t2); s(t3); u(p1); s(p2); s(p3); s(p4); s(p5); s(p6); s(p7); s(p8); s(p9)
        return out
    }
}

/// One raw BMP280 reading: the 20-bit adc values from the 6-byte burst
/// 0xF7..0xFC, and when it was captured.
public struct BMP280RawSample: Sendable, Equatable {
    public var adcP: Int32
    public var adcT: Int32
    public var captureNanoseconds: UInt64

    public init(adcP: Int32, adcT: Int32, captureNanoseconds: UInt64 = 0) {
        self.adcP = adcP; self.adcT = adcT; self.captureNanoseconds = captureNanoseconds
    }

    /// `adc = msb << 12 | lsb << 4 | xlsb >> 4` for pressure then temperature.
    @inlinable
    public init(burst b: UnsafeRawBufferPointer, captureNanoseconds: UInt64) {
        precondition(b.count >= 6)
        adcP = Int32(b[0]) << 12 | Int32(b[1]) << 4 | Int32(b[2]) >> 4
        adcT = Int32(b[3]) << 12 | Int32(b[4]) << 4 | Int32(b[5]) >> 4
        self.captureNanoseconds = captureNanoseconds
    }

    public init(burst bytes: [UInt8], captureNanoseconds: UInt64 = 0) {
        self = bytes.withUnsafeBytes { BMP280RawSample(burst: $0, captureNanoseconds: captureNanoseconds) }
    }
}

/// A compensated BMP280 reading, SI units.
public struct BMP280Sample: Sendable, Equatable {
    /// °C, in 0.01 °C steps (the data sheet's 32-bit integer formula).
    public var temperatureCelsius: Double
    /// Pa (the 64-bit integer formula's Q24.8 result / 256); nil when the
    /// pressure channel is configured off (oversampling 0).
    public var pressurePascals: Double?
    /// Capture time, monotonic ns.
    public var captureNanoseconds: UInt64

    public init(temperatureCelsius: Double, pressurePascals: Double?, captureNanoseconds: UInt64) {
        self.temperatureCelsius = temperatureCelsius; self.pressurePascals = pressurePascals
        self.captureNanoseconds = captureNanoseconds
    }
}

/// The data sheet's compensation formulas (DS §3.11.3 integer, §8.1 double),
/// bit for bit. Integer maths runs in Int64 with Swift's arithmetic `>>`
/// (floor, as the data sheet and Linux `bmp280-core.c`; Bosch's BMP2 API
/// divides instead and differs by 1 in t_fine), and wrapping products where
/// C's int64 could overflow, so nothing traps.
public enum BMP280Compensation {
    /// t_fine and the temperature in 0.01 °C (32-bit formula).
    @inlinable
    public static func temperature(adcT: Int32, _ c: BMP280Calibration) -> (tFine: Int32, centiCelsius: Int32) {
        let adc = Int64(adcT), t1 = Int64(c.t1), t2 = Int64(c.t2), t3 = Int64(c.t3)
        let v1 = (((adc >> 3) - (t1 << 1)) * t2) >> 11
        let d = (adc >> 4) - t1
        let v2 = (((d * d) >> 12) * t3) >> 14
        let tFine = v1 + v2
        let t = (tFine * 5 + 128) >> 8
        return (Int32(truncatingIfNeeded: tFine), Int32(truncatingIfNeeded: t))
    }

    /// Pressure as unsigned Q24.8 Pa (divide by 256) from the 64-bit formula;
    /// nil where the data sheet returns 0 (var1 == 0).
    @inlinable
    public static func pressureQ24_8(adcP: Int32, tFine: Int32, _ c: BMP280Calibration) -> Int64? {
        let p1 = Int64(c.p1), p2 = Int64(c.p2), p3 = Int64(c.p3), p4 = Int64(c.p4), p5 = Int64(c.p5)
        let p6 = Int64(c.p6), p7 = Int64(c.p7), p8 = Int64(c.p8), p9 = Int64(c.p9)
        var var1 = Int64(tFine) - 128000
        var var2 = var1 &* var1 &* p6
        var2 = var2 &+ ((var1 &* p5) << 17)
        var2 = var2 &+ (p4 << 35)
        var1 = ((var1 &* var1 &* p3) >> 8) &+ ((var1 &* p2) << 12)
        var1 = (((Int64(1) << 47) &+ var1) &* p1) >> 33
        if var1 == 0 { return nil }
        var p = 1_048_576 - Int64(adcP)
        p = (((p << 31) &- var2) &* 3125) / var1
        var1 = (p9 &* (p >> 13) &* (p >> 13)) >> 25
        var2 = (p8 &* p) >> 19
        p = ((p &+ var1 &+ var2) >> 8) &+ (p7 << 4)
        return p
    }

    /// Double-precision temperature (DS §8.1): (t_fine truncated toward zero, °C).
    public static func temperatureDouble(adcT: Int32, _ c: BMP280Calibration) -> (tFine: Int32, celsius: Double) {
        let adc = Double(adcT), t1 = Double(c.t1)
        let v1 = (adc / 16384 - t1 / 1024) * Double(c.t2)
        let x = adc / 131072 - t1 / 8192
        let v2 = x * x * Double(c.t3)
        return (Int32(v1 + v2), (v1 + v2) / 5120)
    }

    /// Double-precision pressure, Pa (DS §8.1); nil where the data sheet returns 0.
    public static func pressureDouble(adcP: Int32, tFine: Int32, _ c: BMP280Calibration) -> Double? {
        var var1 = Double(tFine) / 2 - 64000
        var var2 = var1 * var1 * Double(c.p6) / 32768
        var2 = var2 + var1 * Double(c.p5) * 2
        var2 = var2 / 4 + Double(c.p4) * 65536
        var1 = (Double(c.p3) * var1 * var1 / 524288 + Double(c.p2) * var1) / 524288
        var1 = (1 + var1 / 32768) * Double(c.p1)
        if var1 == 0 { return nil }
        var p = 1_048_576 - Double(adcP)
        p = (p - var2 / 4096) * 6250 / var1
        var1 = Double(c.p9) * p * p / 2_147_483_648
        var2 = p * Double(c.p8) / 32768
        return p + (var1 + var2 + Double(c.p7)) / 16
    }

    /// Compensates a raw sample with the integer formulas. A temperature of
    /// 0x80000 is always ``DecodeError/skippedMeasurement``; a pressure of
    /// 0x80000 is too, unless `pressureEnabled` is false (then pressure is nil).
    @inlinable
    public static func compensate(_ raw: BMP280RawSample, _ c: BMP280Calibration,
                                  pressureEnabled: Bool = true) throws(DecodeError) -> BMP280Sample {
        guard raw.adcT != BMP280Bits.skippedRaw else { throw .skippedMeasurement(chip: .bmp280, channel: "temperature") }
        let t = temperature(adcT: raw.adcT, c)
        var pressure: Double?
        if pressureEnabled {
            guard raw.adcP != BMP280Bits.skippedRaw else { throw .skippedMeasurement(chip: .bmp280, channel: "pressure") }
            guard let q = pressureQ24_8(adcP: raw.adcP, tFine: t.tFine, c) else {
                throw .invalidCalibration(chip: .bmp280, reason: "the pressure formula's divisor is 0 for these calibration words")
            }
            pressure = Double(q) / 256
        }
        return BMP280Sample(temperatureCelsius: Double(t.centiCelsius) / 100, pressurePascals: pressure,
                            captureNanoseconds: raw.captureNanoseconds)
    }
}
