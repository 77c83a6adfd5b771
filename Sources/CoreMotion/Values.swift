// Core Motion's C structs and enums, as the SDK imports them: structs with
// `var` fields, a zero `init()` and the memberwise initializer; enums with
// Apple's raw values. Nothing beyond Apple's surface (apps extend these).

/// Acceleration in g (1 g = 9.80665 m/s²), device frame.
public struct CMAcceleration: Sendable {
    public var x: Double
    public var y: Double
    public var z: Double
    public init() { x = 0; y = 0; z = 0 }
    public init(x: Double, y: Double, z: Double) { self.x = x; self.y = y; self.z = z }
}

/// Rotation rate in radians per second about each device axis (right-hand rule).
public struct CMRotationRate: Sendable {
    public var x: Double
    public var y: Double
    public var z: Double
    public init() { x = 0; y = 0; z = 0 }
    public init(x: Double, y: Double, z: Double) { self.x = x; self.y = y; self.z = z }
}

/// Magnetic field in microtesla (µT), device frame.
public struct CMMagneticField: Sendable {
    public var x: Double
    public var y: Double
    public var z: Double
    public init() { x = 0; y = 0; z = 0 }
    public init(x: Double, y: Double, z: Double) { self.x = x; self.y = y; self.z = z }
}

/// A unit quaternion (x, y, z vector part; w scalar part).
public struct CMQuaternion: Sendable {
    public var x: Double
    public var y: Double
    public var z: Double
    public var w: Double
    public init() { x = 0; y = 0; z = 0; w = 0 }
    public init(x: Double, y: Double, z: Double, w: Double) { self.x = x; self.y = y; self.z = z; self.w = w }
}

/// A 3×3 rotation matrix, row-major names (`m12`: row 1, column 2).
public struct CMRotationMatrix: Sendable {
    public var m11: Double, m12: Double, m13: Double
    public var m21: Double, m22: Double, m23: Double
    public var m31: Double, m32: Double, m33: Double
    public init() {
        m11 = 0; m12 = 0; m13 = 0; m21 = 0; m22 = 0; m23 = 0; m31 = 0; m32 = 0; m33 = 0
    }
    public init(m11: Double, m12: Double, m13: Double, m21: Double, m22: Double, m23: Double,
                m31: Double, m32: Double, m33: Double) {
        self.m11 = m11; self.m12 = m12; self.m13 = m13
        self.m21 = m21; self.m22 = m22; self.m23 = m23
        self.m31 = m31; self.m32 = m32; self.m33 = m33
    }
}

/// How well the magnetometer is calibrated.
public enum CMMagneticFieldCalibrationAccuracy: Int32, @unchecked Sendable {
    case uncalibrated = -1
    case low = 0
    case medium = 1
    case high = 2
}

/// A calibrated magnetic field (µT) and how far to trust it.
public struct CMCalibratedMagneticField: Sendable {
    public var field: CMMagneticField
    public var accuracy: CMMagneticFieldCalibrationAccuracy
    public init() { field = CMMagneticField(); accuracy = .uncalibrated }
    public init(field: CMMagneticField, accuracy: CMMagneticFieldCalibrationAccuracy) {
        self.field = field; self.accuracy = accuracy
    }
}

/// Whether the app may receive a kind of motion data.
public enum CMAuthorizationStatus: Int, @unchecked Sendable {
    case notDetermined = 0
    case restricted = 1
    case denied = 2
    case authorized = 3
}

/// The reference frames device motion's attitude can be given in (an
/// option set: ``CMMotionManager/availableAttitudeReferenceFrames()``
/// returns several).
public struct CMAttitudeReferenceFrame: OptionSet, @unchecked Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Z vertical, X in an arbitrary horizontal direction.
    public static var xArbitraryZVertical: CMAttitudeReferenceFrame { CMAttitudeReferenceFrame(rawValue: 1 << 0) }
    /// As ``xArbitraryZVertical``, with the magnetometer correcting yaw drift.
    public static var xArbitraryCorrectedZVertical: CMAttitudeReferenceFrame { CMAttitudeReferenceFrame(rawValue: 1 << 1) }
    /// Z vertical, X to magnetic north.
    public static var xMagneticNorthZVertical: CMAttitudeReferenceFrame { CMAttitudeReferenceFrame(rawValue: 1 << 2) }
    /// Z vertical, X to true north.
    public static var xTrueNorthZVertical: CMAttitudeReferenceFrame { CMAttitudeReferenceFrame(rawValue: 1 << 3) }
}
