// The bridge against a real mosquitto broker and a real edge-agent on the
// simulated board, on loopback (Support/Harness.swift). mosquitto_sub is the
// independent reader of what reached the broker; the bridge's status socket
// (`edge-mqtt status --json`) is what an operator sees. Every wait is
// bounded and polls; none sleeps. Serialized: each test runs an agent, a
// broker and a bridge, and the machine may have two cores.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
import TestThreads
#endif

/// The entities the default test streams (deviceMotion, altitude) publish.
private let motionKeys = ["roll_deg", "pitch_deg", "heading_deg"]
private let altitudeKeys = ["relative_altitude_m", "pressure_hpa", "temperature_c"]
/// Entities of streams the test configuration leaves out: removed.
private let removedKeys = ["absolute_altitude_m", "depth_m"]

private func json(_ s: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(s.utf8))) as? [String: Any]
}

private extension Dictionary where Key == String, Value == Any {
    subscript(path path: String...) -> Any? {
        var cur: Any? = self
        for k in path { cur = (cur as? [String: Any])?[k] }
        return cur
    }
    func int(_ path: String...) -> Int? {
        var cur: Any? = self
        for k in path { cur = (cur as? [String: Any])?[k] }
        return (cur as? NSNumber)?.intValue
    }
    func string(_ path: String...) -> String? {
        var cur: Any? = self
        for k in path { cur = (cur as? [String: Any])?[k] }
        return cur as? String
    }
}

/// Everything one test started, stopped in reverse by ``stop()``.
private final class Rig: @unchecked Sendable {
    let directory: String
    var broker: Broker!
    var agent: Agent!
    var bridges: [BridgeProcess] = []
    var subscribers: [Subscriber] = []

    init(_ tag: String) throws {
        try requireTools()
        directory = try Paths.temporaryDirectory(tag)
    }

    /// What every process wrote, for a failing expectation.
    var transcript: String {
        (bridges.map(\.child.transcript) + [agent?.child.transcript ?? "", broker?.log ?? ""]).joined(separator: "\n")
    }

    func stop() {
        for s in subscribers { s.stop() }
        for b in bridges { b.stop() }
        agent?.stop()
        broker?.stop()
        Paths.remove(directory)
    }

    func subscribe(_ name: String = "sub", filters: [String] = ["#"], tls: [String] = [], auth: [String] = []) throws -> Subscriber {
        let s = Subscriber(broker: broker, name: name, filters: filters, tls: tls, auth: auth)
        subscribers.append(s)
        try s.start()
        return s
    }

    func bridge(node: String = "n1", broker body: String = "", streams: String? = nil, rest: String = "",
                name: String = "bridge", port: Int? = nil, environment: [String: String] = [:]) throws -> BridgeProcess {
        let b: BridgeProcess
        if let streams {
            b = try BridgeProcess(directory: directory, node: node, brokerPort: port ?? broker.port, agentSocket: agent.socket,
                                  broker: body, streams: streams, rest: rest, name: name, environment: environment)
        } else {
            b = try BridgeProcess(directory: directory, node: node, brokerPort: port ?? broker.port, agentSocket: agent.socket,
                                  broker: body, rest: rest, name: name, environment: environment)
        }
        bridges.append(b)
        try b.start()
        return b
    }
}

@Suite(.serialized, .ownThread) struct BrokerIntegrationTests {
    /// Discovery read back by a subscriber and checked field by field
    /// against Home Assistant's schema; data, scalars and retained state
    /// arrive; Home Assistant's birth makes the bridge re-send discovery;
    /// `status` says what is connected; SIGTERM leaves `offline` retained.
    @Test func discoveryDataAndACleanStop() throws {
        let rig = try Rig("disc")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe()
        let bridge = try rig.bridge()

        let discovery = { (key: String) in "homeassistant/sensor/n1/\(key)/config" }
        let arrived = waitUntil(20) {
            sub.last(on: "edge/n1/status")?.payload == "online"
                && (motionKeys + altitudeKeys + removedKeys + ["magnetic_field_accuracy"]).allSatisfy { sub.last(on: discovery($0)) != nil }
                && sub.last(on: "edge/n1/deviceMotion") != nil && sub.last(on: "edge/n1/attitude/roll_deg") != nil
                && sub.last(on: "edge/n1/pressure/hpa") != nil && sub.last(on: "edge/n1/devices")?.payload.contains("mpu6050") == true
                && sub.last(on: "edge/n1/calibration") != nil
        }
        #expect(arrived, "\(sub.messages.suffix(20))\n\(rig.transcript)")
        guard arrived else { return }

        // Discovery, field by field.
        var identifiers = Set<String>()
        for key in motionKeys + altitudeKeys + ["magnetic_field_accuracy"] {
            let m = sub.last(on: discovery(key))!
            #expect(m.retained, "\(key) discovery is retained")
            #expect(HomeAssistantSchema.problems(topic: m.topic, payload: m.payload) == [], "\(key): \(m.payload)")
            guard let c = json(m.payload) else { Issue.record("\(key) is not JSON"); continue }
            #expect(c.string("availability_topic") == "edge/n1/status")
            #expect(c.string("unique_id")?.hasSuffix(key) == true && c.string("unique_id")?.contains("n1") == true)
            identifiers.formUnion((c[path: "device", "identifiers"] as? [String]) ?? [])
            // The state topic is one the bridge publishes on.
            let state = c.string("state_topic")!
            #expect(sub.last(on: state) != nil, "\(key)'s state topic \(state) has messages")
        }
        #expect(identifiers.count == 1, "one device groups the node's entities: \(identifiers)")
        let pressure = json(sub.last(on: discovery("pressure_hpa"))!.payload)!
        #expect(pressure.string("device_class") == "atmospheric_pressure" && pressure.string("unit_of_measurement") == "hPa"
                && pressure.string("state_class") == "measurement")
        let temperature = json(sub.last(on: discovery("temperature_c"))!.payload)!
        #expect(temperature.string("device_class") == "temperature" && temperature.string("unit_of_measurement") == "°C")
        // Streams the configuration leaves out: empty retained payloads remove their entities.
        for key in removedKeys {
            let m = sub.last(on: discovery(key))!
            #expect(m.retained && m.payload.isEmpty, "\(key) removed: \(m)")
        }

        // Data: the protocol's own sample objects; scalars: one number each.
        let sample = json(sub.last(on: "edge/n1/deviceMotion")!.payload)
        #expect(sample?.string("class") == "sample" && sample?.string("stream") == "deviceMotion" && sample?["timestamp_ns"] != nil)
        let hpa = Double(sub.last(on: "edge/n1/pressure/hpa")!.payload)
        #expect(hpa.map { (300...1100).contains($0) } == true, "pressure in hPa: \(String(describing: hpa))")
        let roll = Double(sub.last(on: "edge/n1/attitude/roll_deg")!.payload)
        #expect(roll.map { abs($0) <= 180 } == true)
        // QoS per topic group, the defaults: data 0, scalars 0, state 1, discovery 1.
        #expect(sub.last(on: "edge/n1/deviceMotion")?.qos == 0 && sub.last(on: "edge/n1/pressure/hpa")?.qos == 0)
        #expect(sub.last(on: "edge/n1/status")?.qos == 1 && sub.last(on: discovery("roll_deg"))?.qos == 1)
        let devices = sub.last(on: "edge/n1/devices")!
        #expect(devices.retained && devices.payload.contains("mpu6050"), "\(devices)")

        // Home Assistant restarts: its birth message brings discovery again.
        let before = sub.messages(on: discovery("roll_deg")).count
        try runTool(which("mosquitto_pub")!, ["-h", "127.0.0.1", "-p", String(rig.broker.port), "-t", "homeassistant/status", "-m", "online"],
                    in: rig.directory)
        #expect(waitUntil(10) { sub.messages(on: discovery("roll_deg")).count > before }, "\(rig.transcript)")
        #expect(bridge.status()?.int("home_assistant_births") == 1)

        // What an operator sees.
        let status = try #require(bridge.status())
        #expect(status.string("broker", "state") == "connected")
        #expect(status[path: "agent", "connected"] as? Bool == true)
        let text = try runTool(Paths.bridgeBinary, ["status", "--socket", bridge.statusSocket], in: rig.directory)
        #expect(text.status == 0)
        #expect(text.out.contains("broker   127.0.0.1:\(rig.broker.port) (MQTT 3.1.1): connected"), "\(text.out)")
        #expect(text.out.contains("deviceMotion") && text.out.contains("subscribed"), "\(text.out)")

        // SIGTERM: offline, retained, and a clean exit.
        bridge.child.signal(SIGTERM)
        #expect(bridge.child.waitForExit(45) == 0, "\(bridge.log)")
        #expect(waitUntil(30) { sub.last(on: "edge/n1/status")?.payload == "offline" })
        let late = try rig.subscribe("late", filters: ["edge/n1/status"])
        #expect(waitUntil(30) { late.last(on: "edge/n1/status").map { $0.retained && $0.payload == "offline" } == true },
                "a subscriber arriving later is told offline (retained)")
    }

    /// MQTT 3.1.1 over TLS with a CA made by the test and a client
    /// certificate; a bridge given the wrong CA says TLS failed.
    @Test func mqtt311OverTLSWithATestCA() throws {
        let rig = try Rig("tls")
        defer { rig.stop() }
        let certs = try TestCertificates.make(in: rig.directory)
        rig.broker = try Broker(directory: rig.directory, extraConfig: """
            allow_anonymous true
            cafile \(certs.ca)
            certfile \(certs.serverCert)
            keyfile \(certs.serverKey)
            require_certificate true
            """)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let tls = ["--cafile", certs.ca, "--cert", certs.clientCert, "--key", certs.clientKey]
        let sub = try rig.subscribe(tls: tls)
        let bridge = try rig.bridge(broker: """
            protocol: "3.1.1", tls: { ca_file: "\(certs.ca)", cert_file: "\(certs.clientCert)", key_file: "\(certs.clientKey)" },
            """, rest: "qos: { data: 1, scalars: 1, state: 0, discovery: 0 },")
        #expect(waitUntil(20) { sub.last(on: "edge/n1/status")?.payload == "online" && sub.last(on: "edge/n1/deviceMotion") != nil },
                "\(rig.transcript)")
        // QoS per topic group, as configured (the other way round from the defaults).
        #expect(sub.last(on: "edge/n1/deviceMotion")?.qos == 1 && sub.last(on: "edge/n1/status")?.qos == 0,
                "\(String(describing: sub.last(on: "edge/n1/deviceMotion"))) \(String(describing: sub.last(on: "edge/n1/status")))")
        #expect(waitUntil(10) { sub.last(on: "edge/n1/attitude/roll_deg")?.qos == 1 })
        let status = bridge.status()
        #expect(status?.string("broker", "state") == "connected" && status?.string("broker", "protocol") == "3.1.1"
                && status?[path: "broker", "tls"] as? Bool == true)

        let wrong = try rig.bridge(node: "n2", broker: """
            tls: { ca_file: "\(certs.otherCA)", cert_file: "\(certs.clientCert)", key_file: "\(certs.clientKey)" },
            """, name: "wrong-ca")
        #expect(wrong.waitForLog("TLS with the broker at 127.0.0.1:\(rig.broker.port) failed"), "\(wrong.log)")
        let s = wrong.status()
        #expect(s?.string("broker", "state") != "connected")
        #expect(s?.string("broker", "last_error")?.contains("TLS") == true, "\(String(describing: s))")
        #expect(sub.last(on: "edge/n2/status") == nil, "nothing of n2 reached the broker")
    }

    /// TLS with only a CA (`broker.tls.ca_file`, no client certificate), the
    /// common case with a hosted broker: the broker's certificate is
    /// verified against the test's CA and data flows; a broker that demands
    /// a client certificate refuses that bridge, and it says TLS failed.
    @Test func tlsWithOnlyACAAndNoClientCertificate() throws {
        let rig = try Rig("tlsca")
        defer { rig.stop() }
        let certs = try TestCertificates.make(in: rig.directory)
        rig.broker = try Broker(directory: rig.directory, extraConfig: """
            allow_anonymous true
            cafile \(certs.ca)
            certfile \(certs.serverCert)
            keyfile \(certs.serverKey)
            require_certificate false
            """)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe(tls: ["--cafile", certs.ca])
        let bridge = try rig.bridge(broker: #"tls: { ca_file: "\#(certs.ca)" },"#)
        #expect(waitUntil(20) { sub.last(on: "edge/n1/status")?.payload == "online" && sub.last(on: "edge/n1/deviceMotion") != nil },
                "\(rig.transcript)")
        let status = bridge.status()
        #expect(status?.string("broker", "state") == "connected" && status?[path: "broker", "tls"] as? Bool == true,
                "\(String(describing: status))")

        // The same bridge configuration against a broker that requires a client certificate.
        try FileManager.default.createDirectory(atPath: rig.directory + "/strict", withIntermediateDirectories: true)
        let strict = try Broker(directory: rig.directory + "/strict", extraConfig: """
            allow_anonymous true
            cafile \(certs.ca)
            certfile \(certs.serverCert)
            keyfile \(certs.serverKey)
            require_certificate true
            """)
        defer { strict.stop() }
        try strict.start()
        let refused = try rig.bridge(node: "n2", broker: #"tls: { ca_file: "\#(certs.ca)" },"#, name: "nocert", port: strict.port)
        #expect(refused.waitForLog("TLS with the broker at 127.0.0.1:\(strict.port) failed"), "\(refused.log)\n\(strict.log)")
        #expect(refused.status()?.string("broker", "state") != "connected")
    }

    /// A broker with accounts: the wrong password is refused and said so
    /// (never printed); the right one, from a 0600 file, connects; a file
    /// other users may read is refused before anything starts.
    @Test func aWrongPasswordIsRefusedAndSaidSo() throws {
        let rig = try Rig("auth")
        defer { rig.stop() }
        let passwd = rig.directory + "/mosquitto.passwd"
        try runTool(which("mosquitto_passwd")!, ["-c", "-b", passwd, "edge", "right-secret-42"], in: rig.directory)
        chmod(passwd, 0o600)
        rig.broker = try Broker(directory: rig.directory, extraConfig: "allow_anonymous false\npassword_file \(passwd)")
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let auth = ["-u", "edge", "-P", "right-secret-42"]
        let sub = try rig.subscribe(auth: auth)

        try Paths.write("wrong-secret-17\n", to: rig.directory + "/wrong.pw", mode: 0o600)
        let wrong = try rig.bridge(node: "bad", broker: #"username: "edge", password_file: "wrong.pw","#, name: "wrong")
        #expect(wrong.waitForLog("check broker.username and the password in broker.password_file"), "\(wrong.log)")
        let s = wrong.status()
        #expect(s?.string("broker", "state") != "connected")
        #expect(s?.string("broker", "last_error")?.lowercased().contains("not authori") == true, "\(String(describing: s))")
        #expect(!wrong.log.contains("wrong-secret-17"), "the password is never logged")

        try Paths.write("right-secret-42\n", to: rig.directory + "/right.pw", mode: 0o600)
        let right = try rig.bridge(node: "good", broker: #"username: "edge", password_file: "right.pw","#, name: "right")
        #expect(waitUntil(20) { sub.last(on: "edge/good/status")?.payload == "online" }, "\(right.log)")
        #expect(sub.last(on: "edge/bad/status") == nil)
        #expect(!right.log.contains("right-secret-42"))

        // Readable by everyone: refused at start, exit status 2, nothing published.
        try Paths.write("right-secret-42\n", to: rig.directory + "/open.pw", mode: 0o644)
        let open = try rig.bridge(node: "open", broker: #"username: "edge", password_file: "open.pw","#, name: "open")
        #expect(open.child.waitForExit(45) == 2)
        #expect(open.log.contains("is readable by every user (mode 0644)") && !open.log.contains("right-secret-42"), "\(open.log)")
    }

    /// An ACL that denies the discovery topics: MQTT 5 reports each refused
    /// publish (reason 0x87), the bridge keeps publishing what is allowed,
    /// and both `status` and `check` name the refused topics.
    @Test func anACLThatDeniesATopicIsReported() throws {
        let rig = try Rig("acl")
        defer { rig.stop() }
        let acl = rig.directory + "/acl"
        // Lines before any `user` apply to anonymous clients.
        try Paths.write("topic readwrite edge/#\ntopic readwrite edge-test/#\ntopic read homeassistant/#\n", to: acl)
        rig.broker = try Broker(directory: rig.directory, extraConfig: "allow_anonymous true\nacl_file \(acl)")
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe()
        // MQTT 5 (3.1.1, the default, cannot say why a publish was refused).
        let bridge = try rig.bridge(broker: #"protocol: "5","#)
        #expect(waitUntil(20) { sub.last(on: "edge/n1/status")?.payload == "online" && sub.last(on: "edge/n1/deviceMotion") != nil },
                "\(rig.transcript)")
        #expect(bridge.waitForLog("the broker refused a publish to homeassistant/sensor/n1/"), "\(bridge.log)")
        let refused = waitUntil(10) {
            ((bridge.status()?["refusals"] as? [[String: Any]]) ?? []).contains {
                ($0["topic"] as? String)?.hasPrefix("homeassistant/sensor/n1/") == true && ($0["code"] as? Int) == 0x87
            }
        }
        #expect(refused, "\(String(describing: bridge.status()))")
        #expect(sub.messages.allSatisfy { !$0.topic.hasPrefix("homeassistant/") }, "nothing denied reached the broker")

        let check = try runTool(Paths.bridgeBinary, ["check", "--config", bridge.configPath, "--timeout", "3"], in: rig.directory)
        #expect(check.status == 1, "\(check.out)\(check.err)")
        #expect(check.out.contains("homeassistant/sensor/n1/roll_deg/config") && check.out.contains("refused"), "\(check.out)")
        let line = check.out.split(separator: "\n").first { $0.contains("edge/n1/deviceMotion ") }
        #expect(line?.contains("ok") == true, "an allowed topic is ok: \(check.out)")
    }

    /// A sender that repeats Home Assistant's birth 300 times: every birth
    /// is counted, but the log has at most 5 lines of it per 10 s and one
    /// line saying how many were suppressed (issue 16 item 5: 1.17 M lines
    /// in 20 s on c7b77b9).
    @Test func aFloodOfHomeAssistantBirthsIsLoggedAFewTimesWithACount() throws {
        let rig = try Rig("births")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe()
        let bridge = try rig.bridge()
        #expect(waitUntil(20) { sub.last(on: "edge/n1/status")?.payload == "online" }, "\(rig.transcript)")
        // 300 births, in every run: each republishes the discovery payloads,
        // and a sanitized bridge handles about 7 a second (2000 took over
        // 180 s under ThreadSanitizer beside a load). Unlimited, 300 would be
        // 300 lines; the limit allows 5 a window.
        let n = 300
        let floodStarted = Date()
        let flood = try runTool("/bin/sh", ["-c", "yes online | head -n \(n) | \(which("mosquitto_pub")!) -h 127.0.0.1 -p \(rig.broker.port) -q 1 -t homeassistant/status -l"],
                                in: rig.directory, timeout: 60)
        #expect(flood.status == 0, "\(flood.err)")
        #expect(waitUntil(180) { bridge.status()?.int("home_assistant_births") == n }, "\(String(describing: bridge.status()))")
        // Each window (10 s) writes its count when it ends, so once every
        // birth is handled the log owes at most the last window's count: wait
        // for the sum itself (a slow machine spreads the flood over several
        // windows, and an earlier window's count line is no sign the last
        // one's is written).
        func births() -> (lines: [Substring], written: Int, suppressed: Int) {
            let lines = bridge.log.split(separator: "\n").filter { $0.contains("Home Assistant announced itself") }
            let suppressed = lines.compactMap { line -> Int? in
                guard line.hasSuffix(" suppressed)"), let open = line.lastIndex(of: "(") else { return nil }
                return Int(line[line.index(after: open)...].prefix { $0.isNumber })
            }.reduce(0, +)
            return (lines, lines.filter { !$0.hasSuffix(" suppressed)") }.count, suppressed)
        }
        #expect(waitUntil(30) { let b = births(); return b.written + b.suppressed >= n }, "\(bridge.log.suffix(3000))")
        #expect(bridge.log.contains("similar lines suppressed)"), "\(bridge.log.suffix(3000))")
        // The limit is per 10-s window: a slow machine spreads the flood over
        // more of them (and any flood may touch one more than it lasts).
        let windows = Int(Date().timeIntervalSince(floodStarted) / 10) + 2
        let (lines, written, suppressed) = births()
        #expect(lines.count <= 6 * windows, "\(lines.count) lines in \(windows) windows of 10 s: \(lines.prefix(20))")
        #expect(written + suppressed == n, "every birth is either logged or counted: \(written) + \(suppressed)")
        #expect(bridge.status()?.int("log_lines_suppressed") == suppressed)
    }

    /// The `bridge` counters topic comes on connection, as documented, even
    /// when the agent grants its streams only after the broker connected
    /// (c7b77b9 skipped it then and sent it first 60 s later).
    @Test func theCountersComeOnConnectionWhenTheAgentAnswersLater() throws {
        let rig = try Rig("counters")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)   // not started yet
        let sub = try rig.subscribe()
        let bridge = try rig.bridge()
        #expect(waitUntil(20) { bridge.status()?.string("broker", "state") == "connected" }, "\(rig.transcript)")
        #expect(sub.last(on: "edge/n1/bridge") == nil, "nothing granted yet: no counters")
        try rig.agent.start()
        #expect(waitUntil(20) { sub.last(on: "edge/n1/bridge") != nil },
                "the counters within 20 s of the agent's grant (interval 60 s): \(sub.messages.map(\.topic).suffix(20))\n\(bridge.log)")
        let counters = json(sub.last(on: "edge/n1/bridge")?.payload ?? "")
        #expect(counters?["broker_connections"] as? Int == 1, "\(String(describing: counters))")
    }

    /// `check` with streams sent only on a change (steps): subscribed is
    /// enough, with a hint that says so (c7b77b9 failed it: "no sample …
    /// is a device of it missing?").
    @Test func checkAcceptsAStreamSentOnlyOnAChange() throws {
        let rig = try Rig("onchange")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory,
                              clients: "[ { uid: \(getuid()), entitlements: [\"motion\", \"altitude\", \"fitness\"] } ]")
        try rig.agent.start()
        let config = try BridgeProcess(directory: rig.directory, node: "oc", brokerPort: rig.broker.port, agentSocket: rig.agent.socket,
                                       streams: #"[ { stream: "deviceMotion" }, { stream: "activity" }, { stream: "pedometer" }, { stream: "pedometerEvent" } ]"#)
        let check = try runTool(Paths.bridgeBinary, ["check", "--config", config.configPath, "--timeout", "3"], in: rig.directory)
        // The simulated board sends one activity at once; steps come only with steps.
        for stream in ["pedometer", "pedometerEvent"] {
            let line = check.out.split(separator: "\n").first { $0.contains("  \(stream) ") }.map(String.init) ?? ""
            #expect(line.contains("ok (subscribed, not refused; sent only when it changes"), "\(check.out)\(check.err)")
        }
        #expect(!check.out.contains("is a device of it missing"), "\(check.out)")
        #expect(check.status == 0, "\(check.out)\(check.err)")
    }

    /// The broker is down when the bridge starts: it keeps trying within
    /// the backoff cap, says so, and publishes once the broker is up.
    @Test func aBrokerDownAtStartIsWaitedFor() throws {
        let rig = try Rig("down")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let bridge = try rig.bridge()
        #expect(bridge.waitForLog("Connection refused"), "\(bridge.log)")
        // The agent side runs regardless (it may connect after the broker's
        // first refusal on a loaded machine: waited for, not assumed).
        var away = bridge.status()
        #expect(waitUntil(20) { away = bridge.status(); return away?[path: "agent", "connected"] as? Bool == true },
                "the agent side runs regardless: \(String(describing: away))")
        #expect(away?.string("broker", "state") == "not connected", "\(String(describing: away))")
        #expect(away?.string("broker", "last_error")?.contains("Connection refused") == true)

        try rig.broker.start()
        let sub = try rig.subscribe()
        #expect(waitUntil(20) { sub.last(on: "edge/n1/status")?.payload == "online" && sub.last(on: "edge/n1/deviceMotion") != nil },
                "\(rig.transcript)")
        let up = bridge.status()
        #expect(up?.string("broker", "state") == "connected" && up?.int("broker", "connections") == 1)
    }

    /// The broker is killed (its retained store with it) and restarted:
    /// the bridge reports the outage, drops the oldest beyond its queue and
    /// counts them, reconnects within the cap, publishes the retained state
    /// and discovery again, and data resumes.
    @Test func aBrokerKilledAndRestartedResumes() throws {
        let rig = try Rig("restart")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe()
        let bridge = try rig.bridge(rest: "queue: { capacity: 20 },")
        #expect(waitUntil(20) { sub.last(on: "edge/n1/status")?.payload == "online" && sub.last(on: "edge/n1/deviceMotion") != nil },
                "\(rig.transcript)")

        rig.broker.kill()
        sub.stop()
        #expect(waitUntil(10) { bridge.status()?.string("broker", "state") == "reconnecting" }, "\(bridge.log)")
        // 10 Hz data and 2 Hz scalars fill 20 places in about 2 s.
        #expect(waitUntil(15) { (bridge.status()?.int("queue", "dropped") ?? 0) > 0 }, "\(String(describing: bridge.status()))")
        let outage = bridge.status()
        #expect(outage?.string("broker", "last_error")?.isEmpty == false)
        #expect(outage?.int("queue", "queued") == 20)

        try rig.broker.start()
        let after = try rig.subscribe("after")
        let resumed = waitUntil(20) {
            after.last(on: "edge/n1/status").map { $0.retained && $0.payload == "online" } == true
                && after.last(on: "homeassistant/sensor/n1/roll_deg/config")?.retained == true
                && after.last(on: "edge/n1/devices")?.retained == true
                && after.messages(on: "edge/n1/deviceMotion").count >= 3
        }
        #expect(resumed, "retained state, discovery and data again: \(after.messages.suffix(10))\n\(bridge.log)")
        let back = try #require(bridge.status())
        #expect(back.string("broker", "state") == "connected")
        #expect(back.int("broker", "reconnects") == 1)
        #expect((back.int("queue", "dropped_last_outage") ?? 0) > 0, "\(back)")
        #expect(bridge.log.contains("reconnected to the broker") && bridge.log.contains("dropped while it was away"), "\(bridge.log)")
        let counters = after.last(on: "edge/n1/bridge").flatMap { json($0.payload) }
        #expect(waitUntil(30) { after.last(on: "edge/n1/bridge").flatMap { json($0.payload) }?.int("broker_connections") == 2 },
                "the retained counters say so too: \(String(describing: counters))")
    }

    /// A broker that stops answering but keeps the connection open (hung,
    /// or a network dropping everything): keepalive finds it, the status
    /// stops saying `connected`, and data resumes when it answers again.
    /// About 10 s: the shortest keepalive is 5 s and a PINGREQ must go
    /// unanswered for another keepalive period.
    @Test func aHungBrokerIsFoundByKeepaliveAndResumes() throws {
        let rig = try Rig("hung")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe()
        let bridge = try rig.bridge()
        #expect(waitUntil(20) { sub.last(on: "edge/n1/deviceMotion") != nil }, "\(rig.transcript)")

        rig.broker.freeze()
        let found = waitUntil(20) { bridge.status()?.string("broker", "state") != "connected" }
        #expect(found, "a hung broker must not be reported as connected: \(String(describing: bridge.status()))")
        #expect(bridge.log.contains("stopped answering") || bridge.log.contains("was lost"), "\(bridge.log)")
        rig.broker.thaw()
        let before = sub.messages(on: "edge/n1/deviceMotion").count
        #expect(waitUntil(20) {
            bridge.status()?.string("broker", "state") == "connected" && sub.messages(on: "edge/n1/deviceMotion").count > before + 3
        }, "\(bridge.log)")
    }

    /// The agent stops and starts again: the node is `offline` while it is
    /// away (the broker connection stays up and says so), then `online`
    /// with data again, and the status counts the second connection.
    @Test func anAgentRestartIsOfflineThenResumes() throws {
        let rig = try Rig("agent")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe()
        let bridge = try rig.bridge()
        #expect(waitUntil(20) { sub.last(on: "edge/n1/status")?.payload == "online" && sub.last(on: "edge/n1/deviceMotion") != nil },
                "\(rig.transcript)")

        rig.agent.child.signal(SIGTERM)
        #expect(rig.agent.child.waitForExit(45) == 0, "\(rig.agent.child.transcript)")
        #expect(waitUntil(10) { sub.last(on: "edge/n1/status").map { $0.retained && $0.payload == "offline" } == true },
                "\(sub.messages.suffix(5))\n\(bridge.log)")
        let away = try #require(bridge.status())
        #expect(away[path: "agent", "connected"] as? Bool == false)
        #expect(away.string("agent", "last_problem")?.isEmpty == false, "\(away)")
        #expect(away.string("broker", "state") == "connected")
        let before = sub.messages(on: "edge/n1/deviceMotion").count

        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        #expect(waitUntil(20) {
            sub.last(on: "edge/n1/status")?.payload == "online" && sub.messages(on: "edge/n1/deviceMotion").count >= before + 3
        }, "\(bridge.log)")
        let back = try #require(bridge.status())
        #expect(back[path: "agent", "connected"] as? Bool == true && back.int("agent", "connections") == 2, "\(back)")
    }

    /// One thread of the bridge process reads the agent and publishes: of
    /// its threads only one wakes per batch of samples, the others on their
    /// own timers (the signal thread twice a second). The kernel's count of
    /// each thread's voluntary context switches (a wait that ended) over a
    /// window of messages the subscriber received is the independent
    /// measure; a reader thread of its own that hands each message to the
    /// broker thread wakes as often as that thread does. The supervisor
    /// process wakes only for signals (and now and then). No clock is read.
    @Test func oneThreadWakesPerBatchOfSamples() throws {
        let rig = try Rig("wake")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe(filters: ["edge/n1/#"])
        let bridge = try rig.bridge(streams: #"[ { stream: "deviceMotion", json_interval_s: 0.05, scalars_interval_s: 1 }, { stream: "altitude", json_interval_s: 0.1, scalars_interval_s: 1 } ]"#)
        #expect(waitUntil(30) { sub.messages(on: "edge/n1/deviceMotion").count >= 10 }, "\(rig.transcript)")
        // `edge-mqtt run` supervises the bridge process: the work is in its child.
        let supervisor = bridge.child.process.processIdentifier
        var worker: pid_t?
        _ = waitUntil(10) { worker = childProcesses(of: supervisor).first; return worker != nil }
        let pid = try #require(worker, "the supervisor's bridge process")

        let before = voluntarySwitchesPerThread(pid)
        let supervisorBefore = voluntarySwitchesPerThread(supervisor).values.reduce(0, +)
        let m0 = sub.messages.count
        #expect(waitUntil(90) { sub.messages.count >= m0 + 300 }, "\(rig.transcript)")
        let after = voluntarySwitchesPerThread(pid)
        let supervisorWoke = voluntarySwitchesPerThread(supervisor).values.reduce(0, +) - supervisorBefore
        let messages = sub.messages.count - m0
        let woke = after.map { ($0.key, $0.value - (before[$0.key] ?? 0)) }.sorted { $0.1 > $1.1 }
        // A thread that wakes per batch wakes at least once per 2 messages
        // here (20 Hz + 10 Hz JSON, scalars at 1 Hz, about 36 a second); a
        // timer thread at most 10 times a second: the signal thread twice,
        // and under ThreadSanitizer its runtime's background thread every
        // 100 ms (83 wake-ups in 301 messages), which must not count.
        let perBatch = woke.filter { $0.1 > messages * 2 / 5 }
        #expect(perBatch.count == 1, "threads (tid, wake-ups) in \(messages) messages: \(woke)")
        // The supervisor sleeps until a signal or its child's end (SIGCHLD),
        // not a few times a second: fewer wake-ups than a tenth of the messages.
        #expect(supervisorWoke < messages / 10, "the supervisor woke \(supervisorWoke) times in \(messages) messages")
    }

    /// The bridge reads the agent's shared-memory rings (docs/mqtt.md): two
    /// bridges on one agent, one of them told not to (`EDGE_AGENT_RINGS=0`,
    /// so it reads lines), each publishing every device-motion sample (50 Hz
    /// here) as JSON. The samples both published carry the same payload,
    /// byte for byte; the status says the first read them from a ring (its
    /// counters) and the second from lines.
    @Test func theBridgeOnRingsPublishesWhatItPublishesFromLines() throws {
        let rig = try Rig("rings")
        defer { rig.stop() }
        // The two bridges publish at QoS 0, and mosquitto drops QoS 0
        // messages for a subscriber with more than max_queued_messages (1000)
        // waiting ("Outgoing messages are being dropped for client …"):
        // a mosquitto_sub whose output the test reads slowly (under
        // ThreadSanitizer) lost one message of each bridge's. This test
        // compares what the bridges published, so the broker keeps them all.
        rig.broker = try Broker(directory: rig.directory, extraConfig: "allow_anonymous true\nmax_queued_messages 1000000")
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe(filters: ["edge/+/deviceMotion"])
        let streams = #"[ { stream: "deviceMotion", json_interval_s: 0.02, scalars: false } ]"#
        let ring = try rig.bridge(node: "ring", streams: streams, name: "ringbridge")
        let lines = try rig.bridge(node: "lines", streams: streams, name: "linebridge", environment: ["EDGE_AGENT_RINGS": "0"])
        func payloads(_ node: String) -> [UInt64: String] {
            var out: [UInt64: String] = [:]
            for m in sub.messages(on: "edge/\(node)/deviceMotion") {
                guard let r = m.payload.range(of: #""timestamp_ns":"#) else { continue }
                let digits = m.payload[r.upperBound...].prefix { $0.isNumber }
                if let t = UInt64(digits) { out[t] = m.payload }
            }
            return out
        }
        var common: [UInt64] = []
        #expect(waitUntil(60) {
            let a = payloads("ring"), b = payloads("lines")
            common = a.keys.filter { b[$0] != nil }.sorted()
            return common.count >= 100
        }, "\(rig.transcript)")
        let a = payloads("ring"), b = payloads("lines")
        let differing = common.filter { a[$0] != b[$0] }
        #expect(differing.isEmpty, "\(differing.count) of \(common.count) differ, e.g. \(differing.first.map { "\(a[$0]!) vs \(b[$0]!)" } ?? "")")
        // And the same samples: while both ran, neither published one the other did not.
        let window = common.first!...common.last!
        let onlyRing = a.keys.filter { window.contains($0) && b[$0] == nil }
        let onlyLines = b.keys.filter { window.contains($0) && a[$0] == nil }
        #expect(onlyRing.isEmpty && onlyLines.isEmpty,
                """
                only via the ring: \(onlyRing.sorted()), only via lines: \(onlyLines.sorted()); \
                queues: \((ring.status()?["queue"]).map { "\($0)" } ?? "?") / \((lines.status()?["queue"]).map { "\($0)" } ?? "?"); \
                broker: \(rig.broker.log.split(separator: "\n").filter { $0.contains("dropp") })
                """)

        let rs = try #require(ring.status()?["agent"] as? [String: Any])
        let ls = try #require(lines.status()?["agent"] as? [String: Any])
        #expect((rs["ring_samples"] as? Int ?? 0) >= common.count, "\(rs)")
        #expect(rs["ring_streams"] as? [String] == ["deviceMotion"] && rs["ring_fallbacks"] as? Int == 0, "\(rs)")
        #expect(ls["ring_samples"] as? Int == 0 && (ls["line_samples"] as? Int ?? 0) >= common.count, "\(ls)")
        #expect(ls["ring_streams"] as? [String] == [], "\(ls)")
    }

    /// The bridge process reads its configuration in a child process: the
    /// JSON5 decoder (FoundationEssentials' JSONDecoder) never runs in it.
    /// With the shared Swift libraries (the tests' build) the kernel's
    /// count of libFoundationEssentials.so's resident pages in the running
    /// bridge process (/proc/PID/smaps) is compared with the same count in
    /// an `edge-mqtt status` that has only started and connected (it reads
    /// no file): what loading the library costs. Decoding the file in the
    /// process adds 1.4 MB there (main's release build: 2948 kB against
    /// 1572 kB); the rest of the bridge's work about 0.5 MB (release) or
    /// nothing (debug). (A --static-swift-stdlib build maps no such
    /// library: the test then compares zeros.)
    @Test func theBridgeProcessKeepsNoJSON5DecoderResident() throws {
        let rig = try Rig("rss")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe(filters: ["edge/n1/#"])
        let bridge = try rig.bridge()
        #expect(waitUntil(30) { sub.messages(on: "edge/n1/deviceMotion").count >= 3 }, "\(rig.transcript)")
        let supervisor = bridge.child.process.processIdentifier
        var worker: pid_t?
        _ = waitUntil(10) { worker = childProcesses(of: supervisor).first; return worker != nil }
        let pid = try #require(worker, "the supervisor's bridge process")
        let library = "/libFoundationEssentials.so"
        let inBridge = residentKilobytes(pid: pid, mappingSuffix: library)
        let inSupervisor = residentKilobytes(pid: supervisor, mappingSuffix: library)

        // The baseline: `status` waiting for a socket that never answers.
        let path = rig.directory + "/silent.sock"
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in raw.copyBytes(from: Array(path.utf8)) }
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(listener, 4) == 0, "listen on \(path)")
        let status = Child("status-baseline", executable: Paths.bridgeBinary, arguments: ["status", "--socket", path],
                           directory: rig.directory)
        try status.start()
        defer { status.stop() }
        // Readable: `status` has connected, and now only waits (3 s).
        var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        try #require(poll(&p, 1, 30_000) == 1, "edge-mqtt status connected")
        let baseline = residentKilobytes(pid: status.process.processIdentifier, mappingSuffix: library)
        let swiftCore = residentKilobytes(pid: status.process.processIdentifier, mappingSuffix: "/libswiftCore.so")
        #expect(swiftCore > 0 || !isSharedBuild, "the baseline's smaps were read (libswiftCore.so is resident in a shared build)")
        #expect(inBridge <= baseline + 900, "the bridge process holds \(inBridge) kB of \(library), a process that only loaded it \(baseline) kB")
        #expect(inSupervisor <= baseline + 900, "the supervisor holds \(inSupervisor) kB of \(library), a process that only loaded it \(baseline) kB")
    }

    /// A bridge whose user holds no entitlement says so and publishes only
    /// its `offline` status: no discovery, no data, no counters.
    @Test func anUnentitledBridgeSaysSoAndPublishesOnlyOffline() throws {
        let rig = try Rig("unent")
        defer { rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        // Someone else is entitled; this user (the test's) is not.
        rig.agent = try Agent(directory: rig.directory, clients: #"[ { uid: 4242, entitlements: ["motion", "altitude"] } ]"#)
        try rig.agent.start()
        let sub = try rig.subscribe()
        let bridge = try rig.bridge()
        #expect(bridge.waitForLog("not entitled: uid"), "\(bridge.log)")
        #expect(bridge.log.contains("Publishing only the offline status"))
        #expect(waitUntil(10) { sub.last(on: "edge/n1/status")?.payload == "offline" }, "\(rig.transcript)")
        let s = try #require(bridge.status())
        let streams = (s["streams"] as? [[String: Any]]) ?? []
        #expect(!streams.isEmpty && streams.allSatisfy { ($0["grant"] as? String) == "refused" }, "\(streams)")
        #expect(s.string("broker", "state") == "connected")
        let published = sub.messages.filter { !$0.topic.hasPrefix("edge-test/") }.map(\.topic)
        #expect(Set(published) == ["edge/n1/status"], "\(published)")
        // Only ever `offline`: never an `online` between the connection and the refusal.
        let statuses = sub.messages(on: "edge/n1/status")
        #expect(!statuses.isEmpty && statuses.allSatisfy { $0.payload == "offline" && $0.retained }, "\(statuses)")
    }

    /// A hung agent (SIGSTOP: its socket stays open, nothing arrives) is
    /// not `online`: every stream stalls after max(3 intervals, 2 s), the
    /// retained status says `offline`, `status` names the stalled streams
    /// with the time of their last sample and the log says so once; a
    /// devices request into the silence goes unanswered (unresponsive); on
    /// SIGCONT samples return, `online` again, data resumes, "resumed".
    /// About 8 s (2 s to stall, 6 s to find the agent unresponsive).
    @Test func aStalledAgentIsNotOnline() throws {
        let rig = try Rig("stall")
        defer { rig.agent?.child.signal(SIGCONT); rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe()
        let bridge = try rig.bridge()
        // Both streams deliver (each is watched from its first sample).
        #expect(waitUntil(20) {
            sub.last(on: "edge/n1/status")?.payload == "online" && sub.last(on: "edge/n1/deviceMotion") != nil
                && sub.last(on: "edge/n1/altitude") != nil
        }, "\(rig.transcript)")

        rig.agent.child.signal(SIGSTOP)
        let offline = waitUntil(15) { sub.last(on: "edge/n1/status").map { $0.retained && $0.payload == "offline" } == true }
        #expect(offline, "a stalled agent must not stay online: \(sub.messages(on: "edge/n1/status"))\n\(bridge.log)")
        let s = try #require(bridge.status())
        #expect(s[path: "agent", "connected"] as? Bool == true, "the socket is still open: \(s)")
        #expect(s[path: "agent", "stalled"] as? Bool == true && s.string("status") == "offline", "\(s)")
        let streams = (s["streams"] as? [[String: Any]]) ?? []
        #expect(streams.count == 2 && streams.allSatisfy {
            $0["stalled"] as? Bool == true && ($0["stalled_since"] as? String)?.hasSuffix("Z") == true
                && (($0["last_sample_age_s"] as? NSNumber)?.doubleValue ?? 0) >= 2
        }, "\(streams)")
        let text = try runTool(Paths.bridgeBinary, ["status", "--socket", bridge.statusSocket], in: rig.directory)
        #expect(text.out.contains("deviceMotion stalled since ") && text.out.contains("altitude stalled since ")
                && text.out.contains("STALLED"), "\(text.out)")
        #expect(bridge.log.components(separatedBy: "deviceMotion stalled: no sample").count == 2, "logged once: \(bridge.log)")
        #expect(bridge.log.contains("no subscribed stream delivers"))
        // Silent for 3 s: a devices request, unanswered for 3 s more: unresponsive.
        #expect(waitUntil(15) { bridge.status()?[path: "agent", "unresponsive"] as? Bool == true },
                "\(String(describing: bridge.status()))\n\(bridge.log)")
        #expect(bridge.log.contains("did not answer a devices request within 3.0 s: it is hung"), "\(bridge.log)")
        let hung = try runTool(Paths.bridgeBinary, ["status", "--socket", bridge.statusSocket], in: rig.directory)
        #expect(hung.out.contains("UNRESPONSIVE"), "\(hung.out)")

        let before = sub.messages(on: "edge/n1/deviceMotion").count
        rig.agent.child.signal(SIGCONT)
        #expect(waitUntil(15) {
            sub.last(on: "edge/n1/status")?.payload == "online" && sub.messages(on: "edge/n1/deviceMotion").count > before + 3
        }, "\(sub.messages.suffix(5))\n\(bridge.log)")
        #expect(bridge.log.contains("deviceMotion resumed after") && bridge.log.contains("the node resumed: status online again"), "\(bridge.log)")
        let back = try #require(bridge.status())
        #expect(back[path: "agent", "stalled"] as? Bool == false && back[path: "agent", "unresponsive"] as? Bool == false
                && back.string("status") == "online")
        #expect(bridge.log.contains("the agent answers again"), "\(bridge.log)")
        #expect(back.int("agent", "connections") == 1, "the same connection throughout")
    }

    /// The Last Will: a bridge killed (SIGKILL: no clean stop, the kernel
    /// closes its socket) or frozen (SIGSTOP: the connection stays open and
    /// silent, as when its network goes) is shown `offline`, retained, by
    /// the broker itself. Killed: at once (bounded at 1.5 × keepalive, 5 s
    /// being libmosquitto's least). Frozen: when the broker finds keepalive
    /// exceeded (MQTT 5 §3.1.2.10: 1.5 × keepalive; see the bound below).
    /// About 12 s, the frozen bridge's wait.
    @Test func aKilledOrFrozenBridgeLeavesItsLastWill() throws {
        let rig = try Rig("will")
        var frozenPid: pid_t = 0
        defer { if frozenPid > 0 { kill(frozenPid, SIGCONT) }; rig.stop() }
        rig.broker = try Broker(directory: rig.directory)
        try rig.broker.start()
        rig.agent = try Agent(directory: rig.directory)
        try rig.agent.start()
        let sub = try rig.subscribe()
        let killed = try rig.bridge(node: "k1", name: "killed")
        let frozen = try rig.bridge(node: "f1", name: "frozen")
        #expect(waitUntil(20) { sub.last(on: "edge/k1/status")?.payload == "online" && sub.last(on: "edge/f1/status")?.payload == "online" },
                "\(rig.transcript)")

        // The bridge process holding the connection is the supervisor's
        // child (Supervisor.swift): freeze that one; kill the supervisor
        // (the child then exits without a clean DISCONNECT).
        frozenPid = pid_t((frozen.status()?["pid"] as? NSNumber)?.int32Value ?? 0)
        #expect(frozenPid > 0 && frozenPid != frozen.child.process.processIdentifier)
        let start = nowNs()
        if frozenPid > 0 { kill(frozenPid, SIGSTOP) }
        killed.child.signal(SIGKILL)
        #expect(killed.child.waitForExit(5) != nil)
        let keepaliveS = 5.0
        #expect(waitUntil(1.5 * keepaliveS) { sub.last(on: "edge/k1/status").map { $0.retained && $0.payload == "offline" } == true },
                "the will of a killed bridge: \(sub.messages(on: "edge/k1/status"))\n\(rig.broker.log)")
        let killedAfterS = Double(nowNs() - start) / 1e9
        // MQTT says 1.5 × keepalive; mosquitto 2.0.11 (Debian 12) takes
        // about 2.4 × (12 s for 5 s, measured: its keepalive check is
        // coarse), so the bound here is 3 × keepalive.
        #expect(waitUntil(3 * keepaliveS - killedAfterS) {
            sub.last(on: "edge/f1/status").map { $0.retained && $0.payload == "offline" } == true
        }, "the will of a frozen bridge: \(sub.messages(on: "edge/f1/status"))\n\(rig.broker.log)")
        #expect(!killed.log.contains("stopping: published"), "no clean stop: it was the will")

        let late = try rig.subscribe("late", filters: ["edge/+/status"])
        #expect(waitUntil(30) {
            ["edge/k1/status", "edge/f1/status"].allSatisfy { late.last(on: $0).map { $0.retained && $0.payload == "offline" } == true }
        }, "a subscriber arriving later is told offline (retained): \(late.messages)")
    }
}

/// The processes whose parent is `pid` (/proc/N/stat, field 4).
private func childProcesses(of pid: pid_t) -> [pid_t] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return names.compactMap { name -> pid_t? in
        guard let child = pid_t(name), let text = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let rest = text[text.index(after: close)...].split(separator: " ")
        return rest.count > 1 && pid_t(rest[1]) == pid ? child : nil
    }.sorted()
}

/// Each thread's voluntary context switches (/proc/PID/task/TID/status).
private func voluntarySwitchesPerThread(_ pid: pid_t) -> [String: Int] {
    var out: [String: Int] = [:]
    for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/status", encoding: .utf8) else { continue }
        for line in text.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            out[tid] = Int(line.split(separator: "\t").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "")
        }
    }
    return out
}

/// Whether the bridge under test links the Swift libraries dynamically.
private var isSharedBuild: Bool {
    (try? String(contentsOfFile: Paths.bridgeBinary, encoding: .isoLatin1))?.contains("libswiftCore.so") ?? true
}

/// Resident kB of the mappings of `pid` whose file ends in `suffix` (/proc/PID/smaps).
private func residentKilobytes(pid: pid_t, mappingSuffix suffix: String) -> Int {
    // read(2) to the end: /proc files say size 0, and smaps is many pages.
    let fd = open("/proc/\(pid)/smaps", O_RDONLY)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    let text = String(decoding: bytes, as: UTF8.self)
    var inside = false
    var total = 0
    for line in text.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        if let first = fields.first, first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
            inside = fields.count >= 6 && fields.last!.hasSuffix(suffix)
        } else if inside, line.hasPrefix("Rss:"), fields.count >= 2, let kB = Int(fields[1]) {
            total += kB
        }
    }
    return total
}
