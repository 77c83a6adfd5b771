/// A calibrated magnetic field sample (`CMCalibratedMagneticField`).
public struct CalibratedMagneticField: Equatable, Sendable {
    /// µT, device frame, hard/soft iron removed.
    public var field: Vector3
    public var accuracy: MagneticFieldCalibrationAccuracy

    @inlinable public init(field: Vector3, accuracy: MagneticFieldCalibrationAccuracy) {
        self.field = field; self.accuracy = accuracy
    }
}

/// What Core Motion's `CMDeviceMotion` gives an app, for one sample.
///
/// Signs follow Core Motion: a device lying flat and still has
/// `gravity == (0, 0, −1)`, and `gravity + userAcceleration` equals Core
/// Motion's raw accelerometer reading, which is the measured specific force
/// with the opposite sign: `−accel / 9.80665` for our accelerometer input
/// (m/s², +9.81 on Z when flat).
public struct DeviceMotion: Equatable, Sendable {
    public var attitude: Attitude
    /// Gravity in the device frame, g.
    public var gravity: Vector3
    /// Acceleration the user gives the device (Core Motion sign), g, device frame.
    public var userAcceleration: Vector3
    /// Gyroscope rate with the estimated bias removed, rad/s, device frame.
    public var rotationRate: Vector3
    public var magneticField: CalibratedMagneticField
    /// Compass heading in degrees [0, 360), clockwise (towards east/−Y) from
    /// the frame's X axis, of the direction the device faces: the horizontal
    /// part of its Y axis (top edge) plus that of its −Z axis (out of the
    /// back). Flat, that is where the top edge points; upright, where the
    /// back points (where a camera on the back looks). For the arbitrary
    /// frames it is relative to their X axis.
    public var heading: Double

    @inlinable public init(attitude: Attitude, gravity: Vector3, userAcceleration: Vector3, rotationRate: Vector3,
                           magneticField: CalibratedMagneticField, heading: Double) {
        self.attitude = attitude; self.gravity = gravity; self.userAcceleration = userAcceleration
        self.rotationRate = rotationRate; self.magneticField = magneticField; self.heading = heading
    }
}

extension AttitudeFilter {
    /// Magnetometer calibration accuracy right now: from the calibration's
    /// quality and the field's consistency.
    ///
    /// * `uncalibrated`: no calibration (neither applied by the filter nor
    ///   declared as already applied to the input), or no field yet;
    /// * `low`: calibrated, but the field is disturbed now (the filter's
    ///   disturbance detection found it off its reference in norm or dip,
    ///   and paused the heading correction), or its strength is more than
    ///   15 % from the one the calibration measured;
    /// * `high`: the fit's RMS residual under 3 % of the field (what
    ///   `edge-agent calibrate mag` reports as good) and a reference field
    ///   established (VQF establishes one once the device has turned);
    ///   `medium` otherwise - calibrated, consistent with the calibration,
    ///   not yet checked against a reference (a board that never moved).
    @inlinable @inline(__always)
    public var magneticFieldAccuracy: MagneticFieldCalibrationAccuracy {
        let cal = calibrationQuality
        guard state.magSamples > 0, cal.present else { return .uncalibrated }
        if state.magDisturbed && state.magRefNorm > 0 { return .low }
        if cal.fieldStrength > 0 {
            let norm = state.lastMag.norm
            if abs(norm - cal.fieldStrength) > 0.15 * cal.fieldStrength { return .low }
        }
        return cal.residual > 0 && cal.residual < 0.03 && state.magRefNorm > 0 ? .high : .medium
    }

    /// The Core Motion sample for the current state, with the attitude in `frame`.
    @inlinable @inline(__always) public func deviceMotion(in frame: ReferenceFrame) -> DeviceMotion {
        let q = quaternion(in: frame)
        // gravity: earth down (0,0,-1) in device coordinates = −(third row of R)
        let r2 = Vector3(2 * (q.x * q.z - q.w * q.y), 2 * (q.y * q.z + q.w * q.x), 1 - 2 * (q.x * q.x + q.y * q.y))
        let gravity = -r2
        let measured = state.lastAccel * (-1 / standardGravity)
        let attitude = Attitude(quaternion: q, referenceFrame: frame)
        return DeviceMotion(
            attitude: attitude,
            gravity: gravity,
            userAcceleration: measured - gravity,
            rotationRate: state.lastGyro - state.bias,
            magneticField: CalibratedMagneticField(field: state.lastMag, accuracy: magneticFieldAccuracy),
            heading: attitude.facingHeadingDegrees)
    }

    /// The last accelerometer reading split into gravity's share and the
    /// rest, m/s², device frame, in the accelerometer's own sign (specific
    /// force: +9.81 on the up axis at rest), so that
    /// `gravity + userAcceleration` is the reading itself. The agent's wire
    /// convention (docs/protocol.md); Core Motion's values are these times
    /// −1/9.80665 (``deviceMotion(in:)`` gives them). The vertical does not
    /// depend on the reference frame.
    @inlinable public var specificForceSplit: (gravity: Vector3, userAcceleration: Vector3) {
        let q = quaternion6D
        // up (0,0,1) in device coordinates = third row of R, times g
        let up = Vector3(2 * (q.x * q.z - q.w * q.y), 2 * (q.y * q.z + q.w * q.x), 1 - 2 * (q.x * q.x + q.y * q.y))
        let gravity = up * standardGravity
        return (gravity, state.lastAccel - gravity)
    }
}
