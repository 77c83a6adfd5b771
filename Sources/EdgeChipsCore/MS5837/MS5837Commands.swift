// The TE MS5837-30BA command set, as data.
//
// Source: TE Connectivity, "MS5837-30BA Ultra-small, gel-filled pressure
// sensor with stainless steel cap", datasheet REV C2 (12/2019), "Commands"
// (Figure 1: command structure) and "Conversion sequence"; OSR 8192 and the
// conversion-time table from the 10/11/2015 edition ("Electrical
// characteristics", "I2C interface – Commands").
//
// The chip has no register file: every transaction is one command byte,
// optionally followed by a read of the result.

/// Oversampling ratio of one ADC conversion. The command's bits 1..3 carry
/// the code (OSR 256 = 0 ... 8192 = 5, shifted left by one).
public enum MS5837Oversampling: Int, Sendable, Equatable, CaseIterable, Codable {
    case osr256 = 256, osr512 = 512, osr1024 = 1024, osr2048 = 2048, osr4096 = 4096, osr8192 = 8192

    /// 0 for OSR 256 ... 5 for OSR 8192.
    public var code: UInt8 {
        switch self {
        case .osr256: 0
        case .osr512: 1
        case .osr1024: 2
        case .osr2048: 3
        case .osr4096: 4
        case .osr8192: 5
        }
    }

    /// Maximum ADC conversion time, ms (DS 2015 "Electrical characteristics",
    /// ADC conversion time max column). Drivers wait this long.
    public var maximumConversionMilliseconds: Double {
        switch self {
        case .osr256: 0.60
        case .osr512: 1.17
        case .osr1024: 2.28
        case .osr2048: 4.54
        case .osr4096: 9.04
        case .osr8192: 18.08
        }
    }

    /// Typical ADC conversion time, ms (same table, typ column).
    public var typicalConversionMilliseconds: Double {
        switch self {
        case .osr256: 0.54
        case .osr512: 1.06
        case .osr1024: 2.08
        case .osr2048: 4.13
        case .osr4096: 8.22
        case .osr8192: 16.44
        }
    }

    public init?(code: UInt8) {
        guard let v = Self.allCases.first(where: { $0.code == code }) else { return nil }
        self = v
    }
}

/// Which quantity a conversion digitises.
public enum MS5837Channel: Sendable, Equatable {
    /// D1: the uncompensated pressure.
    case pressure
    /// D2: the uncompensated temperature.
    case temperature
}

/// One command byte (DS Figure 1). Five kinds: reset, PROM read, D1
/// conversion, D2 conversion, ADC read.
public enum MS5837Command: Sendable, Equatable {
    /// 0x1E: reloads the PROM into the internal register; send once after power-on.
    case reset
    /// 0x40 | osr.code << 1: start a D1 (pressure) conversion.
    /// 0x50 | osr.code << 1: start a D2 (temperature) conversion.
    case convert(MS5837Channel, MS5837Oversampling)
    /// 0x00: clock out the 24-bit result of the last conversion (MSB first);
    /// 0 if no conversion ran, the result was read already, or the
    /// conversion has not finished.
    case adcRead
    /// 0xA0 | word << 1: read PROM word 0...7 (16 bits, MSB first).
    case promRead(word: UInt8)

    public var byte: UInt8 {
        switch self {
        case .reset: 0x1E
        case let .convert(.pressure, osr): 0x40 | osr.code << 1
        case let .convert(.temperature, osr): 0x50 | osr.code << 1
        case .adcRead: 0x00
        case let .promRead(word): 0xA0 | (word & 0x7) << 1
        }
    }

    /// Parses a command byte; nil for a byte that is not a command.
    public init?(byte b: UInt8) {
        switch b {
        case 0x1E: self = .reset
        case 0x00: self = .adcRead
        case 0xA0...0xAE where b & 1 == 0: self = .promRead(word: (b >> 1) & 0x7)
        case 0x40...0x4A where b & 1 == 0:
            guard let o = MS5837Oversampling(code: (b >> 1) & 0x7) else { return nil }
            self = .convert(.pressure, o)
        case 0x50...0x5A where b & 1 == 0:
            guard let o = MS5837Oversampling(code: (b >> 1) & 0x7) else { return nil }
            self = .convert(.temperature, o)
        default: return nil
        }
    }
}

/// MS5837 family members, told apart by PROM word 0 bits [11:5] (DS REV C2
/// "Version PROM Word 0 programming": 0b0011010 for the MS5837-30BA26).
/// Rows, not `if` chains: the 02BA variants are known so `probe` can name
/// them, but their compensation differs and this driver refuses them.
public struct MS5837Variant: Sendable, Equatable {
    public var part: String
    /// PROM word 0 bits [11:5].
    public var versionCode: UInt8
    public var isSupported: Bool
    /// Full-scale pressure the chip measures, Pa (30 bar for the 30BA).
    public var maximumPressurePascals: Double
    public var note: String?

    public static let ms5837_30ba = MS5837Variant(part: "MS5837-30BA", versionCode: 0x1A, isSupported: true,
                                                   maximumPressurePascals: 3_000_000, note: nil)
    /// The 02BA (0..2 bar) uses other shifts in its compensation.
    public static let ms5837_02ba01 = MS5837Variant(part: "MS5837-02BA01", versionCode: 0x00, isSupported: false,
                                                     maximumPressurePascals: 200_000,
                                                     note: "an MS5837-02BA (0..2 bar) uses a different compensation; this driver supports the MS5837-30BA")
    public static let ms5837_02ba21 = MS5837Variant(part: "MS5837-02BA21", versionCode: 0x15, isSupported: false,
                                                     maximumPressurePascals: 200_000,
                                                     note: "an MS5837-02BA (0..2 bar) uses a different compensation; this driver supports the MS5837-30BA")
    public static let all: [MS5837Variant] = [.ms5837_30ba, .ms5837_02ba01, .ms5837_02ba21]

    public static func lookup(word0: UInt16) -> MS5837Variant? {
        let code = UInt8((word0 >> 5) & 0x7F)
        return all.first { $0.versionCode == code }
    }
}
