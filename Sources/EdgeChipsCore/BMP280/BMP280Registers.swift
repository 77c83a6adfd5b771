import EdgeValues


/// BMP280 registers. Source: Bosch BST-BMP280-DS001-26 rev 1.26, §4.2 memory
/// map and §4.3 register descriptions.
public enum BMP280Register: UInt8, Sendable, CaseIterable {
    /// calib00 (0x88): first of the 24 calibration bytes dig_T1..dig_P9 (DS §3.11.2).
    case calibration = 0x88
    /// id (0xD0), DS §4.3.1: 0x58.
    case id = 0xD0
    /// reset (0xE0), DS §4.3.2: write 0xB6 for a power-on reset.
    case reset = 0xE0
    /// status (0xF3), DS §4.3.3: bit 3 measuring, bit 0 im_update.
    case status = 0xF3
    /// ctrl_meas (0xF4), DS §4.3.4: [7:5] osrs_t, [4:2] osrs_p, [1:0] mode.
    case controlMeasurement = 0xF4
    /// config (0xF5), DS §4.3.5: [7:5] t_sb, [4:2] filter, [0] spi3w_en.
    /// Writes may be ignored in normal mode: write it in sleep.
    case config = 0xF5
    /// press_msb (0xF7): first of the 6-byte burst press_msb..temp_xlsb.
    case pressureMSB = 0xF7
    /// temp_msb (0xFA).
    case temperatureMSB = 0xFA

    public var name: String {
        switch self {
        case .calibration: return "calib00 (dig_T1 LSB)"
        case .id: return "id"
        case .reset: return "reset"
        case .status: return "status"
        case .controlMeasurement: return "ctrl_meas"
        case .config: return "config"
        case .pressureMSB: return "press_msb"
        case .temperatureMSB: return "temp_msb"
        }
    }

    /// Names for every register of the burst and calibration areas (messages).
    public static func name(of register: UInt8) -> String {
        if let r = BMP280Register(rawValue: register), r != .calibration { return r.name }
        switch register {
        case 0x88...0x9F:
            let words = ["dig_T1", "dig_T2", "dig_T3", "dig_P1", "dig_P2", "dig_P3", "dig_P4", "dig_P5",
                         "dig_P6", "dig_P7", "dig_P8", "dig_P9"]
            let i = Int(register - 0x88)
            return "calib\(i < 10 ? "0" : "")\(i) (\(words[i / 2]) \(i % 2 == 0 ? "LSB" : "MSB"))"
        case 0xF8: return "press_lsb"
        case 0xF9: return "press_xlsb"
        case 0xFB: return "temp_lsb"
        case 0xFC: return "temp_xlsb"
        default: return "register \(hex(register))"
        }
    }
}

/// Bit values (DS §4.3).
public enum BMP280Bits {
    /// Written to `reset` (0xE0) for a soft reset.
    public static let softResetCommand: UInt8 = 0xB6
    /// status.measuring (bit 3).
    public static let measuring: UInt8 = 0x08
    /// status.im_update (bit 0): NVM being copied to the image registers.
    public static let imageUpdate: UInt8 = 0x01
    /// The raw value of a skipped (or not yet measured) channel.
    public static let skippedRaw: Int32 = 0x80000
}

/// osrs_t / osrs_p (DS §3.3.1/3.3.2): 000 skipped, 001 ×1 ... 101 ×16.
public enum BMP280Oversampling: UInt8, Sendable, CaseIterable, Equatable {
    case skipped = 0, x1 = 1, x2 = 2, x4 = 3, x8 = 4, x16 = 5
    /// Oversampling factor (0 = skipped), the config key's value.
    public var factor: Int { [0, 1, 2, 4, 8, 16][Int(rawValue)] }
    public init?(factor: Int) {
        guard let r = Self.allCases.first(where: { $0.factor == factor }) else { return nil }
        self = r
    }
}

/// IIR filter coefficient, config.filter (DS §3.3.3).
public enum BMP280Filter: UInt8, Sendable, CaseIterable, Equatable {
    case off = 0, c2 = 1, c4 = 2, c8 = 3, c16 = 4
    public var coefficient: Int { [0, 2, 4, 8, 16][Int(rawValue)] }
    public init?(coefficient: Int) {
        guard let r = Self.allCases.first(where: { $0.coefficient == coefficient }) else { return nil }
        self = r
    }
}

/// Normal-mode standby time, config.t_sb (DS Table 11). On a BME280 codes
/// 110/111 mean 10/20 ms instead of 2000/4000 ms.
public enum BMP280Standby: UInt8, Sendable, CaseIterable, Equatable {
    case ms0_5 = 0, ms62_5 = 1, ms125 = 2, ms250 = 3, ms500 = 4, ms1000 = 5, ms2000 = 6, ms4000 = 7
    /// Standby time on a BMP280, ms.
    public var milliseconds: Double { [0.5, 62.5, 125, 250, 500, 1000, 2000, 4000][Int(rawValue)] }
    public init?(milliseconds: Double) {
        guard let r = Self.allCases.first(where: { $0.milliseconds == milliseconds }) else { return nil }
        self = r
    }
}

/// Power mode, ctrl_meas.mode (DS §3.6).
public enum BMP280Mode: UInt8, Sendable, CaseIterable, Equatable {
    case sleep = 0, forced = 1, normal = 3
    public var key: String {
        switch self { case .sleep: return "sleep"; case .forced: return "forced"; case .normal: return "normal" }
    }
    public init?(key: String) {
        guard let r = Self.allCases.first(where: { $0.key == key }) else { return nil }
        self = r
    }
}

/// Parts that answer at 0x76/0x77: accepted variants and known look-alikes
/// are rows (id register: BST-BMP280-DS001-26 rev 1.26 §4.3.1; the other IDs
/// from Linux `drivers/iio/pressure/bmp280-core.c` chip_info and Bosch's
/// BMP280_driver, which also accepts the sample IDs 0x56/0x57).
public struct BMP280Variant: Sendable, Equatable, CustomStringConvertible {
    /// Value of `id` (0xD0).
    public var chipID: UInt8
    public var part: String
    /// Whether the driver runs it (pressure and temperature).
    public var isSupported: Bool
    /// BME280: t_sb codes 110/111 mean 10/20 ms.
    public var isBME280: Bool
    /// What to log (nil for a production BMP280); for unsupported parts, why.
    public var note: String?

    public var description: String { part }

    public static let known: [BMP280Variant] = [
        .init(chipID: 0x58, part: "BMP280", isSupported: true, isBME280: false, note: nil),
        .init(chipID: 0x56, part: "BMP280 (engineering sample, id 0x56)", isSupported: true, isBME280: false,
              note: "id 0x56 is a BMP280 engineering sample: registers and formulas match, accuracy is not guaranteed"),
        .init(chipID: 0x57, part: "BMP280 (engineering sample, id 0x57)", isSupported: true, isBME280: false,
              note: "id 0x57 is a BMP280 engineering sample: registers and formulas match, accuracy is not guaranteed"),
        .init(chipID: 0x60, part: "BME280", isSupported: true, isBME280: true,
              note: "this is a BME280 run as a BMP280: pressure and temperature work, humidity is not read (configure the chip as kind bme280 to read it), and standby_ms 2000/4000 are not available (its t_sb codes 110/111 mean 10/20 ms)"),
        .init(chipID: 0x55, part: "BMP180/BMP085", isSupported: false, isBME280: false,
              note: "a BMP180/BMP085 uses a different protocol and compensation (GY-87/GY-80 boards)"),
        .init(chipID: 0x61, part: "BME680/BME688", isSupported: false, isBME280: false,
              note: "a BME680/688 gas sensor has a different register map"),
    ]

    public static let bmp280 = known[0]

    public static func lookup(chipID: UInt8) -> BMP280Variant? { known.first { $0.chipID == chipID } }
}
