import EdgeValues

/// Bytes that were read (from a chip, a recording or a register dump) but
/// do not decode. Pure: what the decoders throw; the drivers wrap it as
/// `DriverError.decode`.
public enum DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The chip returned its "skipped / not measured" raw value (BMP280
    /// 0x80000) for a channel that should have been measured.
    case skippedMeasurement(chip: ChipKind, channel: String)
    /// Factory calibration words are implausible (bad read, wrong chip).
    case invalidCalibration(chip: ChipKind, reason: String)
    /// A register needed for decoding is unreadable in a register dump
    /// (shown as `XX`, or missing).
    case unreadableRegister(chip: ChipKind, register: UInt8, name: String)

    public var description: String {
        switch self {
        case let .skippedMeasurement(chip, channel):
            return "\(chip.partName) returned the 'skipped' raw value for \(channel) (no conversion result): the channel's oversampling is 0 or no measurement has completed yet. Enable the channel's oversampling and read again after a conversion."
        case let .invalidCalibration(chip, reason):
            return "\(chip.partName) calibration data is invalid: \(reason). Re-read after a soft reset; if it persists the chip or its wiring is faulty."
        case let .unreadableRegister(chip, register, name):
            return "\(chip.partName) register \(hex(register)) (\(name)) is unreadable in the dump (shown as XX or missing) but is needed to decode it: dump again, e.g. `i2cdump -y BUS ADDR`, with the chip powered and awake."
        }
    }
}
