#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeBus
import CI2C
import CEdgeShims

/// `/dev/i2c-N` through the kernel's i2c-dev interface.
///
/// * Every transfer first selects the address with `I2C_SLAVE` (never
///   `I2C_SLAVE_FORCE`), so an address owned by a kernel driver fails with
///   EBUSY (``I2CError/Kind/addressInUse``) instead of being talked over;
///   `I2C_RDWR` alone would skip that check.
/// * The adapter's `I2C_FUNCS` decide the transport: plain I2C adapters
///   (every Raspberry Pi bus) get one `I2C_RDWR` write-then-read message pair;
///   SMBus-only adapters (the kernel's `i2c-stub`, some USB bridges) get SMBus
///   I2C-block transfers of at most 32 bytes, re-addressing `register + offset`
///   for each chunk, and byte transfers for single bytes.
/// * EINTR is retried (in the C shim); libi2c's SMBus helpers return a
///   negative errno instead of setting `errno`, which is what is reported.
public final class LinuxI2CBus: I2CBus, @unchecked Sendable {
    public enum Transport: String, Sendable { case i2cRdwr = "I2C_RDWR", smbus = "SMBus" }

    public let name: String
    public let busNumber: Int
    public let transport: Transport
    /// The adapter's I2C_FUNCS bit mask.
    public let functionality: UInt
    private let fd: Int32
    private var selected: Int32 = -1

    /// Opens `/dev/i2c-<busNumber>`.
    public convenience init(busNumber: Int, forceSMBus: Bool = false) throws(I2CError) {
        try self.init(path: "/dev/i2c-\(busNumber)", busNumber: busNumber, forceSMBus: forceSMBus)
    }

    /// Opens an i2c-dev node by path.
    public init(path: String, busNumber: Int = -1, forceSMBus: Bool = false) throws(I2CError) {
        name = path
        self.busNumber = busNumber
        var f: Int32
        repeat { f = open(path, O_RDWR | O_CLOEXEC) } while f < 0 && errno == EINTR
        if f < 0 { throw I2CError(errno: errno, bus: path, operation: "open") }
        // Every check is made on the local descriptor, and the properties
        // are set only once none can fail: a throw after `fd` is set would
        // run deinit (when the other properties have defaults), closing the
        // number twice.
        var funcs: UInt = 0
        let r = edge_i2c_funcs(f, &funcs)
        if r < 0 {
            close(f)
            throw I2CError(errno: -r, bus: path, operation: "ioctl(I2C_FUNCS)")
        }
        let chosen: Transport
        if !forceSMBus && funcs & EDGE_I2C_FUNC_I2C != 0 {
            chosen = .i2cRdwr
        } else if funcs & EDGE_I2C_FUNC_SMBUS_READ_I2C_BLOCK != 0 || funcs & EDGE_I2C_FUNC_SMBUS_READ_BYTE_DATA != 0 {
            chosen = .smbus
        } else {
            close(f)
            throw I2CError(kind: .unsupported, errno: 0, bus: path,
                           operation: "open (adapter offers neither I2C_RDWR nor SMBus byte/block reads)")
        }
        functionality = funcs
        transport = chosen
        fd = f
    }

    deinit { close(fd) }

    private func select(_ address: UInt8, register: UInt8?) throws(I2CError) {
        if selected == Int32(address) { return }
        let r = edge_i2c_set_slave(fd, UInt16(address))
        if r < 0 {
            selected = -1
            throw I2CError(errno: -r, bus: name, address: address, register: register,
                           operation: "ioctl(I2C_SLAVE)")
        }
        selected = Int32(address)
    }

    private func has(_ bit: UInt) -> Bool { functionality & bit != 0 }

    public func transfer(address: UInt8, write: UnsafeRawBufferPointer,
                         read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        let reg: UInt8? = write.isEmpty ? nil : write[0]
        try select(address, register: reg)
        switch transport {
        case .i2cRdwr:
            let r = edge_i2c_rdwr(fd, UInt16(address),
                                  write.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt16(write.count),
                                  read.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt16(read.count))
            if r < 0 {
                throw I2CError(errno: -r, bus: name, address: address, register: reg,
                               operation: Self.describe(write: write.count, read: read.count))
            }
        case .smbus:
            try smbusTransfer(address: address, write: write, read: read)
        }
    }

    private func fail(_ r: Int32, _ address: UInt8, _ reg: UInt8?, _ op: String) -> I2CError {
        I2CError(errno: r < 0 ? -r : EIO, bus: name, address: address, register: reg, operation: op)
    }

    private func smbusTransfer(address: UInt8, write: UnsafeRawBufferPointer,
                               read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        let op = Self.describe(write: write.count, read: read.count) + " (SMBus)"
        if write.isEmpty {
            // Plain read with no register pointer: SMBus receive-byte, one at a time.
            guard has(EDGE_I2C_FUNC_SMBUS_READ_BYTE) else {
                throw I2CError(kind: .unsupported, errno: 0, bus: name, address: address, operation: op)
            }
            for i in 0..<read.count {
                let r = i2c_smbus_read_byte(fd)
                if r < 0 { throw fail(r, address, nil, op) }
                read[i] = UInt8(truncatingIfNeeded: r)
            }
            return
        }
        let reg = write[0]
        if read.isEmpty {
            switch write.count {
            case 1:
                let r = i2c_smbus_write_byte(fd, reg)
                if r < 0 { throw fail(r, address, reg, op) }
            case 2:
                let r = i2c_smbus_write_byte_data(fd, reg, write[1])
                if r < 0 { throw fail(r, address, reg, op) }
            default:
                guard write.count - 1 <= 32, has(EDGE_I2C_FUNC_SMBUS_WRITE_I2C_BLOCK) else {
                    // Fall back to byte writes at consecutive registers.
                    for i in 1..<write.count {
                        let r = i2c_smbus_write_byte_data(fd, reg &+ UInt8(i - 1), write[i])
                        if r < 0 { throw fail(r, address, reg &+ UInt8(i - 1), op) }
                    }
                    return
                }
                let r = i2c_smbus_write_i2c_block_data(fd, reg, UInt8(write.count - 1),
                    write.baseAddress!.advanced(by: 1).assumingMemoryBound(to: UInt8.self))
                if r < 0 { throw fail(r, address, reg, op) }
            }
            return
        }
        guard write.count == 1 else {
            throw I2CError(kind: .unsupported, errno: 0, bus: name, address: address, register: reg,
                           operation: op + ": SMBus cannot write more than a register pointer before a read")
        }
        if read.count == 1 || !has(EDGE_I2C_FUNC_SMBUS_READ_I2C_BLOCK) {
            for i in 0..<read.count {
                let r = i2c_smbus_read_byte_data(fd, reg &+ UInt8(truncatingIfNeeded: i))
                if r < 0 { throw fail(r, address, reg &+ UInt8(truncatingIfNeeded: i), op) }
                read[i] = UInt8(truncatingIfNeeded: r)
            }
            return
        }
        var offset = 0
        while offset < read.count {
            let n = min(32, read.count - offset)
            let chunkReg = reg &+ UInt8(truncatingIfNeeded: offset)
            let r = i2c_smbus_read_i2c_block_data(fd, chunkReg, UInt8(n),
                read.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self))
            if r < 0 { throw fail(r, address, chunkReg, op) }
            if Int(r) != n {
                throw I2CError(kind: .io, errno: EIO, bus: name, address: address, register: chunkReg,
                               operation: op + ": short block read (\(r) of \(n) bytes)")
            }
            offset += n
        }
    }

    /// Probes like `i2cdetect` in its default mode: an SMBus "quick write"
    /// for most addresses, a one-byte read for 0x30-0x37 and 0x50-0x5F (where
    /// a quick write can corrupt EEPROMs). Falls back to a read when the
    /// adapter lacks quick commands. `ENXIO`/`EREMOTEIO`/`ENODEV` mean nobody
    /// answered; EBUSY (kernel driver owns it) counts as present and is
    /// reported by the caller through a register read.
    public func probe(address: UInt8) throws(I2CError) -> Bool {
        do {
            try select(address, register: nil)
        } catch where error.kind == .addressInUse {
            return true
        }
        let useRead = (0x30...0x37).contains(address) || (0x50...0x5F).contains(address)
            || !has(EDGE_I2C_FUNC_SMBUS_QUICK)
        let r: Int32
        if useRead {
            r = i2c_smbus_read_byte(fd)
        } else {
            r = i2c_smbus_write_quick(fd, UInt8(I2C_SMBUS_WRITE))
        }
        if r >= 0 { return true }
        let e = I2CError(errno: -r, bus: name, address: address, operation: useRead ? "probe (read byte)" : "probe (quick write)")
        if e.kind == .noDevice { return false }
        throw e
    }

    static func describe(write: Int, read: Int) -> String {
        switch (write, read) {
        case (_, 0): return "write \(write) byte\(write == 1 ? "" : "s")"
        case (0, _): return "read \(read) byte\(read == 1 ? "" : "s")"
        default: return "read \(read) byte\(read == 1 ? "" : "s") after writing \(write)"
        }
    }
}
