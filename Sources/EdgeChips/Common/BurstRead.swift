import EdgeBus

/// Reads `count` (at most 32, the SMBus block limit) consecutive registers
/// into a stack buffer and hands them to `body`: the hot path never allocates.
@inlinable
func readBurst<Bus: I2CBus, R>(_ bus: Bus, _ address: UInt8, _ register: UInt8, count: Int,
                               _ body: (UnsafeRawBufferPointer) -> R) throws(I2CError) -> R {
    precondition(count > 0 && count <= 32, "burst reads are 1...32 bytes")
    var storage: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    return try withUnsafeMutableBytes(of: &storage) { (raw) throws(I2CError) -> R in
        let slice = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
        try bus.readRegisters(address, register, into: slice)
        return body(UnsafeRawBufferPointer(slice))
    }
}
