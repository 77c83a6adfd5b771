/// A 7-bit I2C bus that every driver is generic over.
///
/// Everything rests on one call, ``transfer(address:write:read:)``: write some
/// bytes to a device, then (with a repeated start) read some bytes from the
/// same device. Register reads are `write [reg]` + `read n`; register writes
/// are `write [reg, value...]` + `read 0` (embedded-hal's `write_read`).
///
/// Buses are reference types (`AnyObject`) because several drivers share one
/// physical bus (one file descriptor, one simulated register world). Calls
/// never allocate: callers pass buffers they own.
///
/// Auto-increment: a multi-byte read is assumed to walk consecutive
/// registers. Transports that must split a read (SMBus adapters: 32 bytes a
/// chunk) re-address `register + offset` for each chunk. A caller that reads
/// a non-incrementing port (the MPU-6050's FIFO_R_W) reads at most
/// ``maximumChunk`` bytes per transfer so no re-addressing happens.
public protocol I2CBus: AnyObject, SendableMetatype {
    /// Human-readable name used in errors, e.g. `/dev/i2c-1` or `simulated`.
    var name: String { get }

    /// One write-then-read transaction on `address` (7-bit).
    /// - Parameters:
    ///   - write: bytes to send first (usually a register pointer, maybe data);
    ///     may be empty for a plain read.
    ///   - read: buffer to fill after a repeated start; may be empty for a
    ///     plain write.
    func transfer(address: UInt8, write: UnsafeRawBufferPointer,
                  read: UnsafeMutableRawBufferPointer) throws(I2CError)

    /// Whether a device acknowledges `address`, the way `i2cdetect` asks:
    /// see the conforming type for which transfer it uses.
    func probe(address: UInt8) throws(I2CError) -> Bool
}

extension I2CBus {
    /// Largest read that is guaranteed to go out as one transfer on every
    /// transport (the SMBus I2C-block limit, `I2C_SMBUS_BLOCK_MAX`).
    public static var maximumChunk: Int { 32 }

    /// Default probe: a one-byte read with no register pointer (what
    /// `i2cdetect -r` does). No answer (``I2CError/Kind/noDevice``) is `false`;
    /// any other error is thrown.
    public func probe(address: UInt8) throws(I2CError) -> Bool {
        var byte: UInt8 = 0
        do {
            try withUnsafeMutableBytes(of: &byte) { (read) throws(I2CError) in
                try transfer(address: address, write: UnsafeRawBufferPointer(start: nil, count: 0), read: read)
            }
            return true
        } catch where error.kind == .noDevice {
            return false
        }
    }

    /// Reads one register.
    @inlinable
    public func readRegister(_ address: UInt8, _ register: UInt8) throws(I2CError) -> UInt8 {
        var reg = register
        var value: UInt8 = 0
        try withUnsafeBytes(of: &reg) { (w) throws(I2CError) in
            try withUnsafeMutableBytes(of: &value) { (r) throws(I2CError) in
                try transfer(address: address, write: w, read: r)
            }
        }
        return value
    }

    /// Reads `buffer.count` consecutive registers starting at `register` in
    /// one burst (the device's auto-increment).
    @inlinable
    public func readRegisters(_ address: UInt8, _ register: UInt8,
                              into buffer: UnsafeMutableRawBufferPointer) throws(I2CError) {
        var reg = register
        try withUnsafeBytes(of: &reg) { (w) throws(I2CError) in
            try transfer(address: address, write: w, read: buffer)
        }
    }

    /// Reads `count` consecutive registers into a new array (convenience for
    /// tools and tests; the real-time path uses the buffer form).
    public func readRegisters(_ address: UInt8, _ register: UInt8, count: Int) throws(I2CError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var failure: I2CError?
        out.withUnsafeMutableBytes { b in
            do throws(I2CError) { try readRegisters(address, register, into: b) } catch { failure = error }
        }
        if let failure { throw failure }
        return out
    }

    /// Writes one register.
    @inlinable
    public func writeRegister(_ address: UInt8, _ register: UInt8, _ value: UInt8) throws(I2CError) {
        var pair: (UInt8, UInt8) = (register, value)
        try withUnsafeBytes(of: &pair) { (w) throws(I2CError) in
            try transfer(address: address, write: w, read: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        }
    }
}
