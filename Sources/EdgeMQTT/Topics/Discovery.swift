import EdgeProtocol
import EdgeClient

/// The bridge's name and version, in the discovery payloads' `origin`.
public enum EdgeMQTTInfo {
    public static let name = "edge-mqtt"
    public static let version = "0.1.0"
    public static let supportURL = "https://github.com/edge-motion/edge-motion/blob/main/docs/mqtt.md"
}

/// Home Assistant MQTT discovery payloads (home-assistant.io, "MQTT" →
/// "MQTT Discovery", single-component payloads; "MQTT Sensor" for the keys).
/// Supported: Home Assistant 2024.3 and newer; every payload is checked with
/// 2024.3's own MQTT platform schemas by Tests/Integration/ha-discovery-check.py.
///
/// One retained payload per entity on `<discovery_prefix>/sensor/<node>/<key>/config`.
/// Every entity carries the same `device` block (identifiers
/// `edge-mqtt_<node>`), so Home Assistant groups a node's entities under one
/// device; `availability_topic` is the node's status topic (`online` /
/// `offline`, the Last Will). Keys are written in full, not abbreviated.
/// An empty retained payload on the same topic removes the entity.
public struct DiscoveryBuilder: Sendable {
    public var plan: TopicPlan
    /// QoS Home Assistant subscribes the state topics with (the scalars group's).
    public var stateQoS: Int
    /// The agent's version (the device's `sw_version`).
    public var agentVersion: String

    public init(plan: TopicPlan, stateQoS: Int, agentVersion: String) {
        self.plan = plan; self.stateQoS = stateQoS; self.agentVersion = agentVersion
    }

    /// The configuration of a scalar topic's sensor. `intervalS` is how
    /// often it is published: a value older than three intervals (at least
    /// 10 s) expires and the sensor shows unavailable (`expire_after`), so a
    /// stalled stream is never shown as live. Not for a stream sent only on
    /// a change (steps, activity): its last value stays true while nothing
    /// changes, and would expire ten seconds after the wearer stood still.
    ///
    /// A numeric sensor's `null` (not known: a heading in a frame without
    /// north) goes through ``unknownTemplate``: Home Assistant's MQTT
    /// platforms take only the payload `None` as "unknown", and a sensor
    /// with a unit or state class refuses any other non-number.
    public func config(for entity: ScalarEntity, intervalS: Double) -> [UInt8] {
        var w = JSONWriter(capacity: 1024)
        w.beginObject()
        w.key("name"); w.string(entity.name)
        w.key("unique_id"); w.string(plan.uniqueID(entity.key))
        w.key("state_topic"); w.string(plan.scalar(entity))
        if let u = entity.unit { w.key("unit_of_measurement"); w.string(u) }
        if let d = entity.deviceClass { w.key("device_class"); w.string(d) }
        if let s = entity.stateClass { w.key("state_class"); w.string(s) }
        // An `enum` sensor goes without `options`: the MQTT sensor schema
        // of Home Assistant 2024.3 (the newest release Python 3.11 installs)
        // has no such key and its discovery drops it; an enum sensor with no
        // options takes any state. The names the bridge sends are
        // `entity.options` (docs/mqtt.md lists them).
        if entity.options == nil {
            w.key("suggested_display_precision"); w.int(entity.decimals)
        }
        if let i = entity.icon { w.key("icon"); w.string(i) }
        if entity.options == nil { w.key("value_template"); w.string(Self.unknownTemplate) }
        if case .stream(let stream) = entity.source, StreamLiveness.isPeriodic(stream) {
            w.key("expire_after"); w.int(Self.expireAfter(intervalS: intervalS))
        }
        common(&w)
        w.endObject()
        return w.bytes
    }

    /// The magnetometer calibration's diagnostic `enum` sensor, read from
    /// the retained calibration topic with a `value_template`.
    public func calibrationConfig() -> [UInt8] {
        var w = JSONWriter(capacity: 1024)
        w.beginObject()
        w.key("name"); w.string(CalibrationEntity.name)
        w.key("unique_id"); w.string(plan.uniqueID(CalibrationEntity.key))
        w.key("state_topic"); w.string(plan.calibration)
        w.key("value_template"); w.string(CalibrationEntity.valueTemplate)
        w.key("device_class"); w.string("enum")   // no `options`: see config(for:intervalS:)
        w.key("entity_category"); w.string("diagnostic")
        w.key("icon"); w.string("mdi:compass-outline")
        common(&w)
        w.endObject()
        return w.bytes
    }

    /// Availability, QoS, device and origin: the same in every payload.
    func common(_ w: inout JSONWriter) {
        w.key("availability_topic"); w.string(plan.status)
        w.key("payload_available"); w.string(BridgeStatusWord.online)
        w.key("payload_not_available"); w.string(BridgeStatusWord.offline)
        w.key("qos"); w.int(stateQoS)
        w.key("device"); w.beginObject()
        w.key("identifiers"); w.beginArray(); w.string(plan.deviceIdentifier); w.endArray()
        w.key("name"); w.string(plan.node)
        w.key("manufacturer"); w.string("Edge motion")
        w.key("model"); w.string("Core Motion for Linux node (edge-agent)")
        w.key("sw_version"); w.string(agentVersion)
        w.endObject()
        w.key("origin"); w.beginObject()
        w.key("name"); w.string(EdgeMQTTInfo.name)
        w.key("sw_version"); w.string(EdgeMQTTInfo.version)
        w.key("support_url"); w.string(EdgeMQTTInfo.supportURL)
        w.endObject()
    }

    /// The scalar topics' `null` as Home Assistant's "unknown" (`None`);
    /// every other payload as it is.
    public static let unknownTemplate = "{{ 'None' if value == 'null' else value }}"

    /// Seconds after which Home Assistant marks a value unavailable:
    /// three publishing intervals, at least 10 s.
    public static func expireAfter(intervalS: Double) -> Int {
        max(10, Int((3 * intervalS).rounded(.up)))
    }
}

/// The two payloads of the status topic (Home Assistant's defaults for
/// `payload_available` / `payload_not_available`).
public enum BridgeStatusWord {
    public static let online = "online"
    public static let offline = "offline"
}
