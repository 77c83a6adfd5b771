import EdgeValues

/// The outcome of a read of any magnetometer: a field, or a typed reason
/// there is none. The engine's magnetometer devices consume this.
public enum MagneticFieldReading: Sendable, Equatable {
    /// A valid field: µT, **chip axes**.
    case field(Vector3)
    /// An axis is out of range (QMC5883L OVL, HMC5883L -4096): no valid field.
    /// Move away from magnets or choose a wider range.
    case overflow
    /// No new sample since the last read (DRDY/RDY clear).
    case notReady
}
