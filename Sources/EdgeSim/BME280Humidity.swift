// Bosch BME280 humidity, transcribed from the data sheet BST-BME280-DS002
// itself (not from any driver): trimming registers (§4.2.2 Table 16) and the
// double-precision humidity compensation (§8.1). The BMP280Model's BME280
// variant uses it.

/// The six humidity trimming words: dig_H1 at 0xA1 and dig_H2..dig_H6 in
/// 0xE1..0xE7, H4 and H5 packed as 12-bit signed values (DS Table 16).
public struct BME280HumidityCalibration: Codable, Sendable, Equatable {
    public var H1: UInt8, H2: Int16, H3: UInt8, H4: Int16, H5: Int16, H6: Int8

    public init(H1: UInt8, H2: Int16, H3: UInt8, H4: Int16, H5: Int16, H6: Int8) {
        precondition((-2048...2047).contains(H4) && (-2048...2047).contains(H5), "dig_H4/dig_H5 are 12-bit")
        self.H1 = H1; self.H2 = H2; self.H3 = H3; self.H4 = H4; self.H5 = H5; self.H6 = H6
    }

    /// Values of the order read from production parts (used by default).
    public static let typical = BME280HumidityCalibration(H1: 75, H2: 362, H3: 0, H4: 313, H5: 50, H6: 30)

    /// 0xA1: dig_H1.
    public var a1: UInt8 { H1 }
    /// 0xE1..0xE7: H2 LSB, H2 MSB, H3, H4[11:4], H5[3:0]<<4 | H4[3:0], H5[11:4], H6.
    public var e1toE7: [UInt8] {
        let h2 = UInt16(bitPattern: H2), h4 = UInt16(bitPattern: H4) & 0xFFF, h5 = UInt16(bitPattern: H5) & 0xFFF
        return [UInt8(h2 & 0xFF), UInt8(h2 >> 8), H3, UInt8(h4 >> 4),
                UInt8((h5 & 0xF) << 4 | (h4 & 0xF)), UInt8(h5 >> 4), UInt8(bitPattern: H6)]
    }

    /// Relative humidity, % (DS §8.1 double formula, clamped to 0...100).
    public func humidity(adcH: Double, tFine: Double) -> Double {
        var h = tFine - 76800
        h = (adcH - (Double(H4) * 64 + Double(H5) / 16384 * h))
            * (Double(H2) / 65536 * (1 + Double(H6) / 67108864 * h * (1 + Double(H3) / 67108864 * h)))
        h = h * (1 - Double(H1) * h / 524288)
        return min(100, max(0, h))
    }

    /// The continuous adc_H (0...65535) that compensates to `percent` at `tFine` (bisection).
    public func rawHumidity(for percent: Double, tFine: Double) -> Double {
        var lo = 0.0, hi = 65535.0
        for _ in 0..<60 {
            let mid = (lo + hi) / 2
            if humidity(adcH: mid, tFine: tFine) < percent { lo = mid } else { hi = mid }
        }
        return (lo + hi) / 2
    }
}
