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

/// Turns the agent's device motion (in the one frame the agent runs, its
/// `fusion.frame`) into the frame an app asked for.
///
/// * The arbitrary frames: the agent's attitude as it is (its X is an
///   arbitrary horizontal direction for the app: magnetic north when the
///   agent has a magnetometer, which also keeps the yaw from drifting, so
///   both arbitrary frames behave as Apple's corrected one); heading −1.
/// * A north frame the agent runs: as the agent gives it, with its heading.
/// * The other north frame: turned by the magnetic declination, when the
///   agent's configuration says it (`fusion.declination_deg`).
/// * While the agent has no current magnetometer field it publishes in
///   `xArbitraryZVertical`: that attitude, heading −1.
struct FrameConverter: Sendable {
    let requested: ReferenceFrame
    /// Degrees east of true north, when known.
    let declinationDeg: Double?

    init(requested: ReferenceFrame, declinationDeg: Double?) {
        self.requested = requested; self.declinationDeg = declinationDeg
    }

    /// The attitude in the requested frame, and the heading (−1: none).
    func convert(_ s: DeviceMotionSample) -> (Attitude, Double) {
        let wire = s.referenceFrame
        guard requested.hasNorth, wire.hasNorth else {
            return (Attitude(quaternion: s.attitude, referenceFrame: requested), -1)
        }
        guard requested != wire, let d = declinationDeg else {
            return (Attitude(quaternion: s.attitude, referenceFrame: requested), s.headingDeg ?? -1)
        }
        // True north = magnetic north turned by the declination (D degrees
        // east: the magnetic frame's X lies at yaw −D in the true frame).
        let turn = requested == .xTrueNorthZVertical ? -d : d
        var heading = -1.0
        if let h = s.headingDeg {
            heading = (h - turn).truncatingRemainder(dividingBy: 360)
            if heading < 0 { heading += 360 }
        }
        return (Attitude(quaternion: Quaternion(yaw: turn * .pi / 180) * s.attitude, referenceFrame: requested), heading)
    }
}
