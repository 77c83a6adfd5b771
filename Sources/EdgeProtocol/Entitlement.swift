/// A right a client must hold to receive a stream, granted per user or group
/// in the agent's configuration (`clients:` section). Open set: the agent
/// compares strings, so a configuration may grant names this build does not
/// know yet.
public struct Entitlement: RawRepresentable, Hashable, Comparable, Sendable, Codable,
    ExpressibleByStringLiteral, CustomStringConvertible
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
    public static func < (a: Entitlement, b: Entitlement) -> Bool { a.rawValue < b.rawValue }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }

    /// Accelerometer, gyroscope, magnetometer, device motion, batches and the
    /// accessory IMU (Apple: no entitlement, but a motion usage permission).
    public static let motion: Entitlement = "motion"
    /// Barometric relative and absolute altitude.
    public static let altitude: Entitlement = "altitude"
    /// Water submersion to 6 m (Apple's `com.apple.developer.submerged-shallow-depth-and-pressure`).
    public static let submersionShallow: Entitlement = "submersion.shallow"
    /// Water submersion over the full depth range of the sensor
    /// (Apple's `com.apple.developer.submerged-depth-and-pressure`).
    public static let submersionFull: Entitlement = "submersion.full"
    /// Steps, floors, pedometer events and activity, live and from the
    /// history (Apple: the motion-and-fitness permission).
    public static let fitness: Entitlement = "fitness"
    /// The sensor recorder: have the agent record the accelerometer at 50 Hz
    /// while the app is not running, and read back what it recorded for the
    /// app's user (Apple's CMSensorRecorder asks for the motion permission;
    /// the agent asks for this entitlement of its own: it records to disk).
    public static let recorder: Entitlement = "recorder"
}
