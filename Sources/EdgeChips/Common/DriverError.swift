import EdgeBus

/// A failed driver operation. Every case says what happened and what to do
/// (``description``); bus failures keep the underlying ``I2CError`` with its
/// errno and advice.
public enum DriverError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bus transfer failed; the I2C error carries bus, address, register,
    /// errno and advice.
    case bus(I2CError)
    /// The identity register holds a value that is not this chip (or no chip:
    /// 0x00/0xFF). `identifiedAs` names the part when the value is known.
    case wrongChip(expected: ChipKind, address: UInt8, register: UInt8, found: UInt8, identifiedAs: String?)
    /// A self-clearing bit or a conversion did not finish within the data
    /// sheet's bound.
    case timeout(chip: ChipKind, address: UInt8, waitingFor: String, milliseconds: Double)
    /// The bytes were read but do not decode (see ``DecodeError``): a
    /// "not measured" value, implausible calibration words.
    case decode(DecodeError)
    /// The MPU-6050 FIFO overflowed or lost record alignment. The driver has
    /// already reset the FIFO; the buffered samples are dropped.
    case fifoOverflow(address: UInt8, bytesInFIFO: Int, reason: String)
    /// A configuration register no longer holds what the driver wrote
    /// (re-check after a brown-out or an unexpected reset).
    case configurationMismatch(chip: ChipKind, address: UInt8, register: UInt8, expected: UInt8, mask: UInt8, found: UInt8)
    /// The requested setting cannot be applied to this chip or variant.
    case unsupportedConfiguration(chip: ChipKind, reason: String)

    /// The underlying bus error, if this failure came from the bus.
    public var i2cError: I2CError? {
        if case .bus(let e) = self { return e }
        return nil
    }

    /// The failure in one line without the advice (for a device's state
    /// `reason`); ``description`` adds what to do.
    public var summary: String {
        if case .bus(let e) = self { return e.summary }
        return description
    }

    public var description: String {
        switch self {
        case .bus(let e):
            return e.description
        case .decode(let e):
            return e.description
        case let .wrongChip(expected, address, register, found, identifiedAs):
            let what: String
            if found == 0x00 || found == 0xFF {
                what = "no working device (the bus reads \(hex(found)), typical of a wrong address, a bus fault or a chip held in reset)"
            } else if let name = identifiedAs {
                what = "a \(name), which this driver does not support"
            } else {
                what = "an unknown device"
            }
            return "expected a \(expected.partName) at \(hex(address)) but its identity register \(hex(register)) reads \(hex(found)): \(what). Run `edge-agent probe` to see what answers on the bus and fix the chip/address in the board profile."
        case let .timeout(chip, address, waitingFor, ms):
            return "\(chip.partName) at \(hex(address)) did not finish \(waitingFor) within \(formatMilliseconds(ms)) ms (the data sheet's bound): the chip may be browned out or stuck; power-cycle the sensor and check its supply."
        case let .fifoOverflow(address, count, reason):
            return "MPU-6050 at \(hex(address)): FIFO \(reason) (\(count) bytes buffered); the FIFO was reset and those samples dropped. Read the FIFO more often or lower sample_rate_hz."
        case let .configurationMismatch(chip, address, register, expected, mask, found):
            return "\(chip.partName) at \(hex(address)): register \(hex(register)) reads \(hex(found)) but \(hex(expected)) was written (bits \(hex(mask)) checked): the chip was probably reset by a brown-out. Reset and configure it again."
        case let .unsupportedConfiguration(chip, reason):
            return "\(chip.partName): \(reason)"
        }
    }
}

@usableFromInline
func formatMilliseconds(_ ms: Double) -> String {
    let r = (ms * 1000).rounded() / 1000
    return r == r.rounded() ? String(Int(r)) : String(r)
}

/// Runs a decoding step, wrapping its error as ``DriverError/decode(_:)``.
@inlinable
func decoding<T>(_ body: () throws(DecodeError) -> T) throws(DriverError) -> T {
    do { return try body() } catch { throw .decode(error) }
}

/// Runs a bus operation, wrapping its error as ``DriverError/bus(_:)``.
@inlinable
func onBus<T>(_ body: () throws(I2CError) -> T) throws(DriverError) -> T {
    do { return try body() } catch { throw .bus(error) }
}
