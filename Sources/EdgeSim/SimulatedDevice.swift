// The device side of the simulated bus: a register file with behaviour.
import EdgeBus

/// What a simulated device can answer instead of data: the errno a real
/// adapter reports for it (EREMOTEIO for a NACK on a data byte, EIO, ...).
public struct SimulatedDeviceFault: Error, Sendable, Equatable {
    public var errno: Int32
    public var operation: String
    public init(errno: Int32, operation: String) { self.errno = errno; self.operation = operation }
}

/// A chip on the simulated bus. Models are lazy: they keep the time of the
/// last access and, on each transaction at time `t`, first catch up on every
/// sample that fell due since then (reading the truth at each sample's time),
/// then act on the bytes.
public protocol SimulatedDevice: AnyObject {
    /// Chip kind, e.g. `mpu6050`.
    var kind: String { get }
    /// One write-then-read transaction at monotonic time `t` (ns): the first
    /// written byte sets the register pointer, further written bytes are
    /// stored auto-incrementing; the read continues from the pointer. An empty
    /// write reads from the pointer left by the previous transaction.
    func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer,
                  atNanoseconds t: UInt64) throws(SimulatedDeviceFault)
    /// Power-on reset at `t` (power cycle, brown-out, reattachment): catches
    /// up to `t`, then every register returns to its power-on value.
    func powerOnReset(atNanoseconds t: UInt64)
}

/// A device whose auxiliary bus can be switched onto the host bus (the
/// MPU-6050's I2C bypass, GY-87 style).
public protocol AuxiliaryBusGate: AnyObject {
    /// Whether devices wired behind this one are connected to the host bus at `t`.
    func auxiliaryBusConnected(atNanoseconds t: UInt64) -> Bool
}

/// A device with an interrupt / data-ready pin.
public protocol DataReadySource: AnyObject {
    /// The first active edge of the pin strictly after `t` given the current
    /// register settings, or nil if the pin will not assert (asleep, disabled,
    /// latched high and not yet acknowledged). Catches the model up to `t`
    /// first (what any access at `t` would do); schedules nothing.
    func nextDataReadyEdge(after t: UInt64) -> UInt64?
    /// Catches the model up to `t` (so the pin's latch state is current).
    func advance(toNanoseconds t: UInt64)
}

/// Shared register-pointer handling for byte-addressed register files.
protocol RegisterFileDevice: SimulatedDevice {
    var pointer: UInt8 { get set }
    /// Catch up to `t` (generate samples that fell due).
    func advance(toNanoseconds t: UInt64)
    func readRegister(_ register: UInt8, atNanoseconds t: UInt64) -> UInt8
    func writeRegister(_ register: UInt8, _ value: UInt8, atNanoseconds t: UInt64)
    /// The register the pointer moves to after `register` (auto-increment rules).
    func pointer(after register: UInt8) -> UInt8
    /// Called once after a transaction with a read phase.
    func didRead(atNanoseconds t: UInt64)
    /// Reads `read.count` bytes from `register` in one go where that is the
    /// same as reading them one at a time (a FIFO port, whose pointer does
    /// not move); false: read them one at a time.
    func readBurst(_ register: UInt8, into read: UnsafeMutableRawBufferPointer, atNanoseconds t: UInt64) -> Bool
}

extension RegisterFileDevice {
    func didRead(atNanoseconds t: UInt64) {}
    func readBurst(_ register: UInt8, into read: UnsafeMutableRawBufferPointer, atNanoseconds t: UInt64) -> Bool { false }
    func pointer(after register: UInt8) -> UInt8 { register &+ 1 }

    /// The standard pointer/auto-increment transaction; models call it from `transfer`.
    func registerTransfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer,
                          atNanoseconds t: UInt64) {
        advance(toNanoseconds: t)
        if write.count > 0 {
            pointer = write[0]
            var i = 1
            while i < write.count {
                writeRegister(pointer, write[i], atNanoseconds: t)
                pointer = self.pointer(after: pointer)
                i += 1
            }
        }
        if read.count > 0 {
            if !readBurst(pointer, into: read, atNanoseconds: t) {
                for i in 0..<read.count {
                    read[i] = readRegister(pointer, atNanoseconds: t)
                    pointer = self.pointer(after: pointer)
                }
            }
            didRead(atNanoseconds: t)
        }
    }
}

/// A register file with fixed contents and no behaviour: enough for `probe`
/// to recognise a chip by its identity registers (HMC5883L, QMC5883P, ...).
/// Writes are stored (except to `readOnly` registers) and read back.
public final class IdentityOnlyDevice: RegisterFileDevice, @unchecked Sendable {
    public let kind: String
    let powerOn: [UInt8]
    let readOnly: Set<UInt8>
    var registers: [UInt8]
    var pointer: UInt8 = 0

    /// - Parameter registers: power-on values by register address; others read 0.
    public init(kind: String, registers: [UInt8: UInt8], readOnly: Set<UInt8>) {
        self.kind = kind
        var r = [UInt8](repeating: 0, count: 256)
        for (k, v) in registers { r[Int(k)] = v }
        powerOn = r; self.registers = r; self.readOnly = readOnly
    }

    /// HMC5883L (Honeywell) at 0x1E: identification A/B/C 0x0A..0x0C = 'H' '4' '3';
    /// CRA 0x10, CRB 0x20, mode 0x01 (single) at power-on (DS register list).
    public static func hmc5883l() -> IdentityOnlyDevice {
        IdentityOnlyDevice(kind: "hmc5883l", registers: [0x00: 0x10, 0x01: 0x20, 0x02: 0x01, 0x0A: 0x48, 0x0B: 0x34, 0x0C: 0x33],
                           readOnly: [0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C])
    }
    /// QMC5883P at 0x2C: chip ID register 0x00 reads 0x80.
    public static func qmc5883p() -> IdentityOnlyDevice {
        IdentityOnlyDevice(kind: "qmc5883p", registers: [0x00: 0x80], readOnly: [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x09])
    }

    public func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer,
                         atNanoseconds t: UInt64) throws(SimulatedDeviceFault) {
        registerTransfer(write: write, read: read, atNanoseconds: t)
    }
    func advance(toNanoseconds t: UInt64) {}
    func readRegister(_ register: UInt8, atNanoseconds t: UInt64) -> UInt8 { registers[Int(register)] }
    func writeRegister(_ register: UInt8, _ value: UInt8, atNanoseconds t: UInt64) {
        if !readOnly.contains(register) { registers[Int(register)] = value }
    }
    public func powerOnReset(atNanoseconds t: UInt64) { registers = powerOn; pointer = 0 }
}
