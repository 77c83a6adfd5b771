import Testing
import Foundation
import EdgeProtocol
@testable import EdgeMQTT

/// The retained messages for a state of the agent (Bridge.retainedPlan),
/// and what the bridge makes of the feed's events, with no broker.
@Suite struct RetainedPlanTests {
    let plan = TopicPlan(prefix: "edge", node: "n1", discoveryPrefix: "homeassistant")

    func config(_ streams: [StreamSettings]) -> BridgeConfig { BridgeConfig(node: "n1", streams: streams) }

    func input(connected: Bool = true, grants: [StreamName: Bridge.Grant], active: Set<StreamName>) -> Bridge.PlanInput {
        Bridge.PlanInput(agentConnected: connected, agentVersion: "0.1.0", grants: grants, active: active,
                         devices: [DeviceInfo(id: "mpu6050@0x68", kind: "mpu6050", address: "sim", state: .present)],
                         calibration: Bridge.Calibration(accuracy: .high, frame: .xMagneticNorthZVertical), stopping: false)
    }

    func byTopic(_ entries: [RetainedEntry]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: entries.map { ($0.topic, String(decoding: $0.payload, as: UTF8.self)) })
    }

    @Test func anUnentitledBridgeHasOnlyItsOfflineStatus() {
        let c = config([StreamSettings(stream: .deviceMotion), StreamSettings(stream: .altitude)])
        let entries = Bridge.retainedPlan(config: c, plan: plan, input: input(
            grants: [.deviceMotion: .refused("needs motion"), .altitude: .refused("needs altitude")], active: []))
        #expect(byTopic(entries) == ["edge/n1/status": "offline"])
        let never = Bridge.retainedPlan(config: c, plan: plan, input: input(connected: false, grants: [:], active: []))
        #expect(byTopic(never) == ["edge/n1/status": "offline"])
    }

    @Test func grantedStreamsAreDiscoveredAndDisabledOnesRemoved() {
        let c = config([StreamSettings(stream: .deviceMotion), StreamSettings(stream: .altitude, enabled: false)])
        let t = byTopic(Bridge.retainedPlan(config: c, plan: plan, input: input(grants: [.deviceMotion: .granted], active: [.deviceMotion])))
        #expect(t["edge/n1/status"] == "online")
        #expect(t["edge/n1/devices"]?.contains("\"mpu6050@0x68\"") == true)
        #expect(t["edge/n1/calibration"] == #"{"magneticFieldAccuracy":"high","frame":"xMagneticNorthZVertical"}"#)
        for key in ["roll_deg", "pitch_deg", "heading_deg", CalibrationEntity.key] {
            let payload = t["homeassistant/sensor/n1/\(key)/config"]
            #expect(payload?.isEmpty == false, "\(key)")
            #expect(HomeAssistantSchema.problems(topic: "homeassistant/sensor/n1/\(key)/config", payload: payload ?? "").isEmpty)
        }
        // Disabled (altitude) and unlisted (absoluteAltitude, submersion,
        // pedometer, activity): removed.
        for key in ["relative_altitude_m", "pressure_hpa", "temperature_c", "absolute_altitude_m", "depth_m", "steps", "activity"] {
            #expect(t["homeassistant/sensor/n1/\(key)/config"] == "", "\(key)")
        }
    }

    /// The default streams include humidity (issue 17: the BME280 through
    /// the bridge). Its entity is announced where a device of the agent
    /// feeds it, by the agent's devices list, and removed where none does (a
    /// BMP280 board), so a Home Assistant user never sees a humidity sensor
    /// that can have no value; while no device lists its streams, nothing
    /// is decided.
    @Test func humidityIsAnnouncedWhereADeviceFeedsItAndRemovedElsewhere() {
        let c = BridgeConfig(node: "n1")
        #expect(c.streams.map(\.stream) == [.deviceMotion, .altitude, .humidity])
        let grants: [StreamName: Bridge.Grant] = [.deviceMotion: .granted, .altitude: .granted, .humidity: .granted]
        func plan(_ barometer: DeviceInfo) -> [String: String] {
            let imu = DeviceInfo(id: "mpu6050@0x68", kind: "mpu6050", address: "0x68", state: .present,
                                 streams: [.accelerometer, .gyroscope, .deviceMotion, .altitude, .absoluteAltitude])
            return byTopic(Bridge.retainedPlan(config: c, plan: self.plan, input: Bridge.PlanInput(
                agentConnected: true, agentVersion: "0.1.0", grants: grants, active: Set(grants.keys), devices: [imu, barometer],
                calibration: nil, stopping: false)))
        }
        let humidity = "homeassistant/sensor/n1/humidity_pct/config"
        let bme = plan(DeviceInfo(id: "bme280@0x76", kind: "bme280", address: "0x76", state: .present,
                                  streams: [.altitude, .absoluteAltitude, .submersion, .humidity]))
        #expect(bme[humidity]?.isEmpty == false)
        #expect(HomeAssistantSchema.problems(topic: humidity, payload: bme[humidity] ?? "").isEmpty)
        // A BME280 that stopped answering still lists its streams: the entity stays (unavailable).
        let gone = plan(DeviceInfo(id: "bme280@0x76", kind: "bme280", address: "0x76", state: .missing,
                                   streams: [.altitude, .absoluteAltitude, .submersion, .humidity]))
        #expect(gone[humidity]?.isEmpty == false)
        let bmp = plan(DeviceInfo(id: "bmp280@0x76", kind: "bmp280", address: "0x76", state: .present,
                                  streams: [.altitude, .absoluteAltitude, .submersion]))
        #expect(bmp[humidity] == "", "removed: no device feeds humidity")
        #expect(bmp["homeassistant/sensor/n1/pressure_hpa/config"]?.isEmpty == false, "altitude's entities stay")
        // Devices that list no streams decide nothing.
        let unknown = byTopic(Bridge.retainedPlan(config: c, plan: self.plan, input: input(grants: grants, active: Set(grants.keys))))
        #expect(unknown[humidity]?.isEmpty == false)
    }

    @Test func aRefusedStreamIsNeitherDiscoveredNorRemoved() {
        let c = config([StreamSettings(stream: .deviceMotion), StreamSettings(stream: .altitude)])
        let t = byTopic(Bridge.retainedPlan(config: c, plan: plan, input: input(
            grants: [.deviceMotion: .granted, .altitude: .refused("no")], active: [.deviceMotion])))
        #expect(t["homeassistant/sensor/n1/pressure_hpa/config"] == nil)
        #expect(t["homeassistant/sensor/n1/roll_deg/config"]?.isEmpty == false)
    }

    @Test func theStatusIsOfflineWhileTheAgentIsAwayOrTheBridgeStops() {
        let c = config([StreamSettings(stream: .deviceMotion)])
        let away = byTopic(Bridge.retainedPlan(config: c, plan: plan, input: input(connected: false, grants: [.deviceMotion: .granted], active: [])))
        #expect(away["edge/n1/status"] == "offline")
        #expect(away["homeassistant/sensor/n1/roll_deg/config"]?.isEmpty == false, "entities stay (unavailable) while the agent is away")
        var stopping = input(grants: [.deviceMotion: .granted], active: [.deviceMotion])
        stopping.stopping = true
        #expect(byTopic(Bridge.retainedPlan(config: c, plan: plan, input: stopping))["edge/n1/status"] == "offline")
    }

    /// The entities beyond motion and altitude, field by field against Home
    /// Assistant's sensor documentation (device classes and units, state
    /// classes; `enum` with neither unit nor state class, nor `options`, which
    /// Home Assistant 2024.3's MQTT sensor does not know):
    /// depth is a distance in m, steps a total that only grows (the agent's
    /// count restarts with it: total_increasing takes a drop as a new
    /// cycle), activity an enum whose options hold every name the bridge
    /// can publish, heading a measurement in ° with `null` read as unknown.
    /// Steps and activity are sent only on a change: no expire_after.
    @Test func depthStepsActivityAndHeadingFollowHomeAssistantsSchema() throws {
        let c = config([StreamSettings(stream: .deviceMotion), StreamSettings(stream: .submersion),
                        StreamSettings(stream: .pedometer, scalarsIntervalS: 1), StreamSettings(stream: .activity, scalarsIntervalS: 1)])
        let t = byTopic(Bridge.retainedPlan(config: c, plan: plan, input: input(
            grants: [.deviceMotion: .granted, .submersion: .granted, .pedometer: .granted, .activity: .granted],
            active: [.deviceMotion])))
        func entity(_ key: String) throws -> [String: Any] {
            let topic = "homeassistant/sensor/n1/\(key)/config"
            let payload = try #require(t[topic], "\(key) announced")
            #expect(HomeAssistantSchema.problems(topic: topic, payload: payload) == [], "\(key): \(payload)")
            return try #require((try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any])
        }
        let depth = try entity("depth_m")
        #expect(depth["device_class"] as? String == "distance" && depth["unit_of_measurement"] as? String == "m"
                && depth["state_class"] as? String == "measurement" && depth["expire_after"] as? Int == 10)
        #expect(depth["state_topic"] as? String == "edge/n1/depth_m")

        let steps = try entity("steps")
        #expect(steps["device_class"] == nil && steps["unit_of_measurement"] as? String == "steps"
                && steps["state_class"] as? String == "total_increasing" && steps["suggested_display_precision"] as? Int == 0)
        #expect(steps["expire_after"] == nil, "sent on every new step: its value does not go stale while nobody walks")

        let activity = try entity("activity")
        #expect(activity["device_class"] as? String == "enum" && activity["unit_of_measurement"] == nil
                && activity["state_class"] == nil && activity["expire_after"] == nil && activity["value_template"] == nil)
        #expect(activity["options"] == nil, "not in Home Assistant 2024.3's MQTT sensor schema")
        let options = Set(ScalarCatalog.entities(of: .activity).first?.options ?? [])
        // Every combination of CMMotionActivity's six flags: one of the documented names.
        let published = Set((UInt8(0)..<64).map { ScalarCatalog.activityName(ActivityFlags(rawValue: $0)) })
        #expect(published.isSubset(of: options), "every published state is a documented name: \(published) ⊄ \(options)")

        let heading = try entity("heading_deg")
        #expect(heading["device_class"] == nil && heading["unit_of_measurement"] as? String == "°"
                && heading["state_class"] as? String == "measurement" && heading["expire_after"] as? Int == 10)
        // Home Assistant's MQTT "unknown" is the payload None (its PAYLOAD_NONE); the topic carries null.
        #expect(heading["value_template"] as? String == "{{ 'None' if value == 'null' else value }}")
        #expect(ScalarCatalog.format(nil, decimals: 1) == "null")
    }

    @Test func discoveryOffPublishesNone() {
        var c = config([StreamSettings(stream: .deviceMotion)])
        c.topics.discovery = false
        let t = Bridge.retainedPlan(config: c, plan: plan, input: input(grants: [.deviceMotion: .granted], active: [.deviceMotion]))
        #expect(t.allSatisfy { $0.group != .discovery })
    }

    @Test func theStorePublishesChangesOnceAndTheStatusLast() {
        let store = RetainedStore(wakeup: Wakeup())
        store.replacePlan([RetainedEntry(topic: "edge/n1/status", text: "online", group: .state),
                           RetainedEntry(topic: "homeassistant/sensor/n1/a/config", text: "{}", group: .discovery),
                           RetainedEntry(topic: "edge/n1/devices", text: "[]", group: .state)])
        let first = store.pending(published: [:], statusTopic: "edge/n1/status")
        #expect(first.map(\.0.topic) == ["edge/n1/devices", "homeassistant/sensor/n1/a/config", "edge/n1/status"])
        var published: [String: UInt64] = [:]
        for (e, g) in first { published[e.topic] = g }
        #expect(store.pending(published: published, statusTopic: "edge/n1/status").isEmpty)
        store.replacePlan([RetainedEntry(topic: "edge/n1/status", text: "offline", group: .state),
                           RetainedEntry(topic: "homeassistant/sensor/n1/a/config", text: "{}", group: .discovery)])
        #expect(store.pending(published: published, statusTopic: "edge/n1/status").map(\.0.topic) == ["edge/n1/status"])
        #expect(store.entries["edge/n1/devices"] == nil)
    }

    /// Either submersion entitlement admits the submersion stream (the
    /// agent's rule): a `submersion.full` holder is not told it needs
    /// `submersion.shallow` and that the stream is not published (c7b77b9
    /// said so, then published it); a holder of neither is told both names.
    @Test func submersionFullAdmitsTheSubmersionStream() throws {
        func connect(_ entitlements: String) throws -> (Bridge, [String]) {
            let c = config([StreamSettings(stream: .deviceMotion), StreamSettings(stream: .submersion)])
            let queue = OutboundQueue(capacity: 100)
            let log = BridgeLog(keepLines: true, sink: { _ in })
            let bridge = Bridge(config: c, node: "n1", queue: queue, retained: RetainedStore(wakeup: queue.wakeup), log: log)
            let line = #"{"class":"version","protocol":2,"agent":"edge-agent","agentVersion":"0.1.0","uid":7,"gid":1,"entitlements":[\#(entitlements)],"maxLineBytes":4096,"queueCapacity":256}"#
            guard case .version(let v) = try ServerMessage.decode(line: Array(line.utf8)) else { throw HarnessError("no version") }
            bridge.handle(.connected(v))
            return (bridge, log.kept)
        }
        for held in [#""motion","submersion.full""#, #""motion","submersion.shallow""#] {
            let (bridge, lines) = try connect(held)
            #expect(!lines.contains { $0.contains("not entitled") || $0.contains("needs") }, "\(held): \(lines)")
            let grant = bridge.snapshot().streams.first { $0.stream == .submersion }?.grant
            #expect(grant == .unknown, "\(held): asked for, not refused: \(String(describing: grant))")
        }
        let (bridge, lines) = try connect(#""motion""#)
        #expect(lines.contains { $0.contains("submersion needs \"submersion.shallow\" or \"submersion.full\"") && $0.contains("not published") },
                "\(lines)")
        #expect(bridge.snapshot().streams.first { $0.stream == .submersion }?.grant
                == .refused("needs the \"submersion.shallow\" or \"submersion.full\" entitlement"))
    }

    /// The feed's events, straight into a Bridge: samples become messages at
    /// the configured rates, on capture time.
    @Test func samplesBecomeMessagesAtTheConfiguredRates() throws {
        let c = config([StreamSettings(stream: .deviceMotion, jsonIntervalS: 0.1, scalarsIntervalS: 1)])
        let queue = OutboundQueue(capacity: 10_000)
        let store = RetainedStore(wakeup: queue.wakeup)
        let bridge = Bridge(config: c, node: "n1", queue: queue, retained: store, log: BridgeLog(keepLines: true, sink: { _ in }))
        let line = #"{"class":"version","protocol":2,"agent":"edge-agent","agentVersion":"0.1.0","uid":1,"gid":1,"entitlements":["motion"],"maxLineBytes":4096,"queueCapacity":256}"#
        guard case .version(let v) = try ServerMessage.decode(line: Array(line.utf8)) else { Issue.record("no version"); return }
        bridge.handle(.connected(v))
        bridge.handle(.subscribed(.deviceMotion, intervalS: 0.1))
        // 100 Hz for 2 s (the agent would send 10 Hz; the gate holds either way).
        for i in 0..<200 {
            let m = DeviceMotionSample(timestampNs: UInt64(5_000_000_000 + i * 10_000_000), attitude: Quaternion(w: 1, x: 0, y: 0, z: 0),
                                       gravity: .zero, userAcceleration: .zero, rotationRate: .zero, headingDeg: 90,
                                       referenceFrame: .xMagneticNorthZVertical)
            bridge.handle(.sample(.deviceMotion(m)))
        }
        var topics: [String: Int] = [:]
        var first: [String: String] = [:]
        while let m = queue.pop() {
            topics[m.topic, default: 0] += 1
            if first[m.topic] == nil { first[m.topic] = String(decoding: m.payload, as: UTF8.self) }
        }
        #expect(topics["edge/n1/deviceMotion"] == 20)
        // Scalars on the 1 s grid 5, 6, 7 s: a sample up to 1/16 of the
        // interval early counts (the agent's rule), so 6.94 s stands for 7 s.
        #expect(topics["edge/n1/attitude/roll_deg"] == 3 && topics["edge/n1/heading_deg"] == 3, "\(topics)")
        #expect(first["edge/n1/heading_deg"] == "90.0")
        // The JSON is the protocol's own sample object.
        let json = try #require(first["edge/n1/deviceMotion"])
        guard case .sample(.deviceMotion(let back)) = try ServerMessage.decode(line: Array(json.utf8)) else {
            Issue.record("not a deviceMotion sample: \(json)"); return
        }
        #expect(back.timestampNs == 5_000_000_000 && back.headingDeg == 90)
        #expect(store.entries["edge/n1/status"].map { String(decoding: $0.payload, as: UTF8.self) } == "online")
        bridge.handle(.disconnected("the agent closed the connection"))
        #expect(store.entries["edge/n1/status"].map { String(decoding: $0.payload, as: UTF8.self) } == "offline")
    }
}
