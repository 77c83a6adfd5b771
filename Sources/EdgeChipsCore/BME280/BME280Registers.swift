import EdgeValues

/// The registers a BME280 adds to the BMP280's map. Source: Bosch
/// BST-BME280-DS002 (rev 1.6, September 2018) §5.3 memory map, §5.4
/// register descriptions, §4.2.2 Table 16 (trimming parameters). Everything
/// else (id, reset, status, ctrl_meas, config, P/T data, the P/T trimming
/// words) is the BMP280's: ``BMP280Register``.
public enum BME280Register: UInt8, Sendable, CaseIterable {
    /// calib25 (0xA1): dig_H1, unsigned char.
    case humidityCalibrationH1 = 0xA1
    /// calib26 (0xE1): first of dig_H2..dig_H6 (0xE1..0xE7).
    case humidityCalibrationH2 = 0xE1
    /// ctrl_hum (0xF2), §5.4.3: [2:0] osrs_h. Changes only take effect after
    /// a write to ctrl_meas.
    case controlHumidity = 0xF2
    /// hum_msb (0xFD), §5.4.8: humidity is 16 bits, hum_msb << 8 | hum_lsb (0xFE).
    case humidityMSB = 0xFD

    public var name: String { Self.name(of: rawValue) }

    /// Names for the BME280's own registers, the BMP280's otherwise.
    public static func name(of register: UInt8) -> String {
        switch register {
        case 0xA1: return "calib25 (dig_H1)"
        case 0xE1: return "calib26 (dig_H2 LSB)"
        case 0xE2: return "calib27 (dig_H2 MSB)"
        case 0xE3: return "calib28 (dig_H3)"
        case 0xE4: return "calib29 (dig_H4 [11:4])"
        case 0xE5: return "calib30 (dig_H4 [3:0], dig_H5 [3:0])"
        case 0xE6: return "calib31 (dig_H5 [11:4])"
        case 0xE7: return "calib32 (dig_H6)"
        case 0xF2: return "ctrl_hum"
        case 0xFD: return "hum_msb"
        case 0xFE: return "hum_lsb"
        default: return BMP280Register.name(of: register)
        }
    }
}

/// Fixed values (BST-BME280-DS002).
public enum BME280Bits {
    /// `id` (0xD0) of a BME280 (§5.4.1).
    public static let chipID: UInt8 = 0x60
    /// Raw humidity of a skipped (or not yet measured) channel (§5.4.8, reset value 0x8000).
    public static let humiditySkippedRaw: Int32 = 0x8000
    /// ctrl_hum.osrs_h mask; bits 7..3 are unused and left as found.
    public static let humidityOversamplingMask: UInt8 = 0x07
}
