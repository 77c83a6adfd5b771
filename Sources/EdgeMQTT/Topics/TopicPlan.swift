import EdgeProtocol

/// Every topic one bridge publishes or subscribes to, for one node: the
/// table of docs/mqtt.md ("Topics") as code.
///
/// | topic | group | retained |
/// |---|---|---|
/// | `<prefix>/<node>/<stream>` | data | no |
/// | `<prefix>/<node>/<scalar suffix>` (``ScalarCatalog``) | scalars | `retain_scalars` |
/// | `<prefix>/<node>/status` (`online` / `offline`, also the Last Will) | state | yes |
/// | `<prefix>/<node>/devices` | state | yes |
/// | `<prefix>/<node>/calibration` | state | yes |
/// | `<prefix>/<node>/bridge` | state | yes |
/// | `<discovery_prefix>/sensor/<node>/<entity key>/config` | discovery | yes |
/// | `<discovery_prefix>/status` (subscribed: Home Assistant's birth) | — | — |
public struct TopicPlan: Sendable, Equatable {
    public var prefix: String
    public var node: String
    public var discoveryPrefix: String

    public init(prefix: String, node: String, discoveryPrefix: String) {
        self.prefix = prefix; self.node = node; self.discoveryPrefix = discoveryPrefix
    }

    /// `<prefix>/<node>`
    public var base: String { prefix + "/" + node }
    /// `<prefix>/<node>/<stream>`: the stream's sample objects.
    public func data(_ stream: StreamName) -> String { base + "/" + stream.rawValue }
    /// `<prefix>/<node>/<suffix>`
    public func scalar(_ entity: ScalarEntity) -> String { base + "/" + entity.suffix }
    /// Retained `online` / `offline`; the Last Will says `offline`.
    public var status: String { base + "/status" }
    /// Retained: the agent's devices (a `devices` reply's list), updated on
    /// every connection event.
    public var devices: String { base + "/devices" }
    /// Retained: the magnetometer's calibration accuracy and the reference
    /// frame, as device motion reports them; sent when they change.
    public var calibration: String { base + "/calibration" }
    /// Retained: the bridge's own counters (published, dropped, reconnects).
    public var bridge: String { base + "/bridge" }
    /// Where Home Assistant looks for `entity`'s configuration.
    public func discovery(_ key: String) -> String { discoveryPrefix + "/sensor/" + node + "/" + key + "/config" }
    /// Home Assistant's birth and last-will topic.
    public var homeAssistantStatus: String { discoveryPrefix + "/status" }
    /// The Home Assistant device's identifier, and the start of every `unique_id`.
    public var deviceIdentifier: String { "edge-mqtt_" + node }
    /// `unique_id` of `key`'s entity: unique across a fleet (the node is in it).
    public func uniqueID(_ key: String) -> String { deviceIdentifier + "_" + key }

    /// Every topic this plan can publish or subscribe to, with what it is
    /// for (every stream's data topic, whether configured or not: the
    /// configuration may enable any of them).
    public var allTopics: [(topic: String, what: String)] {
        var list: [(String, String)] = []
        for s in StreamName.allCases { list.append((data(s), "the \(s.rawValue) stream's JSON")) }
        for e in ScalarCatalog.entities { list.append((scalar(e), "the \(e.key) scalar")) }
        list += [(status, "the status"), (devices, "the devices"), (calibration, "the calibration"), (bridge, "the bridge counters")]
        for e in ScalarCatalog.entities { list.append((discovery(e.key), "the \(e.key) discovery")) }
        list.append((discovery(CalibrationEntity.key), "the \(CalibrationEntity.key) discovery"))
        list.append((homeAssistantStatus, "Home Assistant's status (subscribed)"))
        return list
    }

    /// Topics that two things of the plan share: each with what shares it.
    /// Empty for every plan the configuration admits (BridgeSetup refuses
    /// the others).
    public var collisions: [(topic: String, users: [String])] {
        var users: [String: [String]] = [:]
        var order: [String] = []
        for (t, w) in allTopics {
            if users[t] == nil { order.append(t) }
            users[t, default: []].append(w)
        }
        return order.compactMap { t in users[t]!.count > 1 ? (t, users[t]!) : nil }
    }
}

/// The diagnostic entity that shows the magnetometer's calibration, read
/// from the retained calibration topic.
public enum CalibrationEntity {
    public static let key = "magnetic_field_accuracy"
    public static let name = "Magnetometer calibration"
    /// Core Motion's `CMMagneticFieldCalibrationAccuracy` names, as on the wire.
    public static let options = ["uncalibrated", "low", "medium", "high"]
    public static let valueTemplate = "{{ value_json.magneticFieldAccuracy }}"
}
