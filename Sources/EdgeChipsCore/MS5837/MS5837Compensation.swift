// MS5837-30BA PROM, CRC-4 and temperature compensation: pure functions.
//
// Source: TE MS5837-30BA datasheet REV C2 (12/2019), "Pressure and
// temperature calculation" (Figure 9), "Second order temperature
// compensation" (Figure 10) and "CRC check" (the CRC-4 over the PROM,
// polynomial x^4 + x + 1 applied as in TE application note AN520).
import EdgeValues

/// The calibration PROM: 7 words (0xA0..0xAC). Word 0 holds the CRC in bits
/// [15:12] and the product version in bits [11:5]; words 1..6 are C1..C6.
public struct MS5837Calibration: Sendable, Equatable, Codable {
    public var words: [UInt16]

    /// C1 SENS_T1, C2 OFF_T1, C3 TCS, C4 TCO, C5 T_REF, C6 TEMPSENS.
    public func c(_ i: Int) -> Int64 { Int64(words[i]) }

    /// Checks the CRC and the word count; throws ``DecodeError/invalidCalibration``.
    public init(words: [UInt16]) throws(DecodeError) {
        guard words.count == 7 else {
            throw .invalidCalibration(chip: .ms5837, reason: "expected 7 PROM words (0xA0..0xAC), got \(words.count)")
        }
        if words.allSatisfy({ $0 == 0 }) || words.allSatisfy({ $0 == 0xFFFF }) {
            throw .invalidCalibration(chip: .ms5837, reason: "every PROM word reads \(hex16(words[0])) (a bad read, or no MS5837)")
        }
        let stored = UInt8(words[0] >> 12), computed = Self.crc4(words)
        guard stored == computed else {
            throw .invalidCalibration(chip: .ms5837, reason: "PROM CRC-4 mismatch: word 0 stores \(stored), the words give \(computed) (a corrupted PROM read)")
        }
        self.words = words
    }

    /// Builds a PROM from C1..C6 and the version code, computing the CRC
    /// (simulators and tests).
    public init(c1: UInt16, c2: UInt16, c3: UInt16, c4: UInt16, c5: UInt16, c6: UInt16, versionCode: UInt8 = 0x1A) {
        var w: [UInt16] = [UInt16(versionCode & 0x7F) << 5, c1, c2, c3, c4, c5, c6]
        w[0] |= UInt16(Self.crc4(w)) << 12
        words = w
    }

    /// The datasheet's example coefficients (Figure 9 "Example / typical").
    public static let datasheetExample = MS5837Calibration(c1: 34982, c2: 36352, c3: 20328, c4: 22354, c5: 26646, c6: 26146)

    /// CRC-4 over the 7 words plus a zero eighth word, with word 0's CRC
    /// nibble cleared: 16 bytes MSB first through x^4 + x + 1 (0x3000 at
    /// bit 15 of a 16-bit remainder), the result is the top nibble.
    public static func crc4(_ words: [UInt16]) -> UInt8 {
        var w = [UInt16](repeating: 0, count: 8)
        for i in 0..<min(7, words.count) { w[i] = words[i] }
        w[0] &= 0x0FFF
        var rem: UInt16 = 0
        for byteIndex in 0..<16 {
            let word = w[byteIndex >> 1]
            rem ^= byteIndex & 1 == 1 ? word & 0x00FF : word >> 8
            for _ in 0..<8 {
                rem = rem & 0x8000 != 0 ? (rem << 1) ^ 0x3000 : rem << 1
            }
        }
        return UInt8((rem >> 12) & 0xF)
    }

    public var variant: MS5837Variant? { MS5837Variant.lookup(word0: words[0]) }
}

/// One raw reading: D1 (pressure) and D2 (temperature), 24 bits each, and
/// when the pair was captured (monotonic ns).
public struct MS5837RawSample: Sendable, Equatable {
    public var d1: UInt32
    public var d2: UInt32
    public var captureNanoseconds: UInt64
    public init(d1: UInt32, d2: UInt32, captureNanoseconds: UInt64 = 0) {
        self.d1 = d1; self.d2 = d2; self.captureNanoseconds = captureNanoseconds
    }
}

/// A compensated reading.
public struct MS5837Sample: Sendable, Equatable {
    /// Pressure, Pa (the chip's unit is 0.1 mbar = 10 Pa).
    public var pressurePascals: Double
    /// Temperature, °C (the chip's unit is 0.01 °C).
    public var temperatureCelsius: Double
    public var captureNanoseconds: UInt64
    public init(pressurePascals: Double, temperatureCelsius: Double, captureNanoseconds: UInt64) {
        self.pressurePascals = pressurePascals; self.temperatureCelsius = temperatureCelsius
        self.captureNanoseconds = captureNanoseconds
    }
}

/// The datasheet's integer compensation.
public enum MS5837Compensation {
    /// Every intermediate value, for tests against the datasheet's table.
    public struct Steps: Sendable, Equatable {
        public var dT: Int64
        /// First-order temperature, 0.01 °C.
        public var temp: Int64
        public var off: Int64
        public var sens: Int64
        /// First-order pressure, 0.1 mbar.
        public var p: Int64
        /// Second-order temperature, 0.01 °C.
        public var temp2: Int64
        /// Second-order pressure, 0.1 mbar.
        public var p2: Int64
    }

    /// Runs Figure 9 and Figure 10 on D1, D2. Divisions by powers of two are
    /// arithmetic shifts (floor), which reproduces the datasheet's example
    /// values. A D1 or D2 of 0 is the chip's "no result" answer (ADC read
    /// before the conversion ended, or read twice) and is
    /// ``DecodeError/skippedMeasurement``.
    public static func steps(d1: UInt32, d2: UInt32, _ cal: MS5837Calibration) throws(DecodeError) -> Steps {
        guard d2 != 0 else { throw .skippedMeasurement(chip: .ms5837, channel: "temperature (D2 read as 0: no finished conversion)") }
        guard d1 != 0 else { throw .skippedMeasurement(chip: .ms5837, channel: "pressure (D1 read as 0: no finished conversion)") }
        let D1 = Int64(d1), D2 = Int64(d2)
        let dT = D2 - cal.c(5) << 8
        let temp = 2000 + (dT * cal.c(6)) >> 23
        let off = cal.c(2) << 16 + (cal.c(4) * dT) >> 7
        let sens = cal.c(1) << 15 + (cal.c(3) * dT) >> 8
        let p = ((D1 * sens) >> 21 - off) >> 13
        // Second order (Figure 10).
        var ti: Int64, offi: Int64, sensi: Int64
        let low = temp - 2000
        if temp < 2000 {
            ti = (3 * dT * dT) >> 33
            offi = (3 * low * low) >> 1
            sensi = (5 * low * low) >> 3
            if temp < -1500 {
                let vlow = temp + 1500
                offi += 7 * vlow * vlow
                sensi += 4 * vlow * vlow
            }
        } else {
            ti = (2 * dT * dT) >> 37
            offi = (low * low) >> 4
            sensi = 0
        }
        let off2 = off - offi, sens2 = sens - sensi
        let p2 = ((D1 * sens2) >> 21 - off2) >> 13
        return Steps(dT: dT, temp: temp, off: off, sens: sens, p: p, temp2: temp - ti, p2: p2)
    }

    /// Compensated pressure (Pa) and temperature (°C); `secondOrder` applies
    /// Figure 10 (recommended; the datasheet's accuracy figures assume it).
    public static func compensate(_ raw: MS5837RawSample, _ cal: MS5837Calibration,
                                  secondOrder: Bool = true) throws(DecodeError) -> MS5837Sample {
        let s = try steps(d1: raw.d1, d2: raw.d2, cal)
        let p = secondOrder ? s.p2 : s.p, t = secondOrder ? s.temp2 : s.temp
        return MS5837Sample(pressurePascals: Double(p) * 10, temperatureCelsius: Double(t) / 100,
                            captureNanoseconds: raw.captureNanoseconds)
    }
}

func hex16(_ v: UInt16) -> String {
    let s = String(v, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 4 - s.count)) + s
}
