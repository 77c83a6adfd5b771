import EdgeValues

/// The device's orientation relative to a reference frame
/// (``CMAttitudeReferenceFrame``), as Euler angles, a rotation matrix and a
/// quaternion (one rotation, three forms).
open class CMAttitude: NSObject, NSCopying, NSSecureCoding {
    /// Board-to-reference rotation (EdgeFusion's convention:
    /// `v_reference = q.rotate(v_device)`), the one stored form.
    var attitude: Attitude

    public override init() {
        attitude = Attitude(quaternion: .identity, referenceFrame: .xArbitraryZVertical)
    }
    init(_ attitude: Attitude) { self.attitude = attitude }

    public class var supportsSecureCoding: Bool { true }

    open func encode(with coder: NSCoder) {
        let q = attitude.quaternion
        coder.encode(q.w, forKey: "quaternionW"); coder.encode(q.x, forKey: "quaternionX")
        coder.encode(q.y, forKey: "quaternionY"); coder.encode(q.z, forKey: "quaternionZ")
        coder.encode(attitude.referenceFrame.rawValue, forKey: "referenceFrame")
    }

    public required init?(coder: NSCoder) {
        let q = Quaternion(w: coder.decodeDouble(forKey: "quaternionW"), x: coder.decodeDouble(forKey: "quaternionX"),
                           y: coder.decodeDouble(forKey: "quaternionY"), z: coder.decodeDouble(forKey: "quaternionZ"))
        guard let name = coder.decodeObject(of: NSString.self, forKey: "referenceFrame") as String?,
              let frame = ReferenceFrame(rawValue: name) else { return nil }
        attitude = Attitude(quaternion: q, referenceFrame: frame)
        super.init()
    }

    /// Radians about the device's Y axis, in (−π, π]: positive when the
    /// right edge goes down.
    open var roll: Double { attitude.roll }
    /// Radians about the device's X axis, in [−π/2, π/2]: positive when the
    /// top edge comes up.
    open var pitch: Double { attitude.pitch }
    /// Radians about the vertical, in (−π, π]: positive counter-clockwise
    /// seen from above.
    open var yaw: Double { attitude.yaw }

    /// The rotation from the reference frame to the device frame
    /// (`device = matrix × reference`); its third column is −gravity.
    open var rotationMatrix: CMRotationMatrix {
        let m = attitude.rotationMatrix
        return CMRotationMatrix(m11: m.r0.x, m12: m.r0.y, m13: m.r0.z,
                                m21: m.r1.x, m22: m.r1.y, m23: m.r1.z,
                                m31: m.r2.x, m32: m.r2.y, m33: m.r2.z)
    }

    /// The same rotation as a unit quaternion.
    open var quaternion: CMQuaternion {
        let q = attitude.quaternion
        return CMQuaternion(x: q.x, y: q.y, z: q.z, w: q.w)
    }

    /// Makes this attitude the change from `attitude` to it: afterwards it
    /// is relative to `attitude`, expressed in `attitude`'s device frame.
    open func multiply(byInverseOf attitude: CMAttitude) {
        self.attitude.quaternion = self.attitude.relative(to: attitude.attitude)
    }

    open func copy(with zone: NSZone? = nil) -> Any { CMAttitude(attitude) }

    open override var description: String {
        "roll \(fixed3(roll)) pitch \(fixed3(pitch)) yaw \(fixed3(yaw))"
    }
}

/// Device motion: attitude, rotation rate, gravity and user acceleration
/// separated, the calibrated field and the heading.
open class CMDeviceMotion: CMLogItem {
    let _attitude: CMAttitude
    let _rotationRate: CMRotationRate
    let _gravity: CMAcceleration
    let _userAcceleration: CMAcceleration
    let _magneticField: CMCalibratedMagneticField
    let _heading: Double
    let _sensorLocation: SensorLocation

    /// Where the sensor that measured this sample sits.
    public enum SensorLocation: Int, @unchecked Sendable {
        case `default` = 0
        case headphoneLeft = 1
        case headphoneRight = 2
    }

    public override init() {
        _attitude = CMAttitude(); _rotationRate = CMRotationRate(); _gravity = CMAcceleration()
        _userAcceleration = CMAcceleration(); _magneticField = CMCalibratedMagneticField()
        _heading = -1; _sensorLocation = .default
        super.init()
    }

    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(_attitude, forKey: "attitude")
        coder.encode(CMAcceleration(x: _rotationRate.x, y: _rotationRate.y, z: _rotationRate.z), prefix: "rotationRate")
        coder.encode(_gravity, prefix: "gravity")
        coder.encode(_userAcceleration, prefix: "userAcceleration")
        let f = _magneticField.field
        coder.encode(CMAcceleration(x: f.x, y: f.y, z: f.z), prefix: "magneticField")
        coder.encode(Int(_magneticField.accuracy.rawValue), forKey: "magneticFieldAccuracy")
        coder.encode(_heading, forKey: "heading")
        coder.encode(_sensorLocation.rawValue, forKey: "sensorLocation")
    }

    public required init?(coder: NSCoder) {
        guard let attitude = coder.decodeObject(of: CMAttitude.self, forKey: "attitude") else { return nil }
        _attitude = attitude
        let r = coder.decodeAcceleration(prefix: "rotationRate")
        _rotationRate = CMRotationRate(x: r.x, y: r.y, z: r.z)
        _gravity = coder.decodeAcceleration(prefix: "gravity")
        _userAcceleration = coder.decodeAcceleration(prefix: "userAcceleration")
        let f = coder.decodeAcceleration(prefix: "magneticField")
        _magneticField = CMCalibratedMagneticField(
            field: CMMagneticField(x: f.x, y: f.y, z: f.z),
            accuracy: CMMagneticFieldCalibrationAccuracy(rawValue: Int32(coder.decodeInteger(forKey: "magneticFieldAccuracy"))) ?? .uncalibrated)
        _heading = coder.decodeDouble(forKey: "heading")
        _sensorLocation = SensorLocation(rawValue: coder.decodeInteger(forKey: "sensorLocation")) ?? .default
        super.init(coder: coder)
    }

    init(timestamp: TimeInterval, attitude: CMAttitude, rotationRate: CMRotationRate, gravity: CMAcceleration,
         userAcceleration: CMAcceleration, magneticField: CMCalibratedMagneticField, heading: Double,
         sensorLocation: SensorLocation) {
        _attitude = attitude; _rotationRate = rotationRate; _gravity = gravity
        _userAcceleration = userAcceleration; _magneticField = magneticField
        _heading = heading; _sensorLocation = sensorLocation
        super.init(timestamp: timestamp)
    }

    /// The attitude in the reference frame the updates were started with.
    open var attitude: CMAttitude { _attitude }
    /// Rad/s, the gyroscope's bias removed.
    open var rotationRate: CMRotationRate { _rotationRate }
    /// Gravity in g, device frame: (0, 0, −1) lying still face up.
    open var gravity: CMAcceleration { _gravity }
    /// The acceleration the user gives the device, g, gravity removed:
    /// ``CMAccelerometerData/acceleration`` = `gravity + userAcceleration`.
    open var userAcceleration: CMAcceleration { _userAcceleration }
    /// The calibrated field, µT; accuracy `.uncalibrated` (and a zero field)
    /// without a current magnetometer field.
    open var magneticField: CMCalibratedMagneticField { _magneticField }
    /// Degrees clockwise from the frame's north in [0, 360); negative (−1)
    /// in the arbitrary frames and while no magnetometer field backs the
    /// attitude.
    open var heading: Double { _heading }
    open var sensorLocation: SensorLocation { _sensorLocation }

    open override var description: String {
        "QuaternionX \(fixed3(attitude.quaternion.x)) QuaternionY \(fixed3(attitude.quaternion.y)) QuaternionZ \(fixed3(attitude.quaternion.z)) QuaternionW \(fixed3(attitude.quaternion.w)) UserAccelX \(fixed3(userAcceleration.x)) UserAccelY \(fixed3(userAcceleration.y)) UserAccelZ \(fixed3(userAcceleration.z)) RotationRateX \(fixed3(rotationRate.x)) RotationRateY \(fixed3(rotationRate.y)) RotationRateZ \(fixed3(rotationRate.z)) Heading \(fixed3(heading)) @ \(fixed3(timestamp))"
    }
}
