// Home Assistant's MQTT discovery schema for sensors, transcribed here on
// its own from home-assistant.io (not from the bridge's code, so a mistake
// must be made twice to pass):
//   * integrations/sensor.mqtt: the configuration variables of an MQTT
//     sensor and of its `device` map; `options` needs device_class `enum`
//     and excludes `state_class` and `unit_of_measurement`; `device` works
//     only with `unique_id`, and needs `identifiers` or `connections`;
//     `entity_category` of a sensor must be `diagnostic`;
//   * integrations/mqtt, "MQTT Discovery": the topic
//     `<discovery_prefix>/<component>/[<node_id>/]<object_id>/config`, ids
//     of `[a-zA-Z0-9_-]`; the `origin` map (name required, sw_version,
//     support_url); an empty retained payload removes the entity;
//   * integrations/sensor, "Device class": the units each class accepts;
//   * developers.home-assistant.io, sensor state classes: measurement,
//     total, total_increasing.
import Foundation

enum HomeAssistantSchema {
    static let sensorKeys: Set<String> = [
        "availability", "availability_mode", "availability_template", "availability_topic", "device", "device_class",
        "enabled_by_default", "encoding", "entity_category", "entity_picture", "expire_after", "force_update", "icon",
        "json_attributes_template", "json_attributes_topic", "last_reset_value_template", "name", "object_id",
        // Not `options`: the MQTT sensor of Home Assistant 2024.3 has no such
        // key (its discovery drops it; Tests/Integration/ha-discovery-check.py).
        "payload_available", "payload_not_available", "platform", "suggested_display_precision", "qos", "state_class",
        "state_topic", "unique_id", "unit_of_measurement", "value_template",
        // From the discovery page: recommended on every discovery payload.
        "origin",
    ]
    static let deviceKeys: Set<String> = [
        "configuration_url", "connections", "hw_version", "identifiers", "manufacturer", "model", "model_id", "name",
        "serial_number", "suggested_area", "sw_version", "via_device",
    ]
    static let originKeys: Set<String> = ["name", "sw_version", "support_url"]
    static let stateClasses: Set<String> = ["measurement", "total", "total_increasing"]
    /// The device classes the bridge may use, with the units Home Assistant lists for each.
    static let units: [String: Set<String>] = [
        "distance": ["km", "m", "cm", "mm", "mi", "nmi", "yd", "in"],
        "atmospheric_pressure": ["cbar", "bar", "hPa", "mmHg", "inHg", "kPa", "mbar", "Pa", "psi"],
        "pressure": ["Pa", "kPa", "hPa", "bar", "cbar", "mbar", "mmHg", "inHg", "psi"],
        "temperature": ["°C", "°F", "K"],
        "humidity": ["%"],   // "Percentage of humidity in the air in %"
        "enum": [],
    ]

    static func isID(_ s: Substring) -> Bool {
        !s.isEmpty && s.unicodeScalars.allSatisfy {
            ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "_" || $0 == "-"
        }
    }

    /// Every way `payload` on `topic` breaks the schema; empty when it is a valid sensor configuration.
    static func problems(topic: String, payload: String, discoveryPrefix: String = "homeassistant") -> [String] {
        var out: [String] = []
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        if !(levels.count == 4 || levels.count == 5) || levels.first.map(String.init) != discoveryPrefix
            || levels.last != "config" || levels[1] != "sensor" {
            out.append("topic \(topic) is not \(discoveryPrefix)/sensor/[<node_id>/]<object_id>/config")
        }
        for id in levels.dropFirst(2).dropLast() where !isID(id) { out.append("id '\(id)' has characters outside [a-zA-Z0-9_-]") }
        guard let obj = (try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any] else {
            return out + ["payload is not a JSON object: \(payload)"]
        }
        for k in obj.keys where !sensorKeys.contains(k) { out.append("unknown key \(k)") }
        if !(obj["state_topic"] is String) { out.append("state_topic (required) missing") }
        if let q = obj["qos"] { if let n = q as? Int, (0...2).contains(n) {} else { out.append("qos \(q) not 0, 1 or 2") } }
        if obj["availability"] != nil && obj["availability_topic"] != nil { out.append("availability with availability_topic") }
        if let e = obj["expire_after"], !(e is Int) { out.append("expire_after is not an integer") }
        if let p = obj["suggested_display_precision"], !(p is Int) { out.append("suggested_display_precision is not an integer") }
        let deviceClass = obj["device_class"] as? String
        if let sc = obj["state_class"] as? String, !stateClasses.contains(sc) { out.append("state_class \(sc) unknown") }
        if let dc = deviceClass {
            if let allowed = units[dc] {
                let unit = obj["unit_of_measurement"] as? String
                if dc == "enum" {
                    if unit != nil { out.append("enum sensor with a unit") }
                } else if unit == nil || !allowed.contains(unit!) {
                    out.append("unit \(unit ?? "none") is not one of \(dc)'s: \(allowed.sorted())")
                }
            } else {
                out.append("device_class \(dc) not one the bridge should use")
            }
        }
        if let options = obj["options"] {
            if deviceClass != "enum" { out.append("options without device_class enum") }
            if obj["state_class"] != nil || obj["unit_of_measurement"] != nil { out.append("options with state_class or unit") }
            if (options as? [String])?.isEmpty ?? true { out.append("options must be a non-empty list of strings") }
        }
        if let cat = obj["entity_category"] as? String, cat != "diagnostic" { out.append("a sensor's entity_category must be diagnostic") }
        if let device = obj["device"] {
            guard let d = device as? [String: Any] else { return out + ["device is not a map"] }
            if !(obj["unique_id"] is String) { out.append("device without unique_id") }
            for k in d.keys where !deviceKeys.contains(k) { out.append("unknown device key \(k)") }
            if d["identifiers"] == nil && d["connections"] == nil { out.append("device needs identifiers or connections") }
        }
        if let origin = obj["origin"] {
            guard let o = origin as? [String: Any] else { return out + ["origin is not a map"] }
            if !(o["name"] is String) { out.append("origin.name (required) missing") }
            for k in o.keys where !originKeys.contains(k) { out.append("unknown origin key \(k)") }
        }
        return out
    }
}
