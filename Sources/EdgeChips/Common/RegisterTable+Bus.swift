import EdgeBus

extension RegisterTable {
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
