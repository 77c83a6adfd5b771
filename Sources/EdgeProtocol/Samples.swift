@_exported import EdgeValues

// Vector3 (SIMD3<Double>), Quaternion, ReferenceFrame and
// MagneticFieldCalibrationAccuracy are EdgeValues' - one definition for the
// wire and the maths.
//
// THE WIRE CONVENTION (protocol 2, docs/protocol.md, EdgeProtocolInfo.convention):
// SI units on every stream, named in every key (m/s², rad/s, µT, Pa, m, °C);
// vectors in the board frame (X right, Y forward, Z up out of the component
// side; right-handed); every acceleration is specific force, the sign the
// accelerometer measures (+9.81 m/s² on the up axis at rest), so device
// motion's gravity and user acceleration add up to the accelerometer's
// reading; times are CLOCK_MONOTONIC ns of the capture, stamped once by the
// engine.

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
    /// Attitude, unit quaternion rotating the reference frame into the board
    /// frame (Core Motion's `CMAttitude.quaternion`). Wire key `attitude` {w,x,y,z}.
    public var attitude: Quaternion
    /// Gravity's share of the specific force, m/s², board frame: +9.80665
    /// on the up axis (the reaction to gravity, as the accelerometer feels
    /// it; `gravity + userAcceleration` is the accelerometer's reading).
    /// Wire key `gravity_mps2`.
    public var gravity: Vector3
    /// The rest of the specific force: the board's acceleration, m/s²
    /// (Core Motion's `userAcceleration` is this times −1/9.80665). Wire key
    /// `userAcceleration_mps2`.
    public var userAcceleration: Vector3
    /// Bias-corrected rotation rate, rad/s. Wire key `rotationRate_radps`.
    public var rotationRate: Vector3
    /// Calibrated magnetic field, µT (zero vector with accuracy `uncalibrated`
    /// when there is no magnetometer). Wire key `magneticField_uT`.
    public var magneticField: Vector3
    /// Wire key `magneticFieldAccuracy`.
    public var magneticFieldAccuracy: MagneticFieldCalibrationAccuracy
    /// Heading relative to the reference frame's X axis, degrees in [0, 360);
    /// nil (wire `null`) when the frame has no north. Wire key `heading_deg`.
    public var headingDeg: Double?
    /// Wire key `frame`.
    public var referenceFrame: ReferenceFrame
    /// What every reference frame is derived from (so a client can serve each
    /// of its managers its own frame): the attitude from the gyroscope and
    /// the accelerometer alone, in the filter's 6D frame (Z up, X an
    /// arbitrary horizontal direction that drifts only with the integrated
    /// gyroscope error; it never turns when the magnetometer comes or goes).
    /// Same convention as ``attitude``. Wire key `attitude6D` {w,x,y,z}.
    public var attitude6D: Quaternion
    /// The yaw, degrees about +Z (counter-clockwise seen from above), that
    /// turns the 6D frame into the magnetic-north frame:
    /// `attitude in xMagneticNorthZVertical = Quaternion(yaw: northYaw) * attitude6D`.
    /// nil (wire `null`) before the first magnetometer field. Wire key `northYaw_deg`.
    public var northYawDeg: Double?
    /// Whether a current field backs ``northYawDeg``. Wire key `northYawState`.
    public var northYawState: NorthYawState
    @inlinable public init(timestampNs: UInt64, attitude: Quaternion, gravity: Vector3,
                           userAcceleration: Vector3, rotationRate: Vector3,
                           magneticField: Vector3 = .zero,
                           magneticFieldAccuracy: MagneticFieldCalibrationAccuracy = .uncalibrated,
                           headingDeg: Double? = nil,
                           referenceFrame: ReferenceFrame = .xArbitraryZVertical,
                           attitude6D: Quaternion? = nil, northYawDeg: Double? = nil,
                           northYawState: NorthYawState = .none) {
        self.timestampNs = timestampNs; self.attitude = attitude; self.gravity = gravity
        self.userAcceleration = userAcceleration; self.rotationRate = rotationRate
        self.magneticField = magneticField; self.magneticFieldAccuracy = magneticFieldAccuracy
        self.headingDeg = headingDeg; self.referenceFrame = referenceFrame
        self.attitude6D = attitude6D ?? attitude; self.northYawDeg = northYawDeg; self.northYawState = northYawState
    }
}

/// The state of device motion's yaw offset to north (`northYawState`).
public enum NorthYawState: UInt8, Sendable, Hashable, BitwiseCopyable, CaseIterable {
    /// No magnetometer field has been fused yet (or there is no
    /// magnetometer): `northYaw_deg` is null.
    case none
    /// A field captured within the magnetometer's stall limit backs the offset.
    case live
    /// The field stopped (missing, stalled, idle): the offset is the last
    /// estimate, held (the 6D attitude carries on with the gyroscope).
    case held
    public var wireName: StaticString {
        switch self {
        case .none: return "none"
        case .live: return "live"
        case .held: return "held"
        }
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

/// Relative-humidity sample (a BME280's humidity channel).
@frozen public struct HumiditySample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC capture time, ns.
    public var timestampNs: UInt64
    /// Relative humidity of the air, % (0...100). Wire key `relativeHumidity_pct`.
    public var relativeHumidity: Double
    @inlinable public init(timestampNs: UInt64, relativeHumidity: Double) {
        self.timestampNs = timestampNs; self.relativeHumidity = relativeHumidity
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

/// Core Motion's `CMWaterSubmersionMeasurement.DepthState`, named as on the wire.
public enum SubmersionDepthState: UInt8, Sendable, Hashable, BitwiseCopyable, CaseIterable {
    case unknown, notSubmerged, submergedShallow, submergedDeep, approachingMaxDepth, pastMaxDepth, sensorDepthError
    public var wireName: StaticString {
        switch self {
        case .unknown: return "unknown"
        case .notSubmerged: return "notSubmerged"
        case .submergedShallow: return "submergedShallow"
        case .submergedDeep: return "submergedDeep"
        case .approachingMaxDepth: return "approachingMaxDepth"
        case .pastMaxDepth: return "pastMaxDepth"
        case .sensorDepthError: return "sensorDepthError"
        }
    }
}

/// Water-submersion sample (CMWaterSubmersionMeasurement + state).
///
/// The engine computes the depth state for both entitlements' maximum
/// depths (``depthState`` for `submersion.full`, ``shallowDepthState`` for
/// `submersion.shallow`); the service sends each client the sample
/// ``capped(shallow:)`` for what it holds, so a shallow client never sees a
/// depth past its maximum.
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
    /// Measurement depth state for the maximum depth ``maximumDepth``. Wire key `depthState`.
    public var depthState: SubmersionDepthState
    /// The `submersion.shallow` maximum's depth state (not on the wire: the
    /// service turns it into ``depthState`` for a shallow client).
    public var shallowDepthState: SubmersionDepthState
    /// Maximum depth the client may see, m. Wire key `maximumDepth_m`.
    public var maximumDepth: Double
    /// Water temperature uncertainty, ± °C. Wire key `temperatureUncertainty_c`.
    public var temperatureUncertainty: Double
    @inlinable public init(timestampNs: UInt64, depth: Double, pressure: Double,
                           surfacePressure: Double, temperature: Double, state: SubmersionState,
                           depthState: SubmersionDepthState = .unknown, shallowDepthState: SubmersionDepthState = .unknown,
                           maximumDepth: Double = 40, temperatureUncertainty: Double = 0) {
        self.timestampNs = timestampNs; self.depth = depth; self.pressure = pressure
        self.surfacePressure = surfacePressure; self.temperature = temperature; self.state = state
        self.depthState = depthState; self.shallowDepthState = shallowDepthState
        self.maximumDepth = maximumDepth; self.temperatureUncertainty = temperatureUncertainty
    }

    /// Maximum depth for `submersion.shallow`, m (the Watch's 6 m).
    public static let shallowMaximumDepth = 6.0
    /// Maximum depth for `submersion.full`, m (the Watch's 40 m).
    public static let fullMaximumDepth = 40.0

    /// The sample as a client holding only `submersion.shallow` (true) or
    /// `submersion.full` (false) may see it: past its maximum, or on a
    /// sensor error, the depth and pressure are withheld (null on the wire)
    /// and the state says why.
    @inlinable public func capped(shallow: Bool) -> SubmersionSample {
        var s = self
        if shallow {
            s.depthState = shallowDepthState
            s.maximumDepth = Self.shallowMaximumDepth
        } else {
            s.maximumDepth = Self.fullMaximumDepth
        }
        if s.depthState == .pastMaxDepth || s.depthState == .sensorDepthError {
            s.depth = .nan
            s.pressure = .nan
        }
        return s
    }
}

/// Pedometer totals since counting began (CMPedometerData).
@frozen public struct PedometerSample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC time of this total, ns (CMPedometerData.endDate).
    public var timestampNs: UInt64
    /// When counting began, CLOCK_MONOTONIC ns (startDate). Wire key `startDate_ns`.
    public var startNs: UInt64
    /// Wire key `steps`.
    public var steps: UInt32
    /// m, from the stride model. Wire key `distance_m`.
    public var distance: Double
    /// Floors climbed / descended on foot. Wire keys `floorsAscended`, `floorsDescended`.
    public var floorsAscended: UInt32
    public var floorsDescended: UInt32
    /// steps/s now (0 when not walking). Wire key `currentCadence_stepsps`.
    public var currentCadence: Double
    /// s/m now (0 when not walking). Wire key `currentPace_spm`.
    public var currentPace: Double
    /// s/m over the time spent walking. Wire key `averageActivePace_spm`.
    public var averageActivePace: Double
    @inlinable public init(timestampNs: UInt64, startNs: UInt64, steps: UInt32, distance: Double,
                           floorsAscended: UInt32, floorsDescended: UInt32,
                           currentCadence: Double, currentPace: Double, averageActivePace: Double) {
        self.timestampNs = timestampNs; self.startNs = startNs; self.steps = steps; self.distance = distance
        self.floorsAscended = floorsAscended; self.floorsDescended = floorsDescended
        self.currentCadence = currentCadence; self.currentPace = currentPace; self.averageActivePace = averageActivePace
    }
}

/// A pedometer pause or resume (CMPedometerEvent).
@frozen public struct PedometerEventSample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC ns (CMPedometerEvent.date).
    public var timestampNs: UInt64
    /// Wire key `type`: `pause` or `resume`.
    public var type: PedometerEventType
    @inlinable public init(timestampNs: UInt64, type: PedometerEventType) {
        self.timestampNs = timestampNs; self.type = type
    }
}

/// What the wearer is doing (CMMotionActivity).
@frozen public struct ActivitySample: Sendable, Hashable, BitwiseCopyable {
    /// CLOCK_MONOTONIC ns of this report.
    public var timestampNs: UInt64
    /// When the activity began, CLOCK_MONOTONIC ns (startDate). Wire key `startDate_ns`.
    public var startNs: UInt64
    /// Wire keys `stationary`, `walking`, `running`, `cycling`, `automotive`, `unknown` (booleans).
    public var flags: ActivityFlags
    /// Wire key `confidence`: `low`, `medium` or `high`.
    public var confidence: ActivityConfidence
    @inlinable public init(timestampNs: UInt64, startNs: UInt64, flags: ActivityFlags, confidence: ActivityConfidence) {
        self.timestampNs = timestampNs; self.startNs = startNs; self.flags = flags; self.confidence = confidence
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
    case pedometer(PedometerSample)
    case pedometerEvent(PedometerEventSample)
    case activity(ActivitySample)
    case humidity(HumiditySample)

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
        case .pedometer: return .pedometer
        case .pedometerEvent: return .pedometerEvent
        case .activity: return .activity
        case .humidity: return .humidity
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
        case .pedometer(let s): return s.timestampNs
        case .pedometerEvent(let s): return s.timestampNs
        case .activity(let s): return s.timestampNs
        case .humidity(let s): return s.timestampNs
        }
    }
}
