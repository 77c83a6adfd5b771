// The bridge's configuration file (`config/edge-mqtt.json5`, installed as
// /etc/edge-mqtt/edge-mqtt.json5). Read with EdgeConfig's JSON5 loader, so
// its errors have the agent's quality: file, key path, line and column, the
// line with a caret, did-you-mean for unknown keys, ranges for every number
// (NaN and ±Infinity are never in range), duplicate keys refused.
// Every key, its range and default: docs/mqtt.md, "Configuration".
import EdgeClient
import EdgeConfigFiles
import EdgeProtocol

/// `edge-mqtt.json5`.
public struct BridgeConfig: Decodable, Sendable, Equatable {
    /// `<node>` of every topic and the Home Assistant device's identifier;
    /// nil: the host name (``NodeName/fromHostName(_:)``).
    public var node: String?
    public var agent: AgentSection
    public var broker: BrokerSection
    public var topics: TopicsSection
    public var qos: QoSSection
    public var queue: QueueSection
    /// Streams the bridge publishes, in the order written. A stream not
    /// listed, or listed with `enabled: false`, is disabled: its Home
    /// Assistant entities are removed (empty retained discovery payloads).
    public var streams: [StreamSettings]
    /// The bridge's own status socket (`edge-mqtt status` reads it).
    public var statusSocket: String

    /// The streams published when the file has no `streams` key. Humidity
    /// is published where a device feeds it (a BME280); on other boards its
    /// Home Assistant entity is removed.
    public static let defaultStreams: [StreamSettings] = [
        StreamSettings(stream: .deviceMotion),
        StreamSettings(stream: .altitude),
        StreamSettings(stream: .humidity),
    ]
    public static let defaultStatusSocket = "/run/edge-mqtt/status.sock"

    public init(node: String? = nil, agent: AgentSection = AgentSection(), broker: BrokerSection = BrokerSection(),
                topics: TopicsSection = TopicsSection(), qos: QoSSection = QoSSection(),
                queue: QueueSection = QueueSection(), streams: [StreamSettings] = BridgeConfig.defaultStreams,
                statusSocket: String = BridgeConfig.defaultStatusSocket) {
        self.node = node; self.agent = agent; self.broker = broker; self.topics = topics; self.qos = qos
        self.queue = queue; self.streams = streams; self.statusSocket = statusSocket
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case node, agent, broker, topics, qos, queue, streams, statusSocket = "status_socket"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        node = try c.decodeIfPresent(String.self, forKey: .node)
        if let n = node, let problem = NodeName.problem(with: n) {
            throw DecodingError.dataCorruptedError(forKey: .node, in: c, debugDescription:
                "node must be 1 to \(NodeName.maxLength) letters, digits, '_' or '-' (it is a topic level and a Home Assistant id), got \"\(n)\": \(problem); leave it out for the host name")
        }
        agent = try c.decodeIfPresent(AgentSection.self, forKey: .agent) ?? AgentSection()
        broker = try c.decodeIfPresent(BrokerSection.self, forKey: .broker) ?? BrokerSection()
        topics = try c.decodeIfPresent(TopicsSection.self, forKey: .topics) ?? TopicsSection()
        qos = try c.decodeIfPresent(QoSSection.self, forKey: .qos) ?? QoSSection()
        queue = try c.decodeIfPresent(QueueSection.self, forKey: .queue) ?? QueueSection()
        if c.contains(.streams) {
            streams = try c.decode([StreamSettings].self, forKey: .streams)
            var seen: [StreamName: Int] = [:]
            for (i, s) in streams.enumerated() {
                if let first = seen[s.stream] {
                    throw DecodingError.dataCorrupted(DecodingError.Context(
                        codingPath: c.codingPath + [CodingKeys.streams, ListIndex(i), StreamSettings.CodingKeys.stream],
                        debugDescription: "\(s.stream.rawValue) is listed twice (first at streams[\(first)]); keep one entry per stream"))
                }
                seen[s.stream] = i
            }
        } else {
            streams = Self.defaultStreams
        }
        statusSocket = try c.decodePathIfPresent(.statusSocket, what: "a socket path") ?? Self.defaultStatusSocket
        if statusSocket.utf8.count > 107 {
            throw DecodingError.dataCorruptedError(forKey: .statusSocket, in: c, debugDescription:
                "status_socket must be at most 107 bytes (the limit of a Unix socket address), got \(statusSocket.utf8.count)")
        }
    }

    /// Reads `path` with EdgeConfig's loader. An error's excerpt (the line
    /// with a caret) is left out when that line sets a password, so a
    /// password written into the configuration by mistake is not printed.
    public static func load(from path: String) throws(ConfigError) -> BridgeConfig {
        do { return try ConfigLoader.load(BridgeConfig.self, from: path) } catch { throw scrubbed(error) }
    }

    /// `load(from:)` for text (tests, `check`).
    public static func decode(_ text: String, file: String) throws(ConfigError) -> BridgeConfig {
        do { return try ConfigLoader.decode(BridgeConfig.self, from: text, file: file) } catch { throw scrubbed(error) }
    }

    static func scrubbed(_ error: ConfigError) -> ConfigError {
        var e = error
        if let x = e.excerpt, x.contains("password"), !x.contains("password_file") || x.contains("password:") || x.contains("\"password\"") {
            e.excerpt = "(the line is not shown: it sets a password)"
        }
        return e
    }

    /// The settings of `stream`, nil when it is not listed.
    public func settings(of stream: StreamName) -> StreamSettings? { streams.first { $0.stream == stream } }

    /// The streams that are listed and enabled, in order.
    public var enabledStreams: [StreamSettings] { streams.filter(\.enabled) }
}

/// A coding key for the element of a list, spelled as Foundation spells it.
struct ListIndex: CodingKey {
    var intValue: Int?
    var stringValue: String
    init(_ i: Int) { intValue = i; stringValue = "Index \(i)" }
    init(intValue: Int) { self.init(intValue) }
    init?(stringValue: String) { return nil }
}

/// `agent`: where the agent's socket is.
public struct AgentSection: Decodable, Sendable, Equatable {
    /// The agent's client socket; relative to the configuration file's
    /// directory. When the file does not name one, `edge-mqtt` finds it as
    /// every client does (`AgentSocketLocator`: $EDGE_AGENT_SOCKET, the
    /// socket of the agent configuration `edge-agent run` would read, else
    /// /run/edge-agent/agent.sock).
    public var socketPath: String = EdgeProtocolInfo.defaultSocketPath
    /// Whether the file named `socket_path`.
    public var socketPathGiven = false
    public init(socketPath: String = EdgeProtocolInfo.defaultSocketPath) { self.socketPath = socketPath }
    enum CodingKeys: String, CodingKey, CaseIterable { case socketPath = "socket_path" }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let given = try c.decodePathIfPresent(.socketPath, what: "a socket path")
        socketPathGiven = given != nil
        socketPath = given ?? EdgeProtocolInfo.defaultSocketPath
        if socketPath.utf8.count > 107 {
            throw DecodingError.dataCorruptedError(forKey: .socketPath, in: c, debugDescription:
                "socket_path must be at most 107 bytes (the limit of a Unix socket address), got \(socketPath.utf8.count)")
        }
    }
}

/// The MQTT protocol version spoken to the broker.
public enum MQTTProtocolVersion: String, Sendable, Equatable, CaseIterable {
    case v311 = "3.1.1"
    case v5 = "5"
}

/// `broker`: where to publish and how.
public struct BrokerSection: Decodable, Sendable, Equatable {
    /// Host name or address. Default localhost.
    public var host: String = "localhost"
    /// TCP port. Default 1883, or 8883 with `tls`.
    public var port: Int = 1883
    /// "3.1.1" (default) or "5". 3.1.1 because Debian 12's libmosquitto
    /// 2.0.11 aborts the process on some malformed MQTT 5 packets (an
    /// unknown property identifier, lib/property_mosq.c); 3.1.1 never
    /// parses properties (docs/mqtt.md, "Malformed packets").
    public var protocolVersion: MQTTProtocolVersion = .v311
    /// Seconds between keepalive pings when idle (libmosquitto: at least 5).
    /// Default 30.
    public var keepaliveS: Int = 30
    /// The MQTT client identifier; default `edge-mqtt-<node>`. Two clients
    /// with one identifier take the connection from each other.
    public var clientID: String?
    /// User name for the broker (not a secret); nil: anonymous.
    public var username: String?
    /// A file holding the password (its first line), readable only by the
    /// service: a file other users may read is refused. Relative to the
    /// configuration file's directory.
    public var passwordFile: String?
    public var tls: TLSSection?
    /// First delay before reconnecting, seconds; doubles after each failure
    /// up to `reconnect_max_s`. Default 0.5.
    public var reconnectInitialS: Double = 0.5
    /// Longest delay between reconnection attempts, seconds. Default 30.
    public var reconnectMaxS: Double = 30
    /// A connection not accepted (CONNACK) within this many seconds is
    /// dropped and tried again. Default 10.
    public var connectTimeoutS: Double = 10

    public init(host: String = "localhost", port: Int = 1883) { self.host = host; self.port = port }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case host, port, protocolVersion = "protocol", keepaliveS = "keepalive_s", clientID = "client_id"
        case username, passwordFile = "password_file", tls
        case reconnectInitialS = "reconnect_initial_s", reconnectMaxS = "reconnect_max_s"
        case connectTimeoutS = "connect_timeout_s"
        // Never accepted: the password belongs in password_file.
        static let refused = ["password"]
    }

    public init(from decoder: any Decoder) throws {
        let allowed = CodingKeys.allCases.map(\.rawValue)
        let keys = try decoder.container(keyedBy: CodingKeys.self)
        // A password in the configuration would be readable by anyone who may
        // read the configuration (and end up in backups and bug reports).
        if let any = try? decoder.container(keyedBy: AnyConfigKey.self),
           let key = any.allKeys.first(where: { CodingKeys.refused.contains($0.stringValue) }) {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: keys.codingPath + [key], debugDescription:
                "a password is never read from the configuration: put it in a file only the service may read and name that file in password_file (e.g. install -m 0600 -o edge-mqtt /dev/stdin /etc/edge-mqtt/password)"))
        }
        try decoder.rejectUnknownKeys(allowed: allowed)
        let c = keys
        host = try c.decodePathIfPresent(.host, what: "a host name or address") ?? "localhost"
        tls = try c.decodeIfPresent(TLSSection.self, forKey: .tls)
        port = try c.decodeWholeNumber(.port, default: tls == nil ? 1883 : 8883, in: 1...65535, unit: "TCP port")
        if let v = try c.decodeIfPresent(String.self, forKey: .protocolVersion) {
            guard let p = MQTTProtocolVersion(rawValue: v) else {
                let names = MQTTProtocolVersion.allCases.map(\.rawValue)
                let hint = closest(v, in: names).map { " (did you mean \"\($0)\"?)" } ?? ""
                throw DecodingError.dataCorruptedError(forKey: .protocolVersion, in: c, debugDescription:
                    "protocol must be \"5\" or \"3.1.1\" (a string), got \"\(v)\"\(hint)")
            }
            protocolVersion = p
        }
        keepaliveS = try c.decodeWholeNumber(.keepaliveS, default: 30, in: 5...65535, unit: "seconds")
        clientID = try c.decodeIfPresent(String.self, forKey: .clientID)
        if let id = clientID, id.isEmpty || id.utf8.count > 65535 || id.utf8.contains(0) {
            throw DecodingError.dataCorruptedError(forKey: .clientID, in: c, debugDescription:
                "client_id must be a non-empty string without NUL characters; leave it out for edge-mqtt-<node>")
        }
        username = try c.decodeIfPresent(String.self, forKey: .username)
        if let u = username, u.isEmpty || u.utf8.contains(0) {
            throw DecodingError.dataCorruptedError(forKey: .username, in: c, debugDescription:
                "username must be a non-empty string; leave it out to connect anonymously")
        }
        passwordFile = try c.decodePathIfPresent(.passwordFile, what: "a file path")
        if passwordFile != nil && username == nil {
            throw DecodingError.dataCorruptedError(forKey: .passwordFile, in: c, debugDescription:
                "password_file needs a username (MQTT sends a password only with a user name)")
        }
        reconnectInitialS = try c.decodeNumber(.reconnectInitialS, default: 0.5, in: 0.05...60, unit: "seconds")
        reconnectMaxS = try c.decodeNumber(.reconnectMaxS, default: 30, in: 0.1...3600, unit: "seconds")
        if reconnectMaxS < reconnectInitialS {
            throw DecodingError.dataCorruptedError(forKey: .reconnectMaxS, in: c, debugDescription:
                "reconnect_max_s (\(reconnectMaxS)) must not be below reconnect_initial_s (\(reconnectInitialS))")
        }
        connectTimeoutS = try c.decodeNumber(.connectTimeoutS, default: 10, in: 0.5...300, unit: "seconds")
    }
}

/// Any key, to look for refused ones.
struct AnyConfigKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

/// `broker.tls`: TLS to the broker. Present (even `{}`) means TLS on.
public struct TLSSection: Decodable, Sendable, Equatable {
    /// PEM file of the certificate authorities that sign the broker's
    /// certificate; nil: the system's (Debian: /etc/ssl/certs).
    public var caFile: String?
    /// Client certificate (PEM) for brokers that require one; with `key_file`.
    public var certFile: String?
    /// The client certificate's private key (PEM, unencrypted).
    public var keyFile: String?
    public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil) {
        self.caFile = caFile; self.certFile = certFile; self.keyFile = keyFile
    }
    enum CodingKeys: String, CodingKey, CaseIterable { case caFile = "ca_file", certFile = "cert_file", keyFile = "key_file" }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        caFile = try c.decodePathIfPresent(.caFile, what: "a PEM file path")
        certFile = try c.decodePathIfPresent(.certFile, what: "a PEM file path")
        keyFile = try c.decodePathIfPresent(.keyFile, what: "a PEM file path")
        if (certFile == nil) != (keyFile == nil) {
            throw DecodingError.dataCorruptedError(forKey: certFile == nil ? .keyFile : .certFile, in: c, debugDescription:
                "a client certificate needs both cert_file and key_file")
        }
    }
}

/// `topics`: where messages go.
public struct TopicsSection: Decodable, Sendable, Equatable {
    /// First level(s) of every topic the bridge publishes (`<prefix>/<node>/…`). Default "edge".
    public var prefix: String = "edge"
    /// Publish Home Assistant discovery. Default true.
    public var discovery: Bool = true
    /// Home Assistant's discovery prefix (its MQTT setting). Default "homeassistant".
    public var discoveryPrefix: String = "homeassistant"
    /// Scalar topics retained, so a dashboard shows the last value at once. Default false.
    public var retainScalars: Bool = false
    public init() {}
    enum CodingKeys: String, CodingKey, CaseIterable {
        case prefix, discovery, discoveryPrefix = "discovery_prefix", retainScalars = "retain_scalars"
    }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        prefix = try c.decodeIfPresent(String.self, forKey: .prefix) ?? "edge"
        if let problem = TopicName.problem(withPrefix: prefix) {
            throw DecodingError.dataCorruptedError(forKey: .prefix, in: c, debugDescription:
                "prefix must be one or more topic levels such as \"edge\" or \"site/boat\": \(problem)")
        }
        discovery = try c.decodeIfPresent(Bool.self, forKey: .discovery) ?? true
        discoveryPrefix = try c.decodeIfPresent(String.self, forKey: .discoveryPrefix) ?? "homeassistant"
        if let problem = TopicName.problem(withPrefix: discoveryPrefix) {
            throw DecodingError.dataCorruptedError(forKey: .discoveryPrefix, in: c, debugDescription:
                "discovery_prefix must be Home Assistant's discovery prefix (default \"homeassistant\"): \(problem)")
        }
        retainScalars = try c.decodeIfPresent(Bool.self, forKey: .retainScalars) ?? false
    }
}

/// The groups of topics, each with its own QoS (`qos` section).
public enum TopicGroup: String, Sendable, Hashable, CaseIterable {
    /// `<prefix>/<node>/<stream>`: the protocol's sample objects.
    case data
    /// `<prefix>/<node>/attitude/roll_deg` …: one number per message.
    case scalars
    /// `status`, `devices`, `calibration`, `bridge`: retained state.
    case state
    /// `<discovery_prefix>/sensor/<node>/<entity>/config`: retained.
    case discovery
}

/// `qos`: the MQTT QoS of each topic group.
public struct QoSSection: Decodable, Sendable, Equatable {
    public var data = 0
    public var scalars = 0
    public var state = 1
    public var discovery = 1
    public init(data: Int = 0, scalars: Int = 0, state: Int = 1, discovery: Int = 1) {
        self.data = data; self.scalars = scalars; self.state = state; self.discovery = discovery
    }
    public subscript(group: TopicGroup) -> Int {
        switch group {
        case .data: return data
        case .scalars: return scalars
        case .state: return state
        case .discovery: return discovery
        }
    }
    enum CodingKeys: String, CodingKey, CaseIterable { case data, scalars, state, discovery }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        data = try c.decodeWholeNumber(.data, default: 0, in: 0...2, unit: "MQTT QoS")
        scalars = try c.decodeWholeNumber(.scalars, default: 0, in: 0...2, unit: "MQTT QoS")
        state = try c.decodeWholeNumber(.state, default: 1, in: 0...2, unit: "MQTT QoS")
        discovery = try c.decodeWholeNumber(.discovery, default: 1, in: 0...2, unit: "MQTT QoS")
    }
}

/// `queue`: between the agent's socket and the broker.
public struct QueueSection: Decodable, Sendable, Equatable {
    /// Messages held while the broker is slow or away; beyond, the oldest
    /// is dropped and counted. Default 1000.
    public var capacity = 1000
    /// QoS 1/2 messages sent and not yet acknowledged, at most. Default 32.
    public var maxInflight = 32
    public init(capacity: Int = 1000, maxInflight: Int = 32) { self.capacity = capacity; self.maxInflight = maxInflight }
    enum CodingKeys: String, CodingKey, CaseIterable { case capacity, maxInflight = "max_inflight" }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        capacity = try c.decodeWholeNumber(.capacity, default: 1000, in: 1...1_000_000, unit: "messages")
        maxInflight = try c.decodeWholeNumber(.maxInflight, default: 32, in: 1...65535, unit: "messages")
    }
}

/// One entry of `streams`.
public struct StreamSettings: Decodable, Sendable, Equatable {
    public var stream: StreamName
    /// false: listed but disabled (its Home Assistant entities are removed).
    public var enabled = true
    /// Publish the protocol's sample objects on `<prefix>/<node>/<stream>`.
    public var json = true
    /// Capture time between two JSON messages, seconds. Default 1.
    public var jsonIntervalS = 1.0
    /// Publish the stream's scalar topics (and their Home Assistant entities).
    public var scalars = true
    /// Capture time between two values of each scalar topic, seconds. Default 1.
    public var scalarsIntervalS = 1.0

    public init(stream: StreamName, enabled: Bool = true, json: Bool = true, jsonIntervalS: Double = 1,
                scalars: Bool = true, scalarsIntervalS: Double = 1) {
        self.stream = stream; self.enabled = enabled; self.json = json; self.jsonIntervalS = jsonIntervalS
        self.scalars = scalars; self.scalarsIntervalS = scalarsIntervalS
    }

    /// Streams that carry samples, the ones a bridge can publish.
    public static let publishable = StreamName.allCases.filter(\.carriesSamples)

    /// The interval the bridge subscribes at, ns: one that serves both the
    /// JSON and the scalar interval on an exact grid (EdgeClient's
    /// `wireInterval`: 0.1 s and 1 s → 0.1 s; 0.3 s and 0.5 s → 0.1 s), so
    /// each is published at its own rate.
    public var subscriptionIntervalNs: UInt64 {
        let hasScalars = scalars && !ScalarCatalog.entities(of: stream).isEmpty
        var wanted: [UInt64] = []
        if json { wanted.append(UInt64((jsonIntervalS * 1e9).rounded())) }
        if hasScalars { wanted.append(UInt64((scalarsIntervalS * 1e9).rounded())) }
        return wireInterval(for: wanted) ?? UInt64((jsonIntervalS * 1e9).rounded())
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case stream, enabled, json, jsonIntervalS = "json_interval_s", scalars, scalarsIntervalS = "scalars_interval_s"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let name = try c.decode(String.self, forKey: .stream)
        let names = Self.publishable.map(\.rawValue)
        guard let s = StreamName(rawValue: name), s.carriesSamples else {
            let hint = closest(name, in: names).map { " (did you mean '\($0)'?)" } ?? ""
            let why = name == StreamName.accessoryConnection.rawValue ? " (it carries no samples)" : ""
            throw DecodingError.dataCorruptedError(forKey: .stream, in: c, debugDescription:
                "unknown stream '\(name)'\(why)\(hint); streams: \(names.joined(separator: ", "))")
        }
        stream = s
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? true
        json = try c.decodeIfPresent(Bool.self, forKey: .json) ?? true
        // 10 ms: the agent's fastest streams run at 100-200 Hz; an MQTT message
        // per sample beyond that is a broker's load for no dashboard's gain.
        jsonIntervalS = try c.decodeNumber(.jsonIntervalS, default: 1, in: 0.01...3600, unit: "seconds of capture time")
        let entities = ScalarCatalog.entities(of: s)
        let asksScalars = (try c.decodeIfPresent(Bool.self, forKey: .scalars)) == true || c.contains(.scalarsIntervalS)
        if entities.isEmpty && asksScalars {
            let with = ScalarCatalog.streamsWithScalars.map(\.rawValue).joined(separator: ", ")
            throw DecodingError.dataCorruptedError(forKey: c.contains(.scalars) ? .scalars : .scalarsIntervalS, in: c,
                debugDescription: "\(s.rawValue) has no scalar topics (\(with) have); remove the key")
        }
        scalars = try c.decodeIfPresent(Bool.self, forKey: .scalars) ?? !entities.isEmpty
        scalarsIntervalS = try c.decodeNumber(.scalarsIntervalS, default: 1, in: 0.01...3600, unit: "seconds of capture time")
        if !json && !scalars {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: c.codingPath, debugDescription:
                "\(s.rawValue) publishes nothing with json: false and scalars: false; write enabled: false to disable it"))
        }
    }
}
