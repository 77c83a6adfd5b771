/// A stream a client can subscribe to, named as on the wire (`"stream"` key).
///
/// Each stream maps to one Core Motion source; its samples are one fixed-size
/// value type (see ``Sample``). Connection events of devices are not a stream:
/// every client receives them (`"class":"connection"`).
public enum StreamName: String, CaseIterable, Hashable, Sendable, Codable {
    /// Raw calibrated acceleration, m/s² (CMAccelerometerData).
    case accelerometer
    /// Bias-corrected rotation rate, rad/s (CMGyroData).
    case gyroscope
    /// Calibrated magnetic field, µT (CMMagnetometerData).
    case magnetometer
    /// Fused attitude, gravity, user acceleration, rotation rate, field (CMDeviceMotion).
    case deviceMotion
    /// Accelerometer samples at the full IMU rate for CMBatchedSensorManager;
    /// samples arrive one per message and the client library batches them.
    case accelerometerBatch
    /// Device-motion samples at the full fusion rate for CMBatchedSensorManager.
    case deviceMotionBatch
    /// Device motion of the accessory IMU (second MPU-6050 at 0x69),
    /// CMHeadphoneMotionManager.
    case accessoryMotion
    /// Accessory IMU connect/disconnect state (CMHeadphoneMotionManagerDelegate).
    /// Subscribing keeps the accessory IMU probed; its messages are
    /// `"class":"connection"` events, which every client receives anyway.
    case accessoryConnection
    /// Relative altitude and pressure (CMAltitudeData).
    case altitude
    /// Absolute altitude with accuracy (CMAbsoluteAltitudeData).
    case absoluteAltitude
    /// Depth, pressure and water temperature (CMWaterSubmersionManager).
    case submersion
    /// Steps, distance, floors, cadence and pace since the agent started
    /// counting (CMPedometerData), on every change.
    case pedometer
    /// The pedometer's pause / resume (CMPedometerEvent).
    case pedometerEvent
    /// What the wearer is doing, with a confidence (CMMotionActivity), on every change.
    case activity
    /// Relative humidity of the air, % (a BME280; no Core Motion counterpart).
    /// Needs the `altitude` entitlement: it is environmental data from the
    /// same barometer chip, as private as pressure and temperature.
    case humidity

    /// The entitlement a client needs to subscribe to or poll this stream.
    public var entitlement: Entitlement {
        switch self {
        case .accelerometer, .gyroscope, .magnetometer, .deviceMotion,
             .accelerometerBatch, .deviceMotionBatch, .accessoryMotion, .accessoryConnection:
            return .motion
        case .altitude, .absoluteAltitude, .humidity:
            return .altitude
        case .submersion:
            return .submersionShallow
        case .pedometer, .pedometerEvent, .activity:
            return .fitness
        }
    }

    /// Whether a client holding `held` may subscribe to or poll this stream:
    /// ``entitlement``, or for `submersion` either submersion entitlement
    /// (`submersion.full` implies the shallow range).
    public func isPermitted(by held: Set<Entitlement>) -> Bool {
        if self == .submersion { return held.contains(.submersionShallow) || held.contains(.submersionFull) }
        return held.contains(entitlement)
    }

    /// What a refusal names: `"submersion.shallow" or "submersion.full"` for submersion.
    public var entitlementDescription: String {
        self == .submersion ? "\"submersion.shallow\" or \"submersion.full\"" : "\"\(entitlement.rawValue)\""
    }

    /// Whether the stream carries samples (false for event-only streams).
    public var carriesSamples: Bool { self != .accessoryConnection }

    /// Dense index for per-stream tables.
    @inlinable public var index: Int {
        switch self {
        case .accelerometer: return 0
        case .gyroscope: return 1
        case .magnetometer: return 2
        case .deviceMotion: return 3
        case .accelerometerBatch: return 4
        case .deviceMotionBatch: return 5
        case .accessoryMotion: return 6
        case .accessoryConnection: return 7
        case .altitude: return 8
        case .absoluteAltitude: return 9
        case .submersion: return 10
        case .pedometer: return 11
        case .pedometerEvent: return 12
        case .activity: return 13
        case .humidity: return 14
        }
    }
    /// Number of streams (size of per-stream tables).
    public static let count = 15

    // Equality and hashing by the dense index. Without these, the standard
    // library's defaults for a RawRepresentable type compare and hash the
    // String raw value: a string hash on every lookup of a table keyed by
    // stream, which the clients' delivery path makes for every sample.
    @inlinable public static func == (a: StreamName, b: StreamName) -> Bool { a.index == b.index }
    @inlinable public func hash(into hasher: inout Hasher) { hasher.combine(index) }
}
