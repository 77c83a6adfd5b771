/// QMC5883L registers. Source: QST QMC5883L data sheet rev 1.0, register
/// map and register definitions.
public enum QMC5883LRegister: UInt8, Sendable, CaseIterable {
    /// X LSB (0x00); X, Y, Z are little-endian int16 at 0x00..0x05.
    case dataXLSB = 0x00
    /// Z MSB (0x05): reading it releases the data lock.
    case dataZMSB = 0x05
    /// Status (0x06): bit 0 DRDY, bit 1 OVL, bit 2 DOR.
    case status = 0x06
    /// TOUT LSB (0x07), relative temperature, int16 little-endian.
    case temperatureLSB = 0x07
    /// CTRL1 (0x09): [7:6] OSR, [5:4] RNG, [3:2] ODR, [1:0] MODE.
    case control1 = 0x09
    /// CTRL2 (0x0A): bit 7 SOFT_RST, bit 6 ROL_PNT, bit 0 INT_ENB (1 disables DRDY pin).
    case control2 = 0x0A
    /// SET/RESET period (0x0B): the data sheet recommends 0x01.
    case setResetPeriod = 0x0B
    /// Chip ID (0x0D): 0xFF.
    case chipID = 0x0D

    public var name: String {
        switch self {
        case .dataXLSB: return "DATA_X_LSB"
        case .dataZMSB: return "DATA_Z_MSB"
        case .status: return "STATUS"
        case .temperatureLSB: return "TOUT_LSB"
        case .control1: return "CTRL1"
        case .control2: return "CTRL2"
        case .setResetPeriod: return "SET_RESET_PERIOD"
        case .chipID: return "CHIP_ID"
        }
    }

    public static func name(of register: UInt8) -> String {
        let names = ["DATA_X_LSB", "DATA_X_MSB", "DATA_Y_LSB", "DATA_Y_MSB", "DATA_Z_LSB", "DATA_Z_MSB",
                     "STATUS", "TOUT_LSB", "TOUT_MSB", "CTRL1", "CTRL2", "SET_RESET_PERIOD", "reserved", "CHIP_ID"]
        return Int(register) < names.count ? names[Int(register)] : "register \(register)"
    }
}

public enum QMC5883LBits {
    /// Expected CHIP_ID (0x0D) value.
    public static let chipID: UInt8 = 0xFF
    /// CTRL2.SOFT_RST.
    public static let softReset: UInt8 = 0x80
    /// Recommended SET/RESET period.
    public static let setResetPeriod: UInt8 = 0x01
    /// STATUS bits.
    public static let dataReady: UInt8 = 0x01
    public static let overflow: UInt8 = 0x02
    public static let dataSkipped: UInt8 = 0x04
}

/// CTRL1.MODE.
public enum QMC5883LMode: UInt8, Sendable, CaseIterable, Equatable {
    case standby = 0, continuous = 1
    public var key: String { self == .standby ? "standby" : "continuous" }
    public init?(key: String) {
        guard let r = Self.allCases.first(where: { $0.key == key }) else { return nil }
        self = r
    }
}

/// CTRL1.ODR: 10, 50, 100, 200 Hz.
public enum QMC5883LOutputRate: UInt8, Sendable, CaseIterable, Equatable {
    case hz10 = 0, hz50 = 1, hz100 = 2, hz200 = 3
    public var hertz: Int { [10, 50, 100, 200][Int(rawValue)] }
    public init?(hertz: Int) {
        guard let r = Self.allCases.first(where: { $0.hertz == hertz }) else { return nil }
        self = r
    }
}

/// CTRL1.RNG: ±2 G (12000 LSB/G) or ±8 G (3000 LSB/G). 1 G = 100 µT.
public enum QMC5883LRange: UInt8, Sendable, CaseIterable, Equatable {
    case gauss2 = 0, gauss8 = 1
    public var gauss: Int { self == .gauss2 ? 2 : 8 }
    /// Counts per gauss.
    public var lsbPerGauss: Double { self == .gauss2 ? 12000 : 3000 }
    /// µT per count.
    @inlinable public var microteslaPerLSB: Double { 100 / lsbPerGauss }
    public init?(gauss: Int) {
        guard let r = Self.allCases.first(where: { $0.gauss == gauss }) else { return nil }
        self = r
    }
}

/// CTRL1.OSR: 512 (00), 256, 128, 64 (11).
public enum QMC5883LOversampling: UInt8, Sendable, CaseIterable, Equatable {
    case x512 = 0, x256 = 1, x128 = 2, x64 = 3
    public var ratio: Int { [512, 256, 128, 64][Int(rawValue)] }
    public init?(ratio: Int) {
        guard let r = Self.allCases.first(where: { $0.ratio == ratio }) else { return nil }
        self = r
    }
}

/// QMC5883L settings. `Codable`, snake_case keys, each optional and validated:
///
/// | key | unit | allowed | default |
/// |---|---|---|---|
/// | `mode` | | standby, continuous | continuous |
/// | `output_rate_hz` | Hz | 10, 50, 100, 200 | 100 |
/// | `range_gauss` | G (1 G = 100 µT) | 2, 8 | 8 |
/// | `oversampling` | ratio | 512, 256, 128, 64 | 512 |
///
/// ±8 G is the default: ±2 G overflows (OVL) near motors and magnets.
public struct QMC5883LConfiguration: Sendable, Equatable, Codable {
    public var mode: QMC5883LMode
    public var outputRate: QMC5883LOutputRate
    public var range: QMC5883LRange
    public var oversampling: QMC5883LOversampling

    public init(mode: QMC5883LMode = .continuous, outputRate: QMC5883LOutputRate = .hz100,
                range: QMC5883LRange = .gauss8, oversampling: QMC5883LOversampling = .x512) {
        self.mode = mode; self.outputRate = outputRate; self.range = range; self.oversampling = oversampling
    }

    public static let `default` = QMC5883LConfiguration()

    /// CTRL1 = OSR << 6 | RNG << 4 | ODR << 2 | MODE. Field codes of 00 are
    /// written as cleared bits (the row owns the whole register), never
    /// skipped (PX4 PR #14384).
    public var control1Value: UInt8 {
        oversampling.rawValue << 6 | range.rawValue << 4 | outputRate.rawValue << 2 | mode.rawValue
    }

    /// SET/RESET period, then CTRL1 (the continuous-mode set-up example of the QST
    /// QMC5883L data sheet rev 1.0: 0BH = 0x01, then 09H).
    public var registerTable: RegisterTable {
        RegisterTable([
            .value(QMC5883LRegister.setResetPeriod.rawValue, QMC5883LBits.setResetPeriod),
            .value(QMC5883LRegister.control1.rawValue, control1Value),
        ])
    }

    enum CodingKeys: String, CodingKey {
        case mode, outputRateHz = "output_rate_hz", rangeGauss = "range_gauss", oversampling
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = QMC5883LConfiguration.default
        mode = QMC5883LMode(key: try c.decodeAllowed(.mode, allowed: QMC5883LMode.allCases.map(\.key),
                                                     default: d.mode.key, unit: ""))!
        outputRate = QMC5883LOutputRate(hertz: try c.decodeAllowed(
            .outputRateHz, allowed: QMC5883LOutputRate.allCases.map(\.hertz), default: d.outputRate.hertz, unit: "Hz"))!
        range = QMC5883LRange(gauss: try c.decodeAllowed(
            .rangeGauss, allowed: QMC5883LRange.allCases.map(\.gauss), default: d.range.gauss, unit: "gauss; 1 G = 100 µT"))!
        oversampling = QMC5883LOversampling(ratio: try c.decodeAllowed(
            .oversampling, allowed: QMC5883LOversampling.allCases.map(\.ratio), default: d.oversampling.ratio,
            unit: "oversampling ratio"))!
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(mode.key, forKey: .mode)
        try c.encode(outputRate.hertz, forKey: .outputRateHz)
        try c.encode(range.gauss, forKey: .rangeGauss)
        try c.encode(oversampling.ratio, forKey: .oversampling)
    }
}
