/// Which chip a register dump came from, judged from its identity registers
/// (sensors.md §1.1, §2.1, §3.1): MPU-6050 family WHO_AM_I (0x75), BMP280
/// family `id` (0xD0; BME280 0x60), QMC5883L CHIP_ID (0x0D) = 0xFF, HMC5883L 'H43' at
/// 0x0A..0x0C, QMC5883P 0x00 = 0x80, BMP388/390 0x00 = 0x50/0x60.
///
/// Decoding a dump of one chip as another gives numbers that look like
/// readings (a BMP280 dump decoded as an MPU-6050 is "at rest, 8000 Hz"), so
/// a decoder asks this first. Pure: no I/O.
public enum RegisterDumpIdentity {
    public enum Verdict: Equatable, Sendable {
        /// The identity register says `chip`: `part` names the variant,
        /// `warning` is set for clones and look-alikes that decode the same.
        case matches(part: String, warning: String?)
        /// The identity register is unreadable or outside the dump, and nothing
        /// else in the dump names another chip: the dump cannot be checked.
        case unchecked(String)
        /// The dump is of another chip, or of no chip: what was found.
        case mismatch(String)
    }

    /// Whether `image` is a dump of a `chip`.
    public static func check(_ image: RegisterImage, as chip: ChipKind) -> Verdict {
        let known = image.values.compactMap { $0 }
        let name = chip.partName
        if known.isEmpty {
            return .mismatch("every register is unreadable (XX): nothing acknowledged at the dumped address, so this is no \(name) dump")
        }
        if known.count >= 16, known.allSatisfy({ $0 == 0xFF }) {
            return .mismatch("every register reads 0xff, as a bus with nothing at that address does: no chip answered, so this is no \(name) (check the address with `i2cdetect -y BUS`)")
        }
        if known.count >= 16, known.allSatisfy({ $0 == 0x00 }) {
            return .mismatch("every register reads 0x00: no identity register says \(name) (a chip held in reset, or not a \(name))")
        }
        let own = identityRegister(chip)
        let seen = image[own.register]
        let others = otherChips(in: image, not: chip)
        guard let value = seen else {
            if let other = others.first { return .mismatch("\(own.name) (\(h(own.register))) is not in the dump, and \(other)") }
            return .unchecked("\(own.name) (\(h(own.register))) is not in the dump (unreadable or outside the dumped range), so it cannot be checked that this is \(chip == .mpu6050 ? "an" : "a") \(name) dump")
        }
        switch chip {
        case .mpu6050:
            if let v = MPU6050Variant.lookup(whoAmI: value) { return .matches(part: v.description, warning: v.warning) }
        case .bmp280:
            if let v = BMP280Variant.lookup(chipID: value) {
                if v.isSupported { return .matches(part: v.part, warning: v.note) }
                return .mismatch("\(own.name) (\(h(own.register))) reads \(h(value)): \(v.note ?? "a \(v.part)"), not a BMP280")
            }
        case .qmc5883l:
            if value == QMC5883LBits.chipID { return .matches(part: "QMC5883L", warning: nil) }
        case .hmc5883l:
            if value == HMC5883LBits.identification[0], image[0x0B] == HMC5883LBits.identification[1],
               image[0x0C] == HMC5883LBits.identification[2] {
                return .matches(part: "HMC5883L", warning: nil)
            }
        case .bme280:
            if value == 0x60 { return .matches(part: "BME280", warning: nil) }
        case .ms5837:
            break   // no register file: `decode ms5837` reads PROM words and D1/D2, not a dump
        }
        var text = "\(own.name) (\(h(own.register))) reads \(h(value))"
        switch value {
        case 0x00, 0xFF: text += ", which no \(name) returns (a missing chip reads 0x00 or 0xff)"
        default: text += ", which is not \(chip == .mpu6050 ? "an" : "a") \(name)'s \(own.expected)"
        }
        if let other = others.first { text += "; \(other)" }
        return .mismatch(text)
    }

    /// `0xd0` (RegisterDump's formatting: this file needs nothing from the bus layer).
    static func h(_ v: UInt8) -> String { RegisterDump.hex2(Int(v)) }

    /// The register that says what a chip is, its name and what it holds.
    static func identityRegister(_ chip: ChipKind) -> (register: UInt8, name: String, expected: String) {
        switch chip {
        case .mpu6050: return (MPU6050Register.whoAmI.rawValue, "WHO_AM_I", "0x68 (or a known clone's value)")
        case .bmp280: return (BMP280Register.id.rawValue, "id", "0x58 (BME280: 0x60)")
        case .qmc5883l: return (QMC5883LRegister.chipID.rawValue, "CHIP_ID", "0xff")
        case .ms5837: return (0xA0, "PROM word 0 (command 0xA0)", "version 0x1A in bits [11:5]")
        case .hmc5883l: return (HMC5883LRegister.identificationA.rawValue, "ID_A..ID_C", "'H43' (0x48 0x34 0x33)")
        case .bme280: return (BMP280Register.id.rawValue, "id", "0x60")
        }
    }

    /// What the dump's identity registers say it is, strongest evidence first,
    /// other than `chip`: "id (0xd0) reads 0x58: it is a BMP280 - ...".
    static func otherChips(in image: RegisterImage, not chip: ChipKind) -> [String] {
        var out: [String] = []
        func decodeHint(_ k: ChipKind) -> String { " - decode it with `edge-agent decode \(k.rawValue) FILE`" }
        if chip != .mpu6050, let w = image[MPU6050Register.whoAmI.rawValue], let v = MPU6050Variant.lookup(whoAmI: w) {
            out.append("WHO_AM_I (0x75) reads \(h(w)): it is \(v.isGenuine ? "an MPU-6050" : v.part)" + decodeHint(.mpu6050))
        }
        if chip != .bmp280, chip != .bme280 || image[BMP280Register.id.rawValue] != 0x60,
           let id = image[BMP280Register.id.rawValue], let v = BMP280Variant.lookup(chipID: id) {
            let kind: ChipKind = id == 0x60 ? .bme280 : .bmp280
            out.append("id (0xd0) reads \(h(id)): it is a \(v.part)" + (v.isSupported ? decodeHint(kind) : " (\(v.note ?? "not supported"))"))
        }
        if chip != .hmc5883l, image[0x0A] == 0x48, image[0x0B] == 0x34, image[0x0C] == 0x33 {
            out.append("0x0a..0x0c read 'H43': it is a Honeywell HMC5883L" + decodeHint(.hmc5883l))
        }
        if chip != .qmc5883l, image[QMC5883LRegister.chipID.rawValue] == QMC5883LBits.chipID, out.isEmpty {
            out.append("CHIP_ID (0x0d) reads 0xff: it is probably a QMC5883L" + decodeHint(.qmc5883l))
        }
        if out.isEmpty, let r0 = image[0x00] {
            switch r0 {
            case 0x80: out.append("0x00 reads 0x80: it may be a QMC5883P (another register map; not supported)")
            case 0x50: out.append("0x00 reads 0x50: it may be a BMP388 (another register map; not supported)")
            case 0x60 where chip != .bmp280 || image[BMP280Register.id.rawValue] != 0x60:
                out.append("0x00 reads 0x60: it may be a BMP390 (another register map; not supported)")
            default: break
            }
        }
        return out
    }
}
