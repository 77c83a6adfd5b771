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
}
