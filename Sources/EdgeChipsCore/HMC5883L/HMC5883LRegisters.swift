import EdgeValues

/// HMC5883L registers. Source: Honeywell "3-Axis Digital Compass IC
/// HMC5883L" data sheet, Form #900405 Rev E (February 2013), "Registers":
/// register list (Table 2) and the register descriptions that follow it.
/// 7-bit address 0x1E.
public enum HMC5883LRegister: UInt8, Sendable, CaseIterable {
    /// Configuration register A (0x00, DS Table 3/4): [6:5] MA samples
    /// averaged, [4:2] DO output rate, [1:0] MS measurement (bias) mode. Resets to 0x10.
    case configurationA = 0x00
    /// Configuration register B (0x01, DS Table 7/8): [7:5] GN gain, [4:0]
    /// must be 0. Resets to 0x20 (1090 LSB/G).
    case configurationB = 0x01
    /// Mode register (0x02, DS Table 10-12): bit 7 HS (3400 kHz I2C), [1:0] MD:
    /// 00 continuous, 01 single (reset value), 1x idle.
    case mode = 0x02
    /// Data output X MSB (0x03): X, **Z**, Y as big-endian int16 at 0x03..0x08.
    case dataXMSB = 0x03
    /// Data output Y LSB (0x08): the last data byte.
    case dataYLSB = 0x08
    /// Status (0x09, DS Table 16/17): bit 1 LOCK, bit 0 RDY.
    case status = 0x09
    /// Identification register A (0x0A): 'H' (0x48); B (0x0B) '4', C (0x0C) '3'.
    case identificationA = 0x0A

    public var name: String { Self.name(of: rawValue) }

    /// Names for every register of the map (messages, dumps).
    public static func name(of register: UInt8) -> String {
        let names = ["CONFIG_A", "CONFIG_B", "MODE", "DATA_X_MSB", "DATA_X_LSB", "DATA_Z_MSB", "DATA_Z_LSB",
                     "DATA_Y_MSB", "DATA_Y_LSB", "STATUS", "ID_A", "ID_B", "ID_C"]
        return Int(register) < names.count ? names[Int(register)] : "register \(hex(register))"
    }
}

/// Bit values and fixed numbers (DS register descriptions).
public enum HMC5883LBits {
    /// Identification registers A, B, C (0x0A..0x0C): ASCII "H43".
    public static let identification: [UInt8] = [0x48, 0x34, 0x33]
    /// STATUS.RDY: all six data registers hold a new measurement.
    public static let ready: UInt8 = 0x01
    /// STATUS.LOCK: the data registers are locked (some but not all six read,
    /// or the mode register read) until all six are read.
    public static let lock: UInt8 = 0x02
    /// A data register holds -4096 when its channel's ADC over- or underflowed
    /// (DS "Data Output X Registers A and B"); valid data is -2048...2047.
    public static let overflowValue: Int16 = -4096
    /// Valid output range (DS Table 9, "Output Range" 0xF800..0x07FF).
    public static let outputRange: ClosedRange<Int16> = -2048...2047
    /// Power-on values of CRA, CRB and mode (DS Tables 3, 7, 10).
    public static let configurationAReset: UInt8 = 0x10
    public static let configurationBReset: UInt8 = 0x20
    public static let modeReset: UInt8 = 0x01
}

/// CRA.MA: samples averaged per output, 1 (00), 2, 4, 8 (11).
public enum HMC5883LAveraging: UInt8, Sendable, CaseIterable, Equatable {
    case x1 = 0, x2 = 1, x4 = 2, x8 = 3
    public var samples: Int { 1 << Int(rawValue) }
    public init?(samples: Int) {
        guard let r = Self.allCases.first(where: { $0.samples == samples }) else { return nil }
        self = r
    }
}

/// CRA.DO: typical continuous-mode output rate (DS Table 5): 0.75, 1.5, 3,
/// 7.5, 15 (reset value), 30, 75 Hz; code 111 is reserved.
public enum HMC5883LOutputRate: UInt8, Sendable, CaseIterable, Equatable {
    case hz0_75 = 0, hz1_5 = 1, hz3 = 2, hz7_5 = 3, hz15 = 4, hz30 = 5, hz75 = 6
    public var hertz: Double { [0.75, 1.5, 3, 7.5, 15, 30, 75][Int(rawValue)] }
    public init?(hertz: Double) {
        guard let r = Self.allCases.first(where: { $0.hertz == hertz }) else { return nil }
        self = r
    }
}

/// CRA.MS: measurement configuration (DS Table 6). Only `normal` is used
/// for readings; the bias modes are the self test.
public enum HMC5883LBias: UInt8, Sendable, CaseIterable, Equatable {
    case normal = 0, positive = 1, negative = 2
}

/// CRB.GN: gain (DS Table 9), with the recommended field range and counts
/// per gauss. 1 G = 100 µT. The first measurement after a gain change still
/// uses the old gain.
public enum HMC5883LGain: UInt8, Sendable, CaseIterable, Equatable {
    case gauss0_88 = 0, gauss1_3 = 1, gauss1_9 = 2, gauss2_5 = 3, gauss4_0 = 4, gauss4_7 = 5, gauss5_6 = 6, gauss8_1 = 7
    /// Recommended sensor field range, ± gauss.
    public var rangeGauss: Double { [0.88, 1.3, 1.9, 2.5, 4.0, 4.7, 5.6, 8.1][Int(rawValue)] }
    /// Gain, LSB per gauss.
    public var lsbPerGauss: Double { [1370, 1090, 820, 660, 440, 390, 330, 230][Int(rawValue)] }
    /// µT per count (100 / gain).
    @inlinable public var microteslaPerLSB: Double { 100 / lsbPerGauss }
    public init?(rangeGauss: Double) {
        guard let r = Self.allCases.first(where: { $0.rangeGauss == rangeGauss }) else { return nil }
        self = r
    }
}

/// Mode register MD (DS Table 12): 00 continuous, 01 single (reset value;
/// measures once, then idles), 10/11 idle.
public enum HMC5883LMode: UInt8, Sendable, CaseIterable, Equatable {
    case continuous = 0, single = 1, idle = 2
    public var key: String { ["continuous", "single", "idle"][Int(rawValue)] }
    public init?(key: String) {
        guard let r = Self.allCases.first(where: { $0.key == key }) else { return nil }
        self = r
    }
}

/// HMC5883L settings. `Codable`, snake_case keys, each optional and validated:
///
/// | key | unit | allowed | default |
/// |---|---|---|---|
/// | `mode` | | continuous, idle | continuous |
/// | `output_rate_hz` | Hz | 0.75, 1.5, 3, 7.5, 15, 30, 75 | 75 |
/// | `range_gauss` | ± G (1 G = 100 µT) | 0.88, 1.3, 1.9, 2.5, 4.0, 4.7, 5.6, 8.1 | 1.3 |
/// | `averaging` | samples | 1, 2, 4, 8 | 8 |
///
/// 75 Hz with 8-sample averaging is the highest continuous rate (DS Table 5)
/// at the lowest noise; ±1.3 G (the reset gain) holds Earth's field
/// (0.25-0.65 G) with room for a board's hard iron. Single-measurement mode
/// is not offered: the agent runs the chip continuously.
public struct HMC5883LConfiguration: Sendable, Equatable, Codable {
    public var mode: HMC5883LMode
    public var outputRate: HMC5883LOutputRate
    public var gain: HMC5883LGain
    public var averaging: HMC5883LAveraging

    public init(mode: HMC5883LMode = .continuous, outputRate: HMC5883LOutputRate = .hz75,
                gain: HMC5883LGain = .gauss1_3, averaging: HMC5883LAveraging = .x8) {
        self.mode = mode; self.outputRate = outputRate; self.gain = gain; self.averaging = averaging
    }

    public static let `default` = HMC5883LConfiguration()

    /// The chip's state after power-on (CRA 0x10, CRB 0x20, mode 0x01).
    public static let powerOn = HMC5883LConfiguration(mode: .single, outputRate: .hz15, gain: .gauss1_3, averaging: .x1)

    /// CRA = MA << 5 | DO << 2 | MS (normal); CRA7 is written 0 as the DS asks.
    public var configurationAValue: UInt8 { averaging.rawValue << 5 | outputRate.rawValue << 2 | HMC5883LBias.normal.rawValue }
    /// CRB = GN << 5; bits 4..0 must be 0.
    public var configurationBValue: UInt8 { gain.rawValue << 5 }
    /// Mode register: MD, HS = 0.
    public var modeValue: UInt8 { mode.rawValue }

    /// CRA, CRB, then the mode (the DS's continuous-mode example: "Write CRA
    /// (00) … Write CRB (01) … Write Mode (02)"). Each row owns its register.
    public var registerTable: RegisterTable {
        RegisterTable([
            .value(HMC5883LRegister.configurationA.rawValue, configurationAValue),
            .value(HMC5883LRegister.configurationB.rawValue, configurationBValue),
            .value(HMC5883LRegister.mode.rawValue, modeValue),
        ])
    }

    enum CodingKeys: String, CodingKey {
        case mode, outputRateHz = "output_rate_hz", rangeGauss = "range_gauss", averaging
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = HMC5883LConfiguration.default
        mode = HMC5883LMode(key: try c.decodeAllowed(.mode, allowed: ["continuous", "idle"], default: d.mode.key, unit: ""))!
        outputRate = HMC5883LOutputRate(hertz: try c.decodeAllowed(
            .outputRateHz, allowed: HMC5883LOutputRate.allCases.map(\.hertz), default: d.outputRate.hertz, unit: "Hz"))!
        gain = HMC5883LGain(rangeGauss: try c.decodeAllowed(
            .rangeGauss, allowed: HMC5883LGain.allCases.map(\.rangeGauss), default: d.gain.rangeGauss,
            unit: "± gauss; 1 G = 100 µT"))!
        averaging = HMC5883LAveraging(samples: try c.decodeAllowed(
            .averaging, allowed: HMC5883LAveraging.allCases.map(\.samples), default: d.averaging.samples,
            unit: "samples averaged per output"))!
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(mode.key, forKey: .mode)
        try c.encode(outputRate.hertz, forKey: .outputRateHz)
        try c.encode(gain.rangeGauss, forKey: .rangeGauss)
        try c.encode(averaging.samples, forKey: .averaging)
    }
}
