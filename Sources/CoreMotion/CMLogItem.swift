/// The base class of Core Motion's samples: when the sample was taken.
///
/// As Apple's, `NSCopying` and `NSSecureCoding`: `copy()` is a new object
/// (made through the class's own coding, so a subclass that codes its
/// values copies them), and `NSKeyedArchiver` / `NSKeyedUnarchiver` round
/// trips give an equal sample.
open class CMLogItem: NSObject, NSCopying, NSSecureCoding {
    let _timestamp: TimeInterval

    public class var supportsSecureCoding: Bool { true }

    open func encode(with coder: NSCoder) {
        coder.encode(_timestamp, forKey: "timestamp")
    }

    public required init?(coder: NSCoder) {
        _timestamp = coder.decodeDouble(forKey: "timestamp")
        super.init()
    }

    /// The time the sample was captured, in seconds since the device booted:
    /// `CLOCK_MONOTONIC`, the same clock for every kind of sample (the
    /// agent's `timestamp_ns` / 1e9). `ProcessInfo.processInfo.systemUptime`
    /// reads the same clock on Linux.
    open var timestamp: TimeInterval { _timestamp }

    public override init() { _timestamp = 0 }
    init(timestamp: TimeInterval) { _timestamp = timestamp }

    /// A new object with the same values (through the class's coding).
    open func copy(with zone: NSZone? = nil) -> Any { codedCopy(self) }
}

/// A copy of `object` made by archiving and unarchiving it (its class's
/// `encode(with:)` and `init?(coder:)`): a real copy for every class that
/// codes its values. A class whose coding fails is a bug of this module.
func codedCopy<T: NSObject & NSSecureCoding>(_ object: T) -> T {
    do {
        let data = try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
        guard let copy = try NSKeyedUnarchiver.unarchivedObject(ofClasses: [type(of: object)], from: data) as? T else {
            preconditionFailure("CoreMotion: a \(type(of: object)) did not unarchive as itself")
        }
        return copy
    } catch {
        preconditionFailure("CoreMotion: a \(type(of: object)) does not code itself: \(error)")
    }
}

extension NSCoder {
    /// A date as seconds since the reference date (2001-01-01 UTC), the one
    /// form every class of this module codes its dates in.
    func encode(date: Date, forKey key: String) { encode(date.timeIntervalSinceReferenceDate, forKey: key) }
    func decodeDate(forKey key: String) -> Date { Date(timeIntervalSinceReferenceDate: decodeDouble(forKey: key)) }

    func encode(_ v: CMAcceleration, prefix: String) {
        encode(v.x, forKey: prefix + "X"); encode(v.y, forKey: prefix + "Y"); encode(v.z, forKey: prefix + "Z")
    }
    func decodeAcceleration(prefix: String) -> CMAcceleration {
        CMAcceleration(x: decodeDouble(forKey: prefix + "X"), y: decodeDouble(forKey: prefix + "Y"),
                       z: decodeDouble(forKey: prefix + "Z"))
    }
}

/// One accelerometer sample: acceleration in g, **gravity included, with
/// Apple's sign**: a device lying still face up reads z ≈ −1.
open class CMAccelerometerData: CMLogItem {
    let _acceleration: CMAcceleration
    /// g (9.80665 m/s²) along each device axis.
    open var acceleration: CMAcceleration { _acceleration }

    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(_acceleration, prefix: "acceleration")
    }
    public required init?(coder: NSCoder) {
        _acceleration = coder.decodeAcceleration(prefix: "acceleration")
        super.init(coder: coder)
    }

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

    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(CMAcceleration(x: _rotationRate.x, y: _rotationRate.y, z: _rotationRate.z), prefix: "rotationRate")
    }
    public required init?(coder: NSCoder) {
        let r = coder.decodeAcceleration(prefix: "rotationRate")
        _rotationRate = CMRotationRate(x: r.x, y: r.y, z: r.z)
        super.init(coder: coder)
    }

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

    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(CMAcceleration(x: _magneticField.x, y: _magneticField.y, z: _magneticField.z), prefix: "magneticField")
    }
    public required init?(coder: NSCoder) {
        let f = coder.decodeAcceleration(prefix: "magneticField")
        _magneticField = CMMagneticField(x: f.x, y: f.y, z: f.z)
        super.init(coder: coder)
    }

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

    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(_relativeAltitude.doubleValue, forKey: "relativeAltitude")
        coder.encode(_pressure.doubleValue, forKey: "pressure")
    }
    public required init?(coder: NSCoder) {
        _relativeAltitude = NSNumber(value: coder.decodeDouble(forKey: "relativeAltitude"))
        _pressure = NSNumber(value: coder.decodeDouble(forKey: "pressure"))
        super.init(coder: coder)
    }

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

    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(_altitude, forKey: "altitude"); coder.encode(_accuracy, forKey: "accuracy")
        coder.encode(_precision, forKey: "precision")
    }
    public required init?(coder: NSCoder) {
        _altitude = coder.decodeDouble(forKey: "altitude"); _accuracy = coder.decodeDouble(forKey: "accuracy")
        _precision = coder.decodeDouble(forKey: "precision")
        super.init(coder: coder)
    }

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
