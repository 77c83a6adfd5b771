#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
@_exported import EdgeValues

/// A failed bus operation: which bus, address and register, the errno the
/// kernel gave, and what a Raspberry Pi user can do about it.
public struct I2CError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Portable error kinds (embedded-hal's `ErrorKind`, mapped from errno the
    /// way the kernel's I2C fault codes document them).
    public enum Kind: String, Sendable, Equatable {
        /// ENXIO / EREMOTEIO / ENODEV: nothing acknowledged the address.
        case noDevice
        /// EBUSY on I2C_SLAVE: a kernel driver owns the address.
        case addressInUse
        /// EACCES / EPERM opening the bus device.
        case permissionDenied
        /// ENOENT opening `/dev/i2c-N`: I2C not enabled, or wrong bus number.
        case busNotFound
        /// ETIMEDOUT / EAGAIN: bus stuck or arbitration lost.
        case busTimeout
        /// The adapter cannot do the requested transfer (EOPNOTSUPP, or no
        /// suitable I2C_FUNCS bit).
        case unsupported
        /// EIO and anything else.
        case io
    }

    public var kind: Kind
    /// errno as the kernel reported it (0 when the error did not come from the kernel).
    public var errno: Int32
    /// Bus name, e.g. `/dev/i2c-1`.
    public var bus: String
    /// 7-bit device address (nil for bus-level errors such as opening the bus).
    public var address: UInt8?
    /// First register of the failed transfer, if it addressed one.
    public var register: UInt8?
    /// What was attempted, e.g. `read 14 bytes` or `open`.
    public var operation: String

    public init(kind: Kind, errno: Int32, bus: String, address: UInt8? = nil,
                register: UInt8? = nil, operation: String) {
        self.kind = kind; self.errno = errno; self.bus = bus
        self.address = address; self.register = register; self.operation = operation
    }

    /// Maps an errno value to its kind.
    public static func kind(forErrno e: Int32) -> Kind {
        switch e {
        case ENXIO, EREMOTEIO, ENODEV: return .noDevice
        case EBUSY: return .addressInUse
        case EACCES, EPERM: return .permissionDenied
        case ENOENT: return .busNotFound
        case ETIMEDOUT, EAGAIN: return .busTimeout
        case EOPNOTSUPP: return .unsupported
        default: return .io
        }
    }

    public init(errno e: Int32, bus: String, address: UInt8? = nil, register: UInt8? = nil, operation: String) {
        self.init(kind: Self.kind(forErrno: e), errno: e, bus: bus, address: address,
                  register: register, operation: operation)
    }

    /// What to do about it, for a person at a Raspberry Pi.
    public var advice: String {
        let addr = address.map { hex($0) } ?? "the device"
        switch kind {
        case .noDevice:
            return "nothing answered at \(addr) on \(bus): check the wiring (SDA/SCL, on a Pi bus 1 is pins 3 and 5), power (3.3 V and GND), the address (AD0/SDO pins) and the bus number; `i2cdetect -y N` lists what answers"
        case .addressInUse:
            return "a kernel driver owns \(addr) on \(bus): remove the device-tree overlay that binds it (e.g. `dtoverlay=i2c-sensor,bmp280`, an `mpu6050` overlay, or an RTC overlay such as `i2c-rtc,ds3231` - DS1307/DS3231 clocks also use 0x68) from /boot/firmware/config.txt, or unbind it via /sys/bus/i2c/drivers"
        case .permissionDenied:
            return "no permission for \(bus): add the user to the `i2c` group (`sudo usermod -aG i2c $USER`, then log in again) or install deploy/99-edge-agent.rules"
        case .busNotFound:
            return "\(bus) does not exist: enable I2C (`sudo raspi-config nonint do_i2c 0`, or `dtparam=i2c_arm=on` in config.txt and reboot), load i2c-dev (`sudo modprobe i2c-dev`) and check the bus number (`ls /dev/i2c-*`)"
        case .busTimeout:
            return "the bus is stuck or arbitration was lost on \(bus): a device may be holding SDA low; power-cycle the sensors, shorten the wires, or lower the bus speed (dtparam=i2c_arm_baudrate=100000)"
        case .unsupported:
            return "the adapter behind \(bus) cannot do this transfer (see `i2cdetect -F N`)"
        case .io:
            return "an I/O error on \(bus): check wiring and power; if it repeats, power-cycle the sensors"
        }
    }

    public var description: String { summary + ". " + advice }

    /// What failed, without the advice: "I2C read 6 bytes failed on
    /// /dev/i2c-1 at 0x76 register 0xf7: Remote I/O error (errno 121)".
    public var summary: String {
        var s = "I2C \(operation) failed on \(bus)"
        if let a = address { s += " at \(hex(a))" }
        if let r = register { s += " register \(hex(r))" }
        if errno != 0 {
            let msg = String(cString: strerror(errno))
            s += ": \(msg) (errno \(errno))"
        } else {
            s += ": \(kind.rawValue)"
        }
        return s
    }
}
