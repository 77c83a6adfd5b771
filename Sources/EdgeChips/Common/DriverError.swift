import EdgeBus

/// The chips this module drives.
public enum ChipKind: String, Sendable, Equatable, Hashable, CaseIterable, Codable {
    case mpu6050
    case bmp280
    case qmc5883l

    /// The part name as printed in data sheets.
    public var partName: String {
        switch self {
        case .mpu6050: return "MPU-6050"
        case .bmp280: return "BMP280"
        case .qmc5883l: return "QMC5883L"
        }
    }
}

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
    /// The chip returned its "skipped / not measured" raw value (BMP280
    /// 0x80000) for a channel that should have been measured.
    case skippedMeasurement(chip: ChipKind, channel: String)
    /// Factory calibration words are implausible (bad read, wrong chip).
    case invalidCalibration(chip: ChipKind, reason: String)
    /// The MPU-6050 FIFO overflowed or lost record alignment. The driver has
    /// already reset the FIFO; the buffered samples are dropped.
    case fifoOverflow(address: UInt8, bytesInFIFO: Int, reason: String)
    /// A configuration register no longer holds what the driver wrote
    /// (re-check after a brown-out or an unexpected reset).
    case configurationMismatch(chip: ChipKind, address: UInt8, register: UInt8, expected: UInt8, mask: UInt8, found: UInt8)
    /// The requested setting cannot be applied to this chip or variant.
    case unsupportedConfiguration(chip: ChipKind, reason: String)
    /// A register needed for decoding is unreadable in a register dump
    /// (shown as `XX`, or missing).
    case unreadableRegister(chip: ChipKind, register: UInt8, name: String)

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
        case let .skippedMeasurement(chip, channel):
            return "\(chip.partName) returned the 'skipped' raw value for \(channel) (no conversion result): the channel's oversampling is 0 or no measurement has completed yet. Enable the channel's oversampling and read again after a conversion."
        case let .invalidCalibration(chip, reason):
            return "\(chip.partName) calibration data is invalid: \(reason). Re-read after a soft reset; if it persists the chip or its wiring is faulty."
        case let .fifoOverflow(address, count, reason):
            return "MPU-6050 at \(hex(address)): FIFO \(reason) (\(count) bytes buffered); the FIFO was reset and those samples dropped. Read the FIFO more often or lower sample_rate_hz."
        case let .configurationMismatch(chip, address, register, expected, mask, found):
            return "\(chip.partName) at \(hex(address)): register \(hex(register)) reads \(hex(found)) but \(hex(expected)) was written (bits \(hex(mask)) checked): the chip was probably reset by a brown-out. Reset and configure it again."
        case let .unsupportedConfiguration(chip, reason):
            return "\(chip.partName): \(reason)"
        case let .unreadableRegister(chip, register, name):
            return "\(chip.partName) register \(hex(register)) (\(name)) is unreadable in the dump (shown as XX or missing) but is needed to decode it: dump again, e.g. `i2cdump -y BUS ADDR`, with the chip powered and awake."
        }
    }
}

@usableFromInline
func formatMilliseconds(_ ms: Double) -> String {
    let r = (ms * 1000).rounded() / 1000
    return r == r.rounded() ? String(Int(r)) : String(r)
}

/// Runs a bus operation, wrapping its error as ``DriverError/bus(_:)``.
@inlinable
func onBus<T>(_ body: () throws(I2CError) -> T) throws(DriverError) -> T {
    do { return try body() } catch { throw .bus(error) }
}
