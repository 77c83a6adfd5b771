import EdgeValues

/// The BME280's humidity trimming words (BST-BME280-DS002 §4.2.2 Table 16):
/// dig_H1 (0xA1, unsigned char), dig_H2 (0xE1/0xE2, signed short), dig_H3
/// (0xE3, unsigned char), dig_H4 (0xE4 [11:4] / 0xE5 [3:0], 12-bit signed),
/// dig_H5 (0xE6 [11:4] / 0xE5 [7:4], 12-bit signed), dig_H6 (0xE7, signed char).
public struct BME280HumidityCalibration: Sendable, Equatable {
    public var h1: UInt8, h2: Int16, h3: UInt8, h4: Int16, h5: Int16, h6: Int8

    public init(h1: UInt8, h2: Int16, h3: UInt8, h4: Int16, h5: Int16, h6: Int8) {
        self.h1 = h1; self.h2 = h2; self.h3 = h3; self.h4 = h4; self.h5 = h5; self.h6 = h6
    }

    /// Parses dig_H1 and the 7 bytes at 0xE1..0xE7. H4 and H5 take their
    /// upper 8 bits from 0xE4 / 0xE6 as signed bytes (so they are 12-bit
    /// signed values), their low nibbles from 0xE5. All-0x00 or all-0xFF
    /// bytes (a bad read), or dig_H2 = 0 (every humidity would be 0 %), are
    /// ``DecodeError/invalidCalibration``.
    public init(h1: UInt8, e1toE7 b: [UInt8]) throws(DecodeError) {
        guard b.count == 7 else {
            throw .invalidCalibration(chip: .bme280, reason: "expected 7 humidity trimming bytes at 0xE1..0xE7, got \(b.count)")
        }
        if b.allSatisfy({ $0 == 0x00 }) || b.allSatisfy({ $0 == 0xFF }) {
            throw .invalidCalibration(chip: .bme280, reason: "all 7 humidity trimming bytes at 0xE1..0xE7 read \(hex(b[0])) (a bad read, or not a BME280)")
        }
        let h4 = Int16(Int8(bitPattern: b[3])) * 16 | Int16(b[4] & 0x0F)
        let h5 = Int16(Int8(bitPattern: b[5])) * 16 | Int16(b[4] >> 4)
        self.init(h1: h1, h2: int16LittleEndian(b[0], b[1]), h3: b[2], h4: h4, h5: h5, h6: Int8(bitPattern: b[6]))
        guard h2 != 0 else {
            throw .invalidCalibration(chip: .bme280, reason: "dig_H2 is 0, so every humidity would compensate to 0 %")
        }
    }
}

/// Humidity compensation: the data sheet's 32-bit integer formula
/// (BST-BME280-DS002 §4.2.3, `bme280_compensate_H_int32`), bit for bit, in
/// Int64 with Swift's arithmetic `>>` (floor, as C's `>>` on the data
/// sheet's int32 on every compiler that matters). t_fine comes from the
/// BMP280's temperature compensation (the two chips share P and T:
/// ``BMP280Compensation``).
public enum BME280HumidityCompensation {
    /// Relative humidity in Q22.10 %RH (divide by 1024), clamped by the
    /// formula to 0...100 %RH (0...102400).
    @inlinable
    public static func humidityQ22_10(adcH: Int32, tFine: Int32, _ c: BME280HumidityCalibration) -> UInt32 {
        let h1 = Int64(c.h1), h2 = Int64(c.h2), h3 = Int64(c.h3), h4 = Int64(c.h4), h5 = Int64(c.h5), h6 = Int64(c.h6)
        var v = Int64(tFine) - 76800
        let a = ((Int64(adcH) << 14) - (h4 << 20) - (h5 * v) + 16384) >> 15
        let b = (((((v * h6) >> 10) * (((v * h3) >> 11) + 32768)) >> 10) + 2_097_152) * h2 + 8192
        // The data sheet's int32 products wrap where C's would; keep 32-bit semantics.
        v = Int64(Int32(truncatingIfNeeded: a &* (b >> 14)))
        v = v - (((((v >> 15) * (v >> 15)) >> 7) * h1) >> 4)
        v = min(max(v, 0), 419_430_400)
        return UInt32(v >> 12)
    }

    /// Relative humidity, %, from the integer formula.
    @inlinable
    public static func humidityPercent(adcH: Int32, tFine: Int32, _ c: BME280HumidityCalibration) -> Double {
        Double(humidityQ22_10(adcH: adcH, tFine: tFine, c)) / 1024
    }
}
