import EdgeBus

/// One register read during identification.
public struct RegisterValue: Sendable, Equatable, CustomStringConvertible {
    public var register: UInt8
    public var value: UInt8
    public init(register: UInt8, value: UInt8) { self.register = register; self.value = value }
    public var description: String { "\(hex(register)) = \(hex(value))" }
}

/// What answers at an address, as the `probe` command reports it.
public enum ChipIdentification: Sendable, Equatable, CustomStringConvertible {
    /// A chip this module drives. `variant` names the part (e.g. "BME280",
    /// "MPU-6500"); `warning` is set for clones and look-alikes that are
    /// accepted with differences.
    case supported(ChipKind, variant: String, warning: String?, registers: [RegisterValue])
    /// A known chip that these drivers do not support (HMC5883L, QMC5883P,
    /// BMP180, BMP388 ...), with the reason.
    case unsupported(part: String, reason: String, registers: [RegisterValue])
    /// Nothing recognisable: the bytes seen (empty when the address has no
    /// identity registers the module knows).
    case unknown(registers: [RegisterValue])

    public var chip: ChipKind? {
        if case .supported(let k, _, _, _) = self { return k }
        return nil
    }

    public var registers: [RegisterValue] {
        switch self {
        case .supported(_, _, _, let r), .unsupported(_, _, let r), .unknown(let r): return r
        }
    }

    public var description: String {
        switch self {
        case let .supported(_, variant, warning, regs):
            return "\(variant) (\(regs.map(\.description).joined(separator: ", ")))" + (warning.map { " - warning: \($0)" } ?? "")
        case let .unsupported(part, reason, regs):
            return "\(part), not supported: \(reason) (\(regs.map(\.description).joined(separator: ", ")))"
        case let .unknown(regs):
            return regs.isEmpty ? "unknown device (no identity registers known for this address)"
                : "unknown device (\(regs.map(\.description).joined(separator: ", ")))"
        }
    }
}

/// Reads the identity registers that make sense at `address` and says what
/// is there. Addresses: 0x68/0x69 WHO_AM_I (0x75); 0x76/0x77 id (0xD0), then
/// PROM word 0 (command 0xA0) version bits and the PROM's CRC-4 for an MS5837
/// at 0x76, reg 0x00 for BMP388/390 (id 0x60 is a BME280, supported as
/// `.bme280`); 0x0D reg 0x0D = 0xFF (QMC5883L); 0x1E regs 0x0A..0x0C = "H43"
/// (HMC5883L, supported); 0x2C reg 0x00 = 0x80 (QMC5883P). Only reads;
/// bus errors (no acknowledge included) are thrown.
public func identifyChip<Bus: I2CBus>(on bus: Bus, at address: UInt8) throws(I2CError) -> ChipIdentification {
    func read(_ r: UInt8) throws(I2CError) -> RegisterValue {
        RegisterValue(register: r, value: try bus.readRegister(address, r))
    }
    switch address {
    case 0x68, 0x69:
        let who = try read(MPU6050Register.whoAmI.rawValue)
        if let v = MPU6050Variant.lookup(whoAmI: who.value) {
            return .supported(.mpu6050, variant: v.description, warning: v.warning, registers: [who])
        }
        return .unknown(registers: [who])
    case 0x76, 0x77:
        let id = try read(BMP280Register.id.rawValue)
        if id.value == BME280Bits.chipID {
            return .supported(.bme280, variant: "BME280", warning: nil, registers: [id])
        }
        if let v = BMP280Variant.lookup(chipID: id.value) {
            if v.isSupported { return .supported(.bmp280, variant: v.part, warning: v.note, registers: [id]) }
            return .unsupported(part: v.part, reason: v.note ?? "different chip", registers: [id])
        }
        if address == 0x76, let ms = try identifyMS5837(on: bus, at: address) { return ms }
        let r0 = try read(0x00)
        switch r0.value {
        case 0x50: return .unsupported(part: "BMP388", reason: "a BMP388 has a different register map (chip id at 0x00)", registers: [id, r0])
        case 0x60: return .unsupported(part: "BMP390", reason: "a BMP390 has a different register map (chip id at 0x00)", registers: [id, r0])
        default: return .unknown(registers: [id, r0])
        }
    case 0x0D:
        let id = try read(QMC5883LRegister.chipID.rawValue)
        if id.value == QMC5883LBits.chipID {
            return .supported(.qmc5883l, variant: "QMC5883L", warning: nil, registers: [id])
        }
        return .unknown(registers: [id])
    case 0x1E:
        let regs = try bus.readRegisters(address, 0x0A, count: 3)
        let seen = regs.enumerated().map { RegisterValue(register: 0x0A + UInt8($0.offset), value: $0.element) }
        if regs == HMC5883LBits.identification {
            return .supported(.hmc5883l, variant: "HMC5883L", warning: nil, registers: seen)
        }
        return .unknown(registers: seen)
    case 0x2C:
        let r0 = try read(0x00)
        if r0.value == 0x80 {
            return .unsupported(part: "QMC5883P", reason: "a QMC5883P has a different register map (data 0x01..0x06, CTRL1 0x0A), ranges and axis orientation than the QMC5883L", registers: [r0])
        }
        return .unknown(registers: [r0])
    default:
        return .unknown(registers: [])
    }
}

/// An MS5837 has no identity register: PROM word 0 bits [11:5] name the
/// product (DS REV C2 "Version PROM Word 0 programming") and the CRC-4 over
/// the 7 words says the read was sound. Nil when word 0 names no MS5837.
func identifyMS5837<Bus: I2CBus>(on bus: Bus, at address: UInt8) throws(I2CError) -> ChipIdentification? {
    func word(_ i: UInt8) throws(I2CError) -> UInt16 {
        let b = try bus.readRegisters(address, MS5837Command.promRead(word: i).byte, count: 2)
        return UInt16(b[0]) << 8 | UInt16(b[1])
    }
    let w0 = try word(0)
    guard let v = MS5837Variant.lookup(word0: w0), w0 != 0, w0 != 0xFFFF else { return nil }
    var words = [w0]
    for i in 1...6 { words.append(try word(UInt8(i))) }
    let seen = words.enumerated().map { RegisterValue(register: 0xA0 + UInt8($0.offset) * 2, value: UInt8($0.element >> 8)) }
    guard (try? MS5837Calibration(words: words)) != nil else {
        return .unknown(registers: seen)
    }
    if v.isSupported { return .supported(.ms5837, variant: v.part, warning: nil, registers: [seen[0]]) }
    return .unsupported(part: v.part, reason: v.note ?? "different chip", registers: [seen[0]])
}
