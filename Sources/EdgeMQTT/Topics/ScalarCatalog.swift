import EdgeValues
import EdgeProtocol

/// Where a scalar topic's values come from.
public enum ScalarSource: Sendable, Hashable {
    /// A stream the agent serves today.
    case stream(StreamName)
    /// A stream that comes later (pedometer, activity): the topic and its
    /// Home Assistant entity are defined, nothing publishes them until the
    /// agent serves the stream (add its `StreamName` and a case in
    /// ``ScalarCatalog/values(of:)``).
    case planned(String)
}

/// One scalar topic, `<prefix>/<node>/<suffix>`, with its Home Assistant
/// sensor entity (device class, state class and unit as home-assistant.io's
/// sensor documentation lists them). The table is docs/mqtt.md's, row for row.
public struct ScalarEntity: Sendable, Hashable {
    /// The entity's key: part of its `unique_id` and of its discovery topic.
    public var key: String
    /// The topic after `<prefix>/<node>/`.
    public var suffix: String
    public var source: ScalarSource
    /// Home Assistant entity name (shown after the device's name).
    public var name: String
    /// Home Assistant `unit_of_measurement`; nil for unitless (`enum`).
    public var unit: String?
    /// Home Assistant sensor `device_class`; nil: a generic sensor.
    public var deviceClass: String?
    /// Home Assistant `state_class`; nil for an `enum`.
    public var stateClass: String?
    /// Decimals published (and `suggested_display_precision`).
    public var decimals: Int
    /// `options` of an `enum` sensor.
    public var options: [String]? = nil
    /// An `mdi:` icon for entities without a device class.
    public var icon: String? = nil
}

/// The scalar topics and how each is computed from a sample.
public enum ScalarCatalog {
    public static let entities: [ScalarEntity] = [
        // Core Motion's Euler angles of the board (CMAttitude roll, pitch):
        // roll about the board's Y axis, pitch about X (EdgeValues.Attitude).
        ScalarEntity(key: "roll_deg", suffix: "attitude/roll_deg", source: .stream(.deviceMotion), name: "Roll",
                     unit: "°", deviceClass: nil, stateClass: "measurement", decimals: 1, icon: "mdi:axis-y-rotate-clockwise"),
        ScalarEntity(key: "pitch_deg", suffix: "attitude/pitch_deg", source: .stream(.deviceMotion), name: "Pitch",
                     unit: "°", deviceClass: nil, stateClass: "measurement", decimals: 1, icon: "mdi:axis-x-rotate-clockwise"),
        // Compass heading, degrees clockwise from north; "null" (Home
        // Assistant: unknown) in frames without north.
        ScalarEntity(key: "heading_deg", suffix: "heading_deg", source: .stream(.deviceMotion), name: "Heading",
                     unit: "°", deviceClass: nil, stateClass: "measurement", decimals: 1, icon: "mdi:compass"),
        ScalarEntity(key: "relative_altitude_m", suffix: "altitude/relative_m", source: .stream(.altitude),
                     name: "Relative altitude", unit: "m", deviceClass: "distance", stateClass: "measurement", decimals: 2),
        ScalarEntity(key: "pressure_hpa", suffix: "pressure/hpa", source: .stream(.altitude), name: "Pressure",
                     unit: "hPa", deviceClass: "atmospheric_pressure", stateClass: "measurement", decimals: 2),
        ScalarEntity(key: "temperature_c", suffix: "temperature_c", source: .stream(.altitude), name: "Temperature",
                     unit: "°C", deviceClass: "temperature", stateClass: "measurement", decimals: 2),
        ScalarEntity(key: "absolute_altitude_m", suffix: "altitude/absolute_m", source: .stream(.absoluteAltitude),
                     name: "Altitude", unit: "m", deviceClass: "distance", stateClass: "measurement", decimals: 1),
        // A BME280's humidity stream (the `altitude` entitlement).
        ScalarEntity(key: "humidity_pct", suffix: "humidity_pct", source: .stream(.humidity), name: "Humidity",
                     unit: "%", deviceClass: "humidity", stateClass: "measurement", decimals: 1),
        // The submersion stream exists; no chip feeds it until the MS5837 joins.
        ScalarEntity(key: "depth_m", suffix: "depth_m", source: .stream(.submersion), name: "Depth",
                     unit: "m", deviceClass: "distance", stateClass: "measurement", decimals: 2),
        // The fitness streams (the `fitness` entitlement).
        ScalarEntity(key: "steps", suffix: "steps", source: .stream(.pedometer), name: "Steps",
                     unit: "steps", deviceClass: nil, stateClass: "total_increasing", decimals: 0, icon: "mdi:walk"),
        // Not `activity`: that is the activity stream's JSON topic.
        ScalarEntity(key: "activity", suffix: "activity/state", source: .stream(.activity), name: "Activity",
                     unit: nil, deviceClass: "enum", stateClass: nil, decimals: 0,
                     options: ["unknown", "stationary", "walking", "running", "automotive", "cycling"]),
    ]

    /// The entities a stream feeds.
    public static func entities(of stream: StreamName) -> [ScalarEntity] {
        entities.filter { $0.source == .stream(stream) }
    }

    /// Streams that have scalar topics.
    public static var streamsWithScalars: [StreamName] {
        StreamName.allCases.filter { !entities(of: $0).isEmpty }
    }

    /// The value of each of the sample's stream's entities, in the order of
    /// ``entities(of:)``; nil: not known (published as `null`).
    public static func values(of sample: Sample) -> [Double?] {
        switch sample {
        case .deviceMotion(let m):
            let a = Attitude(quaternion: m.attitude, referenceFrame: m.referenceFrame)
            return [a.roll * 180 / .pi, a.pitch * 180 / .pi, m.headingDeg]
        case .altitude(let s):
            return [s.relativeAltitude, s.pressure / 100, s.temperature]
        case .absoluteAltitude(let s):
            return [s.altitude]
        case .submersion(let s):
            return [s.depth]
        case .pedometer(let p):
            return [Double(p.steps)]
        case .humidity(let h):
            return [h.relativeHumidity]
        case .activity:
            return [nil]   // an enum: see ``payloads(of:)``
        case .accelerometer, .gyroscope, .magnetometer, .accelerometerBatch, .deviceMotionBatch, .accessoryMotion,
             .pedometerEvent:
            return []
        }
    }

    /// Each of the sample's stream's entities' payload, in the order of
    /// ``entities(of:)``: the number formatted, or for the `activity` enum
    /// the name of one of its `options`.
    public static func payloads(of sample: Sample) -> [String] {
        if case .activity(let a) = sample { return [activityName(a.flags)] }
        return zip(entities(of: sample.stream), values(of: sample)).map { format($1, decimals: $0.decimals) }
    }

    /// One name for CMMotionActivity's flags, several of which may be set
    /// (stationary and automotive: a vehicle at a stop): the most specific
    /// way of moving wins, then stationary, else unknown.
    public static func activityName(_ flags: ActivityFlags) -> String {
        for (flag, name) in [(ActivityFlags.automotive, "automotive"), (.cycling, "cycling"), (.running, "running"),
                             (.walking, "walking"), (.stationary, "stationary")] where flags.contains(flag) {
            return name
        }
        return "unknown"
    }

    /// `value` with `decimals` digits after the point, for a topic payload:
    /// `-12.3`, `1013.25`, `0`; `null` when nil or not finite. No Foundation
    /// (no `String(format:)`): rounding half away from zero on the scaled value.
    public static func format(_ value: Double?, decimals: Int) -> String {
        guard let v = value, v.isFinite else { return "null" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (v * scale).rounded(.toNearestOrAwayFromZero)
        guard abs(scaled) < 9e15 else { return String(v) }
        let n = Int64(scaled)
        let negative = n < 0
        var digits = String(n.magnitude)
        if decimals > 0 {
            if digits.count <= decimals { digits = String(repeating: "0", count: decimals - digits.count + 1) + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -decimals))
        }
        return (negative && n != 0 ? "-" : "") + digits
    }
}
