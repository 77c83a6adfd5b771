import Testing
import Foundation
import EdgeConfig
import EdgeProtocol
@testable import EdgeMQTT

/// The bridge's JSON5 file, read with the agent's loader: file, key path,
/// line, did-you-mean, ranges (NaN, Infinity), duplicates.
@Suite struct ConfigTests {
    func load(_ text: String) throws(ConfigError) -> BridgeConfig {
        try BridgeConfig.decode(text, file: "edge-mqtt.json5")
    }

    func error(_ text: String) -> ConfigError? {
        do { _ = try load(text); return nil } catch { return error }
    }

    @Test func anEmptyFileTakesEveryDefault() throws {
        let c = try load("{}")
        #expect(c.node == nil)
        #expect(c.agent.socketPath == "/run/edge-agent/agent.sock")
        #expect(c.broker.host == "localhost" && c.broker.port == 1883 && c.broker.protocolVersion == .v311)
        #expect(c.broker.keepaliveS == 30 && c.broker.reconnectMaxS == 30)
        #expect(c.topics.prefix == "edge" && c.topics.discoveryPrefix == "homeassistant" && c.topics.discovery)
        #expect(c.qos == QoSSection(data: 0, scalars: 0, state: 1, discovery: 1))
        #expect(c.queue.capacity == 1000)
        #expect(c.streams.map(\.stream) == [.deviceMotion, .altitude, .humidity])
        #expect(c.statusSocket == "/run/edge-mqtt/status.sock")
    }

    @Test func theRepositoryAndDeployConfigurationsLoad() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        for path in ["/config/edge-mqtt.json5", "/deploy/edge-mqtt.json5"] {
            let c = try BridgeConfig.load(from: root + path)
            #expect(!c.streams.isEmpty, "\(path)")
        }
    }

    @Test func tlsMovesTheDefaultPortTo8883() throws {
        #expect(try load("{ broker: { tls: {} } }").broker.port == 8883)
        #expect(try load("{ broker: { tls: { ca_file: 'ca.crt' }, port: 9000 } }").broker.port == 9000)
    }

    @Test func anUnknownKeySaysWhereAndWhatWasMeant() throws {
        let e = try #require(error("""
        {
          streams: [
            { stream: "deviceMotion", json_intervl_s: 0.1 },
          ],
        }
        """))
        #expect(e.keyPath == "streams[0].json_intervl_s")
        #expect(e.line == 3)
        #expect(e.description.contains("did you mean 'json_interval_s'?"), "\(e)")
    }

    @Test(arguments: ["NaN", "Infinity", "-Infinity", "0", "3601"])
    func intervalsOutsideTheirRangeAreRefused(_ value: String) throws {
        let e = try #require(error("{ streams: [ { stream: 'altitude', json_interval_s: \(value) } ] }"))
        #expect(e.keyPath == "streams[0].json_interval_s")
        #expect(e.description.contains("must be a number from 0.01 to 3600"), "\(e)")
        #expect(e.line == 1)
    }

    @Test func wholeNumbersMustBeWholeAndInRange() throws {
        let port = try #require(error("{ broker: { port: 65536 } }"))
        #expect(port.keyPath == "broker.port" && port.description.contains("from 1 to 65535"), "\(port)")
        let qos = try #require(error("{ qos: { data: 1.5 } }"))
        #expect(qos.keyPath == "qos.data" && qos.description.contains("whole number from 0 to 2"), "\(qos)")
        let keepalive = try #require(error("{ broker: { keepalive_s: 2 } }"))
        #expect(keepalive.description.contains("from 5 to 65535"), "\(keepalive)")
    }

    @Test func aDuplicateKeyIsRefused() throws {
        let e = try #require(error("{\n  broker: { host: 'a',\n    host: 'b' } }"))
        #expect(e.kind == .duplicateKey)
        #expect(e.line == 3)
    }

    @Test func aPasswordIsNeverTakenFromTheConfiguration() throws {
        let e = try #require(error("{ broker: { username: 'edge', password: 's3cret' } }"))
        #expect(e.keyPath == "broker.password")
        #expect(e.description.contains("password_file"))
        #expect(!e.description.contains("s3cret"), "the error must not repeat the password")
    }

    @Test func aPasswordFileNeedsAUserName() throws {
        let e = try #require(error("{ broker: { password_file: 'pw' } }"))
        #expect(e.keyPath == "broker.password_file" && e.description.contains("needs a username"), "\(e)")
    }

    @Test func theProtocolIsOneOfTwoAndATypoIsNamed() throws {
        #expect(try load("{ broker: { protocol: '3.1.1' } }").broker.protocolVersion == .v311)
        let e = try #require(error("{ broker: { protocol: '3.11' } }"))
        #expect(e.description.contains("did you mean \"3.1.1\"?"), "\(e)")
        let number = try #require(error("{ broker: { protocol: 5 } }"))
        #expect(number.keyPath == "broker.protocol", "\(number)")
    }

    @Test func streamsAreKnownOnceEachAndMustPublishSomething() throws {
        let unknown = try #require(error("{ streams: [ { stream: 'deviceMotoin' } ] }"))
        #expect(unknown.description.contains("did you mean 'deviceMotion'?"), "\(unknown)")
        let events = try #require(error("{ streams: [ { stream: 'accessoryConnection' } ] }"))
        #expect(events.description.contains("carries no samples"), "\(events)")
        let twice = try #require(error("{ streams: [ { stream: 'altitude' },\n { stream: 'altitude', json: false } ] }"))
        #expect(twice.keyPath == "streams[1].stream" && twice.line == 2, "\(twice)")
        let nothing = try #require(error("{ streams: [ { stream: 'altitude', json: false, scalars: false } ] }"))
        #expect(nothing.description.contains("enabled: false"), "\(nothing)")
        let noScalars = try #require(error("{ streams: [ { stream: 'gyroscope', scalars_interval_s: 1 } ] }"))
        #expect(noScalars.description.contains("has no scalar topics"), "\(noScalars)")
        // A stream without scalars defaults to JSON only.
        #expect(try load("{ streams: [ { stream: 'gyroscope' } ] }").streams[0].scalars == false)
    }

    @Test func nodesAndPrefixesAreTopicLevelsHomeAssistantAccepts() throws {
        let node = try #require(error("{ node: 'pi.local' }"))
        #expect(node.keyPath == "node" && node.description.contains("'.' is not allowed"), "\(node)")
        let prefix = try #require(error("{ topics: { prefix: 'edge/#' } }"))
        #expect(prefix.description.contains("wildcards"), "\(prefix)")
        let empty = try #require(error("{ topics: { prefix: 'a//b' } }"))
        #expect(empty.description.contains("empty level"), "\(empty)")
        #expect(try load("{ topics: { prefix: 'site/boat' } }").topics.prefix == "site/boat")
    }

    @Test func theSubscriptionServesBothIntervalsOnAnExactGrid() throws {
        let c = try load("""
            { streams: [ { stream: 'deviceMotion', json_interval_s: 0.1, scalars_interval_s: 1 },
                         { stream: 'altitude', json: false, scalars_interval_s: 2 },
                         { stream: 'absoluteAltitude', json_interval_s: 0.3, scalars_interval_s: 0.5 } ] }
            """)
        #expect(c.streams[0].subscriptionIntervalNs == 100_000_000)
        #expect(c.streams[1].subscriptionIntervalNs == 2_000_000_000)
        // 0.3 s from a 0.3 s grid would leave 0.5 s scalars at 0.6 s: 0.1 s serves both.
        #expect(c.streams[2].subscriptionIntervalNs == 100_000_000)
    }

    @Test func relativePathsAreTheConfigurationFilesNeighbours() throws {
        let dir = NSTemporaryDirectory() + "edge-mqtt-paths-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "{ node: 'n1', agent: { socket_path: 'agent.sock' }, status_socket: 'status.sock', broker: { tls: { ca_file: 'ca.pem' } } }"
            .write(toFile: dir + "/b.json5", atomically: true, encoding: .utf8)
        let r = try BridgeSetup.resolve(configPath: dir + "/b.json5")
        #expect(r.agentSocket == dir + "/agent.sock")
        #expect(r.statusSocket == dir + "/status.sock")
        #expect(r.broker.tls?.caFile == dir + "/ca.pem")
        #expect(r.broker.clientID == "edge-mqtt-n1")
        let o = try BridgeSetup.resolve(configPath: dir + "/b.json5", overrides: BridgeOverrides(node: "n2"))
        #expect(o.node == "n2" && o.broker.clientID == "edge-mqtt-n2")
    }

    /// What `run` reads in a child process (BridgeSetup.resolveInChild)
    /// comes back through the wire form whole: every key of the file set
    /// away from its default, and the repository's files, resolved by the
    /// JSON5 loader, then written and read back with the project's own JSON
    /// writer and parser (fork is exercised by every test that runs
    /// `edge-mqtt run`; a test process has threads, so it does not fork here).
    @Test func theResolvedConfigurationSurvivesTheWireForm() throws {
        let dir = NSTemporaryDirectory() + "edge-mqtt-wire-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let full = dir + "/full.json5"
        try """
        { node: "boat-7", agent: { socket_path: "agent.sock" },
          broker: { host: "::1", port: 8884, protocol: "5", keepalive_s: 17, client_id: "cid", username: "u",
                    password_file: "pw", tls: { ca_file: "ca.pem", cert_file: "c.pem", key_file: "k.pem" },
                    reconnect_initial_s: 0.25, reconnect_max_s: 7.5, connect_timeout_s: 3.3 },
          topics: { prefix: "site/boat", discovery: false, discovery_prefix: "ha", retain_scalars: true },
          qos: { data: 1, scalars: 2, state: 0, discovery: 2 },
          queue: { capacity: 77, max_inflight: 5 },
          streams: [ { stream: "altitude", enabled: false, json: false, json_interval_s: 0.3, scalars_interval_s: 0.7 },
                     { stream: "deviceMotion", json_interval_s: 0.01, scalars_interval_s: 2 } ],
          status_socket: "status.sock" }
        """.write(toFile: full, atomically: true, encoding: .utf8)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        for path in [full, root + "/config/edge-mqtt.json5", root + "/deploy/edge-mqtt.json5"] {
            let direct = try BridgeSetup.resolve(configPath: path, overrides: BridgeOverrides(agentSocket: path == full ? nil : dir + "/a.sock"),
                                                 readPassword: false)
            var w = JSONWriter()
            direct.encode(into: &w)
            let back = try ResolvedBridge(wire: try JSONValue.parse(w.bytes))
            #expect(back.config == direct.config, "\(path)")
            #expect(back.node == direct.node && back.nodeFromHostName == direct.nodeFromHostName)
            #expect(back.configPath == direct.configPath && back.configSource == direct.configSource
                    && back.agentSocketSource == direct.agentSocketSource)
            #expect(back.agentSocket == direct.agentSocket && back.statusSocket == direct.statusSocket)
            let (a, b) = (back.broker, direct.broker)
            #expect(a.host == b.host && a.port == b.port && a.protocolVersion == b.protocolVersion && a.keepaliveS == b.keepaliveS
                    && a.clientID == b.clientID && a.username == b.username && a.tls == b.tls && a.connectTimeoutS == b.connectTimeoutS,
                    "\(path)")
        }
        // The fully set file really is away from the defaults, key by key.
        let c = try BridgeSetup.resolve(configPath: full, readPassword: false).config
        #expect(c.broker.tls?.keyFile == "k.pem" && c.broker.reconnectInitialS == 0.25 && c.qos.scalars == 2 && c.queue.maxInflight == 5)
        #expect(c.streams.first?.enabled == false && c.topics.retainScalars && c.agent.socketPathGiven)
        // A wire form that lacks a member is refused, not read as defaults.
        var w = JSONWriter()
        w.beginObject(); w.key("node"); w.string("x"); w.endObject()
        #expect(throws: SetupFailure.self) { try ResolvedBridge(wire: try JSONValue.parse(w.bytes)) }
    }
}
