import EdgeValues
import EdgeProtocol

// From the agent's samples (SI, docs/protocol.md) to Core Motion's values:
// the only place units and signs change.
//
// THE ACCELERATION SIGN. The wire's accelerations are specific force in
// m/s², what the chip measures: lying still face up the accelerometer reads
// z ≈ +9.81, device motion's gravity z ≈ +9.81 and its user acceleration
// ≈ 0, and gravity + userAcceleration is the accelerometer's reading
// (docs/protocol.md, protocol 2). Core Motion's values point the other
// way, in g (CMAccelerometerData z ≈ −1 g face up, gravity (0, 0, −1)). So
// every acceleration is multiplied by −1 / 9.80665, once, here.

enum Wire {
    /// Standard gravity, m/s² per g (EdgeValues' one definition).
    @inline(__always) static var g: Double { standardGravity }

    /// CLOCK_MONOTONIC ns → seconds since boot (`CMLogItem.timestamp`).
    @inline(__always) static func timestamp(_ ns: UInt64) -> TimeInterval { Double(ns) / 1e9 }

    /// Specific force (m/s², +9.81 up at rest) → Core Motion acceleration (g, −1 up at rest).
    @inline(__always) static func acceleration(specificForce v: Vector3) -> CMAcceleration {
        CMAcceleration(x: -v.x / g, y: -v.y / g, z: -v.z / g)
    }

    static func accelerometerData(_ s: AccelerometerSample) -> CMAccelerometerData {
        CMAccelerometerData(timestamp: timestamp(s.timestampNs), acceleration: acceleration(specificForce: s.acceleration))
    }

    static func gyroData(_ s: GyroscopeSample) -> CMGyroData {
        CMGyroData(timestamp: timestamp(s.timestampNs),
                   rotationRate: CMRotationRate(x: s.rotationRate.x, y: s.rotationRate.y, z: s.rotationRate.z))
    }

    static func magnetometerData(_ s: MagnetometerSample) -> CMMagnetometerData {
        CMMagnetometerData(timestamp: timestamp(s.timestampNs),
                           magneticField: CMMagneticField(x: s.magneticField.x, y: s.magneticField.y, z: s.magneticField.z))
    }

    static func accuracy(_ a: MagneticFieldCalibrationAccuracy) -> CMMagneticFieldCalibrationAccuracy {
        CMMagneticFieldCalibrationAccuracy(rawValue: Int32(a.rawValue)) ?? .uncalibrated
    }

    /// Device motion with the attitude given (already in the requested frame).
    static func deviceMotion(_ s: DeviceMotionSample, attitude: Attitude, heading: Double,
                             location: CMDeviceMotion.SensorLocation) -> CMDeviceMotion {
        CMDeviceMotion(timestamp: timestamp(s.timestampNs), attitude: CMAttitude(attitude),
                       rotationRate: CMRotationRate(x: s.rotationRate.x, y: s.rotationRate.y, z: s.rotationRate.z),
                       gravity: acceleration(specificForce: s.gravity),
                       userAcceleration: acceleration(specificForce: s.userAcceleration),
                       magneticField: CMCalibratedMagneticField(
                           field: CMMagneticField(x: s.magneticField.x, y: s.magneticField.y, z: s.magneticField.z),
                           accuracy: accuracy(s.magneticFieldAccuracy)),
                       heading: heading, sensorLocation: location)
    }

    /// Pa → kPa, with the altitude relative to `zero` (the first sample of
    /// these updates: Core Motion's relative altitude starts at 0 when the
    /// app starts updates; the wire's is relative to when the agent's
    /// altimeter started).
    static func altitudeData(_ s: AltitudeSample, zero: Double) -> CMAltitudeData {
        CMAltitudeData(timestamp: timestamp(s.timestampNs), relativeAltitude: s.relativeAltitude - zero,
                       pressureKPa: s.pressure / 1000)
    }

    static func absoluteAltitudeData(_ s: AbsoluteAltitudeSample) -> CMAbsoluteAltitudeData {
        CMAbsoluteAltitudeData(timestamp: timestamp(s.timestampNs), altitude: s.altitude, accuracy: s.accuracy,
                               precision: s.precision)
    }

    static func frame(_ f: CMAttitudeReferenceFrame) -> ReferenceFrame? {
        switch f {
        case .xArbitraryZVertical: return .xArbitraryZVertical
        case .xArbitraryCorrectedZVertical: return .xArbitraryCorrectedZVertical
        case .xMagneticNorthZVertical: return .xMagneticNorthZVertical
        case .xTrueNorthZVertical: return .xTrueNorthZVertical
        default: return nil
        }
    }

    static func frame(_ f: ReferenceFrame) -> CMAttitudeReferenceFrame {
        switch f {
        case .xArbitraryZVertical: return .xArbitraryZVertical
        case .xArbitraryCorrectedZVertical: return .xArbitraryCorrectedZVertical
        case .xMagneticNorthZVertical: return .xMagneticNorthZVertical
        case .xTrueNorthZVertical: return .xTrueNorthZVertical
        }
    }
}

/// Derives the frame one manager asked for from what the agent publishes
/// for every frame (docs/protocol.md: `attitude6D`, the 6D attitude from
/// the gyroscope and accelerometer; `northYaw_deg`, the yaw that turns it
/// into magnetic north; `northYawState`). One converter per start of
/// updates: the arbitrary frames start where the device points then.
///
/// * `xArbitraryZVertical`: the 6D attitude turned so that the first
///   sample's yaw is 0; no magnetometer (drifts with the gyroscope, as
///   Apple's); heading −1.
/// * `xArbitraryCorrectedZVertical`: the 9D attitude (6D turned by the
///   north yaw) turned so that the first sample's yaw is 0: the
///   magnetometer holds its yaw. When the field drops out the last north
///   yaw is held (the attitude carries on with the gyroscope, no jump);
///   when the first field arrives after the start, the frame is re-based
///   so that the attitude does not jump either. Heading −1.
/// * `xMagneticNorthZVertical`: the 6D attitude turned by the north yaw
///   (held while the field is out), its heading; no sample before the
///   agent's first field (a north it does not know is not served).
/// * `xTrueNorthZVertical`: as magnetic north, turned by the declination
///   the agent's `version` line gives (D degrees east: true north is
///   magnetic north turned by −D).
final class FrameConverter: @unchecked Sendable {
    let requested: ReferenceFrame
    /// Degrees east of true north, when known (asked at each sample: the
    /// agent's version line says it).
    let declinationDeg: @Sendable () -> Double?
    private let lock = NSLock()
    /// Rad about +Z added after the north yaw (arbitrary frames), set at the first sample.
    private var zeroYaw: Double?
    /// Whether ``zeroYaw`` was set with a north yaw (corrected frame).
    private var zeroHasNorth = false
    /// The last north yaw the agent gave, rad.
    private var lastNorthYaw: Double?

    init(requested: ReferenceFrame, declinationDeg: @escaping @Sendable () -> Double? = { nil }) {
        self.requested = requested; self.declinationDeg = declinationDeg
    }

    /// The attitude in the requested frame, and the heading (−1: none);
    /// nil: the frame cannot be served yet (a north before the first field).
    func convert(_ s: DeviceMotionSample) -> (Attitude, Double)? {
        lock.withLock { convertLocked(s) }
    }

    private func convertLocked(_ s: DeviceMotionSample) -> (Attitude, Double)? {
        let q6 = s.attitude6D
        if let n = s.northYawDeg { lastNorthYaw = n * .pi / 180 }
        let north = lastNorthYaw
        func turned(_ yaw: Double) -> Attitude { Attitude(quaternion: Quaternion(yaw: yaw) * q6, referenceFrame: requested) }
        switch requested {
        case .xArbitraryZVertical:
            if zeroYaw == nil { zeroYaw = -Attitude(quaternion: q6, referenceFrame: requested).yaw }
            return (turned(zeroYaw!), -1)
        case .xArbitraryCorrectedZVertical:
            if zeroYaw == nil {
                zeroYaw = -Attitude(quaternion: q6, referenceFrame: requested).yaw - (north ?? 0)
                zeroHasNorth = north != nil
            } else if !zeroHasNorth, let n = north {
                // the first field since the start: keep the attitude where it was
                zeroYaw! -= n
                zeroHasNorth = true
            }
            return (turned(zeroYaw! + (north ?? 0)), -1)
        case .xMagneticNorthZVertical, .xTrueNorthZVertical:
            guard var yaw = north else { return nil }
            if requested == .xTrueNorthZVertical {
                guard let d = declinationDeg() else { return nil }
                yaw -= d * .pi / 180
            }
            let a = turned(yaw)
            return (a, a.facingHeadingDegrees)
        }
    }
}
