/// A 3-vector in the board frame (X right, Y forward, Z up out of the
/// component side; right-handed). The unit is given by the field holding it.
@frozen public struct Vector3: Sendable, Hashable, BitwiseCopyable {
    public var x: Double, y: Double, z: Double
    @inlinable public init(x: Double, y: Double, z: Double) { self.x = x; self.y = y; self.z = z }
    public static let zero = Vector3(x: 0, y: 0, z: 0)
}

/// A unit quaternion rotating the reference frame into the board frame
/// (Core Motion's `CMAttitude.quaternion`), scalar first.
@frozen public struct Attitude: Sendable, Hashable, BitwiseCopyable {
    public var w: Double, x: Double, y: Double, z: Double
    @inlinable public init(w: Double, x: Double, y: Double, z: Double) {
        self.w = w; self.x = x; self.y = y; self.z = z
    }
    public static let identity = Attitude(w: 1, x: 0, y: 0, z: 0)
}

/// Core Motion's `CMAttitudeReferenceFrame`, named as on the wire.
public enum ReferenceFrame: UInt8, Sendable, Hashable, BitwiseCopyable, CaseIterable {
    case xArbitraryZVertical, xArbitraryCorrectedZVertical, xMagneticNorthZVertical, xTrueNorthZVertical
    public var wireName: StaticString {
        switch self {
        case .xArbitraryZVertical: return "xArbitraryZVertical"
        case .xArbitraryCorrectedZVertical: return "xArbitraryCorrectedZVertical"
        case .xMagneticNorthZVertical: return "xMagneticNorthZVertical"
        case .xTrueNorthZVertical: return "xTrueNorthZVertical"
        }
    }
}

/// Core Motion's `CMMagneticFieldCalibrationAccuracy`, named as on the wire.
public enum MagneticFieldAccuracy: Int8, Sendable, Hashable, BitwiseCopyable, CaseIterable {
    case uncalibrated = -1, low = 0, medium = 1, high = 2
    public var wireName: StaticString {
        switch self {
        case .uncalibrated: return "uncalibrated"
        case .low: return "low"
        case .medium: return "medium"
        case .high: return "high"
        }
    }
}

/// Accelerometer stream sample (CMAccelerometerData, but in SI).
@frozen public struct AccelerometerSample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC capture time, ns. Wire key `timestamp_ns`.
    public var timestampNs: UInt64
    /// Specific force (includes gravity), m/s², board frame. Wire key `acceleration_mps2`.
    public var acceleration: Vector3
    @inlinable public init(timestampNs: UInt64, acceleration: Vector3) {
        self.timestampNs = timestampNs; self.acceleration = acceleration
    }
}

/// Gyroscope stream sample (CMGyroData).
@frozen public struct GyroscopeSample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC capture time, ns.
    public var timestampNs: UInt64
    /// Rotation rate, rad/s, board frame, right-hand rule. Wire key `rotationRate_radps`.
    public var rotationRate: Vector3
    @inlinable public init(timestampNs: UInt64, rotationRate: Vector3) {
        self.timestampNs = timestampNs; self.rotationRate = rotationRate
    }
}

/// Magnetometer stream sample (CMMagnetometerData).
@frozen public struct MagnetometerSample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC capture time, ns.
    public var timestampNs: UInt64
    /// Magnetic field, µT, board frame (hard/soft-iron corrected). Wire key `magneticField_uT`.
    public var magneticField: Vector3
    @inlinable public init(timestampNs: UInt64, magneticField: Vector3) {
        self.timestampNs = timestampNs; self.magneticField = magneticField
    }
}

/// Device-motion sample (CMDeviceMotion) of the board or of the accessory IMU.
@frozen public struct DeviceMotionSample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC capture time of the IMU sample, ns.
    public var timestampNs: UInt64
    /// Attitude, unit quaternion. Wire key `attitude` {w,x,y,z}.
    public var attitude: Attitude
    /// Gravity in the board frame, m/s² (|g| ≈ 9.80665). Wire key `gravity_mps2`.
    public var gravity: Vector3
    /// Acceleration the user imparts, gravity removed, m/s². Wire key `userAcceleration_mps2`.
    public var userAcceleration: Vector3
    /// Bias-corrected rotation rate, rad/s. Wire key `rotationRate_radps`.
    public var rotationRate: Vector3
    /// Calibrated magnetic field, µT (zero vector with accuracy `uncalibrated`
    /// when there is no magnetometer). Wire key `magneticField_uT`.
    public var magneticField: Vector3
    /// Wire key `magneticFieldAccuracy`.
    public var magneticFieldAccuracy: MagneticFieldAccuracy
    /// Heading relative to the reference frame's X axis, degrees in [0, 360);
    /// nil (wire `null`) when the frame has no north. Wire key `heading_deg`.
    public var headingDeg: Double?
    /// Wire key `frame`.
    public var referenceFrame: ReferenceFrame
    @inlinable public init(timestampNs: UInt64, attitude: Attitude, gravity: Vector3,
                           userAcceleration: Vector3, rotationRate: Vector3,
                           magneticField: Vector3 = .zero,
                           magneticFieldAccuracy: MagneticFieldAccuracy = .uncalibrated,
                           headingDeg: Double? = nil,
                           referenceFrame: ReferenceFrame = .xArbitraryZVertical) {
        self.timestampNs = timestampNs; self.attitude = attitude; self.gravity = gravity
        self.userAcceleration = userAcceleration; self.rotationRate = rotationRate
        self.magneticField = magneticField; self.magneticFieldAccuracy = magneticFieldAccuracy
        self.headingDeg = headingDeg; self.referenceFrame = referenceFrame
    }
}

/// Relative-altitude sample (CMAltitudeData, SI).
@frozen public struct AltitudeSample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC capture time, ns.
    public var timestampNs: UInt64
    /// Altitude change since the stream started, m. Wire key `relativeAltitude_m`.
    public var relativeAltitude: Double
    /// Static pressure, Pa (Core Motion reports kPa; the library converts). Wire key `pressure_pa`.
    public var pressure: Double
    /// Sensor temperature, °C. Wire key `temperature_c`.
    public var temperature: Double
    @inlinable public init(timestampNs: UInt64, relativeAltitude: Double, pressure: Double, temperature: Double) {
        self.timestampNs = timestampNs; self.relativeAltitude = relativeAltitude
        self.pressure = pressure; self.temperature = temperature
    }
}

/// Absolute-altitude sample (CMAbsoluteAltitudeData).
@frozen public struct AbsoluteAltitudeSample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC capture time, ns.
    public var timestampNs: UInt64
    /// Altitude above mean sea level, m. Wire key `altitude_m`.
    public var altitude: Double
    /// Estimated absolute error, m (1σ). Wire key `accuracy_m`.
    public var accuracy: Double
    /// Resolution of the reading, m. Wire key `precision_m`.
    public var precision: Double
    @inlinable public init(timestampNs: UInt64, altitude: Double, accuracy: Double, precision: Double) {
        self.timestampNs = timestampNs; self.altitude = altitude
        self.accuracy = accuracy; self.precision = precision
    }
}

/// Core Motion's `CMWaterSubmersionEvent.State`, named as on the wire.
public enum SubmersionState: UInt8, Sendable, Hashable, BitwiseCopyable, CaseIterable {
    case unknown, notSubmerged, submerged
    public var wireName: StaticString {
        switch self {
        case .unknown: return "unknown"
        case .notSubmerged: return "notSubmerged"
        case .submerged: return "submerged"
        }
    }
}

/// Water-submersion sample (CMWaterSubmersionMeasurement + state).
@frozen public struct SubmersionSample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC capture time, ns.
    public var timestampNs: UInt64
    /// Depth below the surface, m (≥ 0). Wire key `depth_m`.
    public var depth: Double
    /// Absolute pressure, Pa. Wire key `pressure_pa`.
    public var pressure: Double
    /// Pressure at the surface, Pa. Wire key `surfacePressure_pa`.
    public var surfacePressure: Double
    /// Water temperature, °C. Wire key `temperature_c`.
    public var temperature: Double
    /// Wire key `state`.
    public var state: SubmersionState
    @inlinable public init(timestampNs: UInt64, depth: Double, pressure: Double,
                           surfacePressure: Double, temperature: Double, state: SubmersionState) {
        self.timestampNs = timestampNs; self.depth = depth; self.pressure = pressure
        self.surfacePressure = surfacePressure; self.temperature = temperature; self.state = state
    }
}

/// One sample of one stream: a fixed-size value (no references), so rings of
/// samples are plain memory and publishing never allocates.
@frozen public enum Sample: Sendable, Hashable, BitwiseCopyable {
    case accelerometer(AccelerometerSample)
    case gyroscope(GyroscopeSample)
    case magnetometer(MagnetometerSample)
    case deviceMotion(DeviceMotionSample)
    case accelerometerBatch(AccelerometerSample)
    case deviceMotionBatch(DeviceMotionSample)
    case accessoryMotion(DeviceMotionSample)
    case altitude(AltitudeSample)
    case absoluteAltitude(AbsoluteAltitudeSample)
    case submersion(SubmersionSample)

    /// The stream this sample belongs to.
    @inlinable public var stream: StreamName {
        switch self {
        case .accelerometer: return .accelerometer
        case .gyroscope: return .gyroscope
        case .magnetometer: return .magnetometer
        case .deviceMotion: return .deviceMotion
        case .accelerometerBatch: return .accelerometerBatch
        case .deviceMotionBatch: return .deviceMotionBatch
        case .accessoryMotion: return .accessoryMotion
        case .altitude: return .altitude
        case .absoluteAltitude: return .absoluteAltitude
        case .submersion: return .submersion
        }
    }

    /// CLOCK_MONOTONIC capture time, ns.
    @inlinable public var timestampNs: UInt64 {
        switch self {
        case .accelerometer(let s), .accelerometerBatch(let s): return s.timestampNs
        case .gyroscope(let s): return s.timestampNs
        case .magnetometer(let s): return s.timestampNs
        case .deviceMotion(let s), .deviceMotionBatch(let s), .accessoryMotion(let s): return s.timestampNs
        case .altitude(let s): return s.timestampNs
        case .absoluteAltitude(let s): return s.timestampNs
        case .submersion(let s): return s.timestampNs
        }
    }
}
