import EdgeBus

/// One row of a configuration table (PX4's `{register, set bits, clear bits}`):
/// after applying, the bits in `set` read 1 and the bits in `clear` read 0.
/// Bits in neither are left as they are (read-modify-write); when `set` and
/// `clear` cover all eight bits the register is written without reading.
///
/// Writing a field whose value is `00` means *clearing* its bits: a row lists
/// those bits in `clear`, never in `set` (the PX4 PR #14384 bug was writing
/// "00" values as set bits).
public struct RegisterSetting: Sendable, Equatable, CustomStringConvertible {
    public var register: UInt8
    public var set: UInt8
    public var clear: UInt8

    public init(register: UInt8, set: UInt8, clear: UInt8) {
        precondition(set & clear == 0, "a bit cannot be both set and cleared")
        self.register = register; self.set = set; self.clear = clear
    }

    /// A row that owns the whole register: it will read exactly `value`.
    public static func value(_ register: UInt8, _ value: UInt8) -> RegisterSetting {
        RegisterSetting(register: register, set: value, clear: ~value)
    }

    /// The bits this row decides.
    public var mask: UInt8 { self.set | self.clear }
    /// Whether the row decides all eight bits (so it can be written blind).
    public var ownsWholeRegister: Bool { mask == 0xFF }

    /// `current` with this row applied.
    public func applied(to current: UInt8) -> UInt8 { (current & ~clear) | set }
    /// Whether `value` satisfies this row.
    public func isSatisfied(by value: UInt8) -> Bool { value & mask == set }

    public var description: String { "\(hex(register)): set \(hex(set)) clear \(hex(clear))" }
}

/// An ordered configuration table: applied in order, and re-checked later.
public struct RegisterTable: Sendable, Equatable {
    public var settings: [RegisterSetting]
    public init(_ settings: [RegisterSetting]) { self.settings = settings }

    /// Writes every row in order (read-modify-write for rows that do not own
    /// the whole register).
    public func apply<Bus: I2CBus>(on bus: Bus, address: UInt8) throws(I2CError) {
        for s in settings {
            if s.ownsWholeRegister {
                try bus.writeRegister(address, s.register, s.set)
            } else {
                let v = try bus.readRegister(address, s.register)
                try bus.writeRegister(address, s.register, s.applied(to: v))
            }
        }
    }

    /// Reads every row's register back; returns the rows that no longer hold.
    public func mismatches<Bus: I2CBus>(on bus: Bus, address: UInt8) throws(I2CError) -> [(setting: RegisterSetting, found: UInt8)] {
        var out: [(setting: RegisterSetting, found: UInt8)] = []
        for s in settings {
            let v = try bus.readRegister(address, s.register)
            if !s.isSatisfied(by: v) { out.append((s, v)) }
        }
        return out
    }

    /// Re-checks the table, throwing ``DriverError/configurationMismatch`` for
    /// the first row that does not hold.
    /// Reads row by row and allocates nothing (the engine re-checks every
    /// running chip periodically).
    public func verify<Bus: I2CBus>(on bus: Bus, address: UInt8, chip: ChipKind) throws(DriverError) {
        for s in settings {
            let v = try onBus { () throws(I2CError) in try bus.readRegister(address, s.register) }
            if !s.isSatisfied(by: v) {
                throw .configurationMismatch(chip: chip, address: address, register: s.register,
                                             expected: s.set, mask: s.mask, found: v)
            }
        }
    }
}
