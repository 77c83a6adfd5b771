import EdgeFusion
import EdgeProtocol

/// Attitude fusion of the primary IMU with the magnetometer (VQF), and the
/// motion streams it feeds: accelerometer, gyroscope, device motion.
///
/// A field joins the filter with the first IMU sample captured at or after
/// it (else the last sample of the tick it arrived in), and only while it is
/// fresh: device motion claims a north frame, a heading and a field only
/// while the field *in the filter* was captured within
/// ``fieldLifetimeNanoseconds`` before the sample - a field older than that
/// is never presented as current, even while a newer one waits to be fused
/// (after an IMU outage the first samples of a FIFO batch used to carry the
/// field from before it); the sample falls back to `xArbitraryZVertical`
/// and says so.
///
/// With `Settings.magnetometerSelfCalibration` the field's hard iron (and,
/// with `MagnetometerSelfCalibration.Settings.softIron`, its soft iron) is
/// learned from the gyroscope as the board turns (`MagnetometerSelfCalibration`,
/// seeded by the guided calibration the magnetometer applies): the filter
/// and device motion get the field with it removed, and its accuracy.
struct FusionStage: EngineStage {
    static let name = "fusion"
    static let produces = [
        StageProduct(.accelerometer, needs: .motion), StageProduct(.gyroscope, needs: .motion),
        StageProduct(.deviceMotion, needs: [.motion, .field]), StageProduct(.accelerometerBatch, needs: .motion),
        StageProduct(.deviceMotionBatch, needs: [.motion, .field]),
    ]
    let consumes: StageInputs
    var filter: AttitudeFilter
    /// The continuous calibration (off: the field goes in as it comes).
    var learning: MagneticFieldLearning
    /// The configured frame (served while the magnetometer is live).
    let frame: ReferenceFrame
    /// The newest field not yet fused, board frame, µT.
    var pendingField: Vector3?
    /// Capture time of ``pendingField``, ns.
    var pendingFieldNanoseconds: UInt64 = 0
    /// Capture time of the field in the filter, ns (nil: none, or lost).
    var lastFieldNanoseconds: UInt64?
    /// How long a fused field stays current, ns (the magnetometer's stall limit).
    var fieldLifetimeNanoseconds: UInt64

    init(settings: AttitudeFilter.Settings, learning learningSettings: MagnetometerSelfCalibration.Settings = .init(),
         sampleInterval: Double, frame: ReferenceFrame, fieldLifetime: UInt64, hasMagnetometer: Bool = true) {
        filter = AttitudeFilter(settings: settings.running, sampleInterval: sampleInterval)
        learning = MagneticFieldLearning(enabled: settings.magnetometerSelfCalibration, settings: learningSettings)
        self.frame = frame
        fieldLifetimeNanoseconds = fieldLifetime
        consumes = hasMagnetometer ? [.motion, .field] : .motion
    }

    /// The attitude runs on every IMU sample: the altitude stage uses it,
    /// and a device-motion subscriber must not start from a cold filter.
    func runs(_ p: Publisher) -> Bool { true }

    /// A new field (calibrated, board frame) captured at `t`.
    mutating func field(_ f: Vector3, at t: UInt64, publisher p: inout Publisher) {
        pendingField = f
        pendingFieldNanoseconds = t
    }

    /// The magnetometer stopped (missing, idle, restarted): forget its field.
    mutating func inputLost(_ input: StageInputs, at t: UInt64, publisher p: inout Publisher) {
        guard input == .field else { return }
        pendingField = nil
        lastFieldNanoseconds = nil
    }

    mutating func timingChanged(_ t: StageTiming) { fieldLifetimeNanoseconds = t.fieldLifetimeNanoseconds }

    mutating func calibrationChanged(_ c: EngineCalibration) {
        filter.inputCalibration = c.magnetometer
        learning.prepare(guided: c.magnetometer)
    }

    /// Whether a field fused within its lifetime backs a sample taken at `t`.
    @inline(__always) func fieldIsCurrent(at t: UInt64) -> Bool {
        guard let f = lastFieldNanoseconds else { return false }
        return t <= f || t - f <= fieldLifetimeNanoseconds
    }

    /// One IMU sample: fuse, then publish what is wanted.
    @inline(__always)
    mutating func motion(_ input: inout MotionInput, publisher p: inout Publisher) {
        let acc = input.accel, gyr = input.gyro, t = input.t
        var mag: Vector3? = nil
        if let m = pendingField, input.last || t >= pendingFieldNanoseconds {
            mag = m
            pendingField = nil
            lastFieldNanoseconds = pendingFieldNanoseconds
        }
        learning.update(&filter, gyro: gyr, accel: acc, mag: mag, dt: input.dt)
        input.attitude6D = filter.quaternion6D
        if p.wants(.accelerometer) { p.publish(.accelerometer(AccelerometerSample(timestampNs: t, acceleration: acc))) }
        if p.wants(.accelerometerBatch) { p.publish(.accelerometerBatch(AccelerometerSample(timestampNs: t, acceleration: acc))) }
        if p.wants(.gyroscope) {
            p.publish(.gyroscope(GyroscopeSample(timestampNs: t, rotationRate: gyr - filter.gyroBias)))
        }
        let dm = p.wants(.deviceMotion), dmb = p.wants(.deviceMotionBatch)
        if dm || dmb {
            let live = fieldIsCurrent(at: t)
            let sample = deviceMotionSample(filter, at: t, frame: frame.needsMagnetometer && !live ? .xArbitraryZVertical : frame,
                                            liveField: live, accuracy: learning.accuracy(filter))
            if dm { p.publish(.deviceMotion(sample)) }
            if dmb { p.publish(.deviceMotionBatch(sample)) }
        }
    }

    /// Degraded while the IMU gives no samples or a configured north frame
    /// cannot be served.
    func status(at t: UInt64, sources: StageSources, publisher p: Publisher) -> StageStatus? {
        guard let imu = sources.motion else { return nil }
        if !imu.isReading {
            return StageStatus(name: Self.name, degraded: !imu.idle, reason: imu.idle ? nil : "no IMU samples: \(imu.reason ?? "")")
        }
        if frame.needsMagnetometer && !fieldIsCurrent(at: t) {
            return StageStatus(name: "fusion", degraded: true,
                               reason: "no current magnetometer field: device motion in xArbitraryZVertical, no heading")
        }
        if frame.needsMagnetometer && learning.accuracy(filter) == .uncalibrated {
            // not degraded (the frame is served), but the heading is not to be trusted yet: what
            // Core Motion's showsDeviceMovementDisplay asks the user to do
            return StageStatus(name: "fusion", degraded: false,
                               reason: "the magnetometer is not calibrated yet: turn the board through a few orientations")
        }
        return StageStatus(name: "fusion", degraded: false, reason: nil)
    }
}

/// Device motion from a filter, in the wire's convention (docs/protocol.md:
/// SI, and gravity and user acceleration in the accelerometer's sign, so
/// that they add up to the accelerometer's reading): converted once, here.
/// `liveField`: a current field backs it; otherwise the field is zero and
/// `uncalibrated` - never an old one.
@inline(__always)
func deviceMotionSample(_ f: AttitudeFilter, at t: UInt64, frame: ReferenceFrame, liveField: Bool,
                        accuracy: MagneticFieldCalibrationAccuracy? = nil) -> DeviceMotionSample {
    let m = f.deviceMotion(in: frame)
    let split = f.specificForceSplit
    let live = liveField && frame != .xArbitraryZVertical
    // What every frame needs (docs/protocol.md: attitude6D, northYaw_deg,
    // northYawState), so a client derives each manager's frame itself.
    let fused = f.state.magSamples > 0
    var northYaw: Double? = nil
    if fused {
        var y = f.yawOffset(to: .xMagneticNorthZVertical) * (180 / Double.pi)
        if y > 180 { y -= 360 } else if y <= -180 { y += 360 }
        northYaw = y
    }
    return DeviceMotionSample(
        timestampNs: t, attitude: m.attitude.quaternion,
        gravity: split.gravity, userAcceleration: split.userAcceleration,
        rotationRate: m.rotationRate, magneticField: live ? m.magneticField.field : .zero,
        magneticFieldAccuracy: live ? accuracy ?? m.magneticField.accuracy : .uncalibrated,
        headingDeg: frame.hasNorth ? m.heading : nil, referenceFrame: frame,
        attitude6D: f.quaternion6D, northYawDeg: northYaw,
        northYawState: !fused ? .none : liveField ? .live : .held)
}

/// Whether a stage can do its whole job now, and if not, why.
public struct StageStatus: Sendable, Equatable {
    public var name: String
    public var degraded: Bool
    public var reason: String?
    public init(name: String, degraded: Bool, reason: String?) {
        self.name = name; self.degraded = degraded; self.reason = reason
    }
}

extension SensorHub {
    /// What the continuous magnetometer calibration learned, folded into the
    /// guided calibration in effect (chip frame) for a magnetometer mounted
    /// with `boardFromChip`, to be saved (`CalibrationLoader.saveLearned`);
    /// nil when nothing worth keeping was learned. Read it from the loop
    /// thread or once the loop has stopped.
    public func learnedMagnetometerCalibration(boardFromChip m: Matrix3) -> MagnetometerCalibration? {
        guard let fusion = stage(FusionStage.self) else { return nil }
        return fusion.learning.estimator?.learnedCalibration(guided: fusion.filter.inputCalibration, boardFromChip: m)
    }
}
