/// Core Motion's `CMMagneticFieldCalibrationAccuracy`, with Apple's raw
/// values. Named as on the wire (`magneticFieldAccuracy`).
public enum MagneticFieldCalibrationAccuracy: Int, Sendable, Hashable, Codable, CaseIterable, BitwiseCopyable {
    /// No magnetometer calibration, or no magnetometer sample yet.
    case uncalibrated = -1
    /// Calibrated, but the field is disturbed (heading correction paused).
    case low = 0
    /// Calibrated and undisturbed, fit quality not known to be good.
    case medium = 1
    /// Calibrated (fit residual under 3 %), undisturbed, reference field established.
    case high = 2

    /// The name as a static string (written to the wire without allocating).
    public var wireName: StaticString {
        switch self {
        case .uncalibrated: return "uncalibrated"
        case .low: return "low"
        case .medium: return "medium"
        case .high: return "high"
        }
    }
}
