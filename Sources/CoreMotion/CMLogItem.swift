/// The base class of Core Motion's samples: when the sample was taken.
open class CMLogItem: NSObject, NSCopying {
    let _timestamp: TimeInterval

    /// The time the sample was captured, in seconds since the device booted:
    /// `CLOCK_MONOTONIC`, the same clock for every kind of sample (the
    /// agent's `timestamp_ns` / 1e9). `ProcessInfo.processInfo.systemUptime`
    /// reads the same clock on Linux.
    open var timestamp: TimeInterval { _timestamp }

    public override init() { _timestamp = 0 }
    init(timestamp: TimeInterval) { _timestamp = timestamp }

    /// The samples are immutable: a copy is the same object.
    open func copy(with zone: NSZone? = nil) -> Any { self }
}

/// One accelerometer sample: acceleration in g, **gravity included, with
/// Apple's sign**: a device lying still face up reads z ≈ −1.
open class CMAccelerometerData: CMLogItem {
    let _acceleration: CMAcceleration
    /// g (9.80665 m/s²) along each device axis.
    open var acceleration: CMAcceleration { _acceleration }

    public override init() { _acceleration = CMAcceleration(); super.init() }
    init(timestamp: TimeInterval, acceleration: CMAcceleration) {
        _acceleration = acceleration
        super.init(timestamp: timestamp)
    }

    open override var description: String {
        "x \(fixed3(acceleration.x)) y \(fixed3(acceleration.y)) z \(fixed3(acceleration.z)) @ \(fixed3(timestamp))"
    }
}

/// One gyroscope sample: rotation rate in rad/s (bias-corrected by the agent).
open class CMGyroData: CMLogItem {
    let _rotationRate: CMRotationRate
    open var rotationRate: CMRotationRate { _rotationRate }

    public override init() { _rotationRate = CMRotationRate(); super.init() }
    init(timestamp: TimeInterval, rotationRate: CMRotationRate) {
        _rotationRate = rotationRate
        super.init(timestamp: timestamp)
    }

    open override var description: String {
        "x \(fixed3(rotationRate.x)) y \(fixed3(rotationRate.y)) z \(fixed3(rotationRate.z)) @ \(fixed3(timestamp))"
    }
}

/// One magnetometer sample: the field in µT, device frame. On this
/// platform the agent has already removed the hard- and soft-iron offsets
/// of its calibration file (Apple's raw field includes the device's bias).
open class CMMagnetometerData: CMLogItem {
    let _magneticField: CMMagneticField
    open var magneticField: CMMagneticField { _magneticField }

    public override init() { _magneticField = CMMagneticField(); super.init() }
    init(timestamp: TimeInterval, magneticField: CMMagneticField) {
        _magneticField = magneticField
        super.init(timestamp: timestamp)
    }

    open override var description: String {
        "x \(fixed3(magneticField.x)) y \(fixed3(magneticField.y)) z \(fixed3(magneticField.z)) @ \(fixed3(timestamp))"
    }
}

/// A change in altitude, and the pressure.
open class CMAltitudeData: CMLogItem {
    let _relativeAltitude: NSNumber
    let _pressure: NSNumber
    /// Metres since the first sample of these updates.
    open var relativeAltitude: NSNumber { _relativeAltitude }
    /// Static pressure in kilopascals (kPa).
    open var pressure: NSNumber { _pressure }

    public override init() { _relativeAltitude = 0; _pressure = 0; super.init() }
    init(timestamp: TimeInterval, relativeAltitude: Double, pressureKPa: Double) {
        _relativeAltitude = NSNumber(value: relativeAltitude)
        _pressure = NSNumber(value: pressureKPa)
        super.init(timestamp: timestamp)
    }

    open override var description: String {
        "relativeAltitude \(fixed3(relativeAltitude.doubleValue)) m pressure \(fixed3(pressure.doubleValue)) kPa @ \(fixed3(timestamp))"
    }
}

/// The altitude above mean sea level, with its accuracy.
open class CMAbsoluteAltitudeData: CMLogItem {
    let _altitude: Double, _accuracy: Double, _precision: Double
    /// Metres above mean sea level.
    open var altitude: Double { _altitude }
    /// Estimated error of ``altitude``, metres (1σ).
    open var accuracy: Double { _accuracy }
    /// Resolution of ``altitude``, metres.
    open var precision: Double { _precision }

    public override init() { _altitude = 0; _accuracy = 0; _precision = 0; super.init() }
    init(timestamp: TimeInterval, altitude: Double, accuracy: Double, precision: Double) {
        _altitude = altitude; _accuracy = accuracy; _precision = precision
        super.init(timestamp: timestamp)
    }

    open override var description: String {
        "altitude \(fixed3(altitude)) m ± \(fixed3(accuracy)) @ \(fixed3(timestamp))"
    }
}

func fixed3(_ v: Double) -> String { String(format: "%.3f", v) }
