#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeProtocol
import EdgeLocations

// The configuration read in a child process (issue 22).
//
// Reading `edge-mqtt.json5` runs FoundationEssentials' JSON5 decoder and
// the locators: megabytes of code that a long-running process keeps
// resident once it has run them (RSS counts every page touched). So the
// daemon's two processes (the supervisor and the bridge process) fork a
// child that reads and checks the file and writes the result back over a
// pipe as plain JSON in the project's own writer; the parent reads it with
// the project's own parser (EdgeProtocol's JSONValue, which the bridge
// uses for the agent's lines anyway) and reads the password file itself.
// The child's pages go with it: fork copies no page table entries of
// file-backed code, and the child's touches map nothing into its parent.

extension BridgeSetup {
    /// ``resolve(config:overrides:readPassword:)`` run in a forked child;
    /// the same result, or the same ``SetupFailure``. Call while the
    /// process has one thread (fork copies only the calling thread).
    public static func resolveInChild(config explicit: String?, overrides: BridgeOverrides = BridgeOverrides(),
                                      readPassword: Bool = true) throws(SetupFailure) -> ResolvedBridge {
        let bytes = try inChild {
            var w = JSONWriter(capacity: 2048)
            do throws(SetupFailure) {
                let r = try resolve(config: explicit, overrides: overrides, readPassword: false)
                r.encode(into: &w)
            } catch {
                w.beginObject(); w.key("failure"); w.string(error.description); w.endObject()
            }
            return w.bytes
        }
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw SetupFailure("the process that reads the configuration answered no JSON (\(error)); run `edge-mqtt check` to see the configuration's problem")
        }
        if case .string(let text)? = value["failure"] { throw SetupFailure(text) }
        var r = try ResolvedBridge(wire: value)
        if readPassword, case .string(let file)? = value["password_file"] {
            do { r.broker.password = try BrokerPassword(readingFile: file) } catch {
                throw SetupFailure("\(r.configPath): broker.password_file: \(error)")
            }
        }
        return r
    }

    /// Runs `body` in a forked child and returns what it returned.
    static func inChild(_ body: () -> [UInt8]) throws(SetupFailure) -> [UInt8] {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SetupFailure("pipe: \(String(cString: strerror(errno)))") }
        let pid = fork()
        if pid == 0 {
            close(fds[0])
            let out = body()
            var off = 0
            while off < out.count {
                let n = out.withUnsafeBytes { write(fds[1], $0.baseAddress! + off, $0.count - off) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { _exit(1) }
                off += n
            }
            _exit(0)
        }
        close(fds[1])
        defer { close(fds[0]) }
        guard pid > 0 else { throw SetupFailure("fork: \(String(cString: strerror(errno)))") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            throw SetupFailure("the process that reads the configuration ended with status \(status) before answering")
        }
        return bytes
    }
}

// MARK: - the wire form (plain JSON; keys as in the configuration file)

extension ResolvedBridge {
    /// Everything but the password (its file's path instead).
    func encode(into w: inout JSONWriter) {
        let c = config
        w.beginObject()
        w.key("config_path"); w.string(configPath)
        w.key("config_source"); w.string(configSource)
        w.key("agent_socket_source"); w.string(agentSocketSource)
        w.key("node"); w.string(node)
        w.key("node_from_host_name"); w.bool(nodeFromHostName)
        w.key("agent_socket"); w.string(agentSocket)
        w.key("status_socket"); w.string(statusSocket)
        if let f = c.broker.passwordFile { w.key("password_file"); w.string(BoardLocator.resolve(f, nextTo: configPath)) }
        w.key("broker"); w.beginObject()
        w.key("host"); w.string(broker.host)
        w.key("port"); w.int(broker.port)
        w.key("protocol"); w.string(broker.protocolVersion.rawValue)
        w.key("keepalive_s"); w.int(broker.keepaliveS)
        w.key("client_id"); w.string(broker.clientID)
        if let u = broker.username { w.key("username"); w.string(u) }
        if let t = broker.tls { w.key("tls"); Self.encode(t, into: &w) }
        w.key("connect_timeout_s"); w.double(broker.connectTimeoutS)
        w.endObject()
        w.key("config"); w.beginObject()
        if let n = c.node { w.key("node"); w.string(n) }
        w.key("agent"); w.beginObject()
        w.key("socket_path"); w.string(c.agent.socketPath)
        w.key("socket_path_given"); w.bool(c.agent.socketPathGiven)
        w.endObject()
        let b = c.broker
        w.key("broker"); w.beginObject()
        w.key("host"); w.string(b.host)
        w.key("port"); w.int(b.port)
        w.key("protocol"); w.string(b.protocolVersion.rawValue)
        w.key("keepalive_s"); w.int(b.keepaliveS)
        if let v = b.clientID { w.key("client_id"); w.string(v) }
        if let v = b.username { w.key("username"); w.string(v) }
        if let v = b.passwordFile { w.key("password_file"); w.string(v) }
        if let t = b.tls { w.key("tls"); Self.encode(t, into: &w) }
        w.key("reconnect_initial_s"); w.double(b.reconnectInitialS)
        w.key("reconnect_max_s"); w.double(b.reconnectMaxS)
        w.key("connect_timeout_s"); w.double(b.connectTimeoutS)
        w.endObject()
        w.key("topics"); w.beginObject()
        w.key("prefix"); w.string(c.topics.prefix)
        w.key("discovery"); w.bool(c.topics.discovery)
        w.key("discovery_prefix"); w.string(c.topics.discoveryPrefix)
        w.key("retain_scalars"); w.bool(c.topics.retainScalars)
        w.endObject()
        w.key("qos"); w.beginObject()
        w.key("data"); w.int(c.qos.data)
        w.key("scalars"); w.int(c.qos.scalars)
        w.key("state"); w.int(c.qos.state)
        w.key("discovery"); w.int(c.qos.discovery)
        w.endObject()
        w.key("queue"); w.beginObject()
        w.key("capacity"); w.int(c.queue.capacity)
        w.key("max_inflight"); w.int(c.queue.maxInflight)
        w.endObject()
        w.key("streams"); w.beginArray()
        for s in c.streams {
            w.beginObject()
            w.key("stream"); w.string(s.stream.rawValue)
            w.key("enabled"); w.bool(s.enabled)
            w.key("json"); w.bool(s.json)
            w.key("json_interval_s"); w.double(s.jsonIntervalS)
            w.key("scalars"); w.bool(s.scalars)
            w.key("scalars_interval_s"); w.double(s.scalarsIntervalS)
            w.endObject()
        }
        w.endArray()
        w.key("status_socket"); w.string(c.statusSocket)
        w.endObject()
        w.endObject()
    }

    private static func encode(_ t: TLSSection, into w: inout JSONWriter) {
        w.beginObject()
        if let v = t.caFile { w.key("ca_file"); w.string(v) }
        if let v = t.certFile { w.key("cert_file"); w.string(v) }
        if let v = t.keyFile { w.key("key_file"); w.string(v) }
        w.endObject()
    }

    /// The wire form back (the password is not in it).
    init(wire v: JSONValue) throws(SetupFailure) {
        let r = WireReader(v, WireProblems())
        let c = r.object("config")
        var config = BridgeConfig()
        config.node = c.optionalString("node")
        let a = c.object("agent")
        config.agent = AgentSection(socketPath: a.string("socket_path"))
        config.agent.socketPathGiven = a.bool("socket_path_given")
        let b = c.object("broker")
        config.broker = BrokerSection(host: b.string("host"), port: b.int("port"))
        config.broker.protocolVersion = MQTTProtocolVersion(rawValue: b.string("protocol")) ?? .v311
        config.broker.keepaliveS = b.int("keepalive_s")
        config.broker.clientID = b.optionalString("client_id")
        config.broker.username = b.optionalString("username")
        config.broker.passwordFile = b.optionalString("password_file")
        config.broker.tls = b.optionalObject("tls").map(Self.tls)
        config.broker.reconnectInitialS = b.double("reconnect_initial_s")
        config.broker.reconnectMaxS = b.double("reconnect_max_s")
        config.broker.connectTimeoutS = b.double("connect_timeout_s")
        let t = c.object("topics")
        config.topics.prefix = t.string("prefix")
        config.topics.discovery = t.bool("discovery")
        config.topics.discoveryPrefix = t.string("discovery_prefix")
        config.topics.retainScalars = t.bool("retain_scalars")
        let q = c.object("qos")
        config.qos = QoSSection(data: q.int("data"), scalars: q.int("scalars"), state: q.int("state"), discovery: q.int("discovery"))
        let u = c.object("queue")
        config.queue = QueueSection(capacity: u.int("capacity"), maxInflight: u.int("max_inflight"))
        config.streams = c.objects("streams").compactMap { s -> StreamSettings? in
            guard let name = StreamName(rawValue: s.string("stream")) else { r.note("stream \(s.string("stream"))"); return nil }
            return StreamSettings(stream: name, enabled: s.bool("enabled"), json: s.bool("json"), jsonIntervalS: s.double("json_interval_s"),
                                  scalars: s.bool("scalars"), scalarsIntervalS: s.double("scalars_interval_s"))
        }
        config.statusSocket = c.string("status_socket")
        let k = r.object("broker")
        let broker = BrokerSettings(host: k.string("host"), port: k.int("port"),
                                    protocolVersion: MQTTProtocolVersion(rawValue: k.string("protocol")) ?? .v311,
                                    keepaliveS: k.int("keepalive_s"), clientID: k.string("client_id"),
                                    username: k.optionalString("username"), password: nil,
                                    tls: k.optionalObject("tls").map(Self.tls), connectTimeoutS: k.double("connect_timeout_s"))
        self.init(configPath: r.string("config_path"), configSource: r.string("config_source"),
                  agentSocketSource: r.string("agent_socket_source"), config: config, node: r.string("node"),
                  nodeFromHostName: r.bool("node_from_host_name"), broker: broker, agentSocket: r.string("agent_socket"),
                  statusSocket: r.string("status_socket"))
        if let problem = r.problems.first {
            throw SetupFailure("the configuration's process answered an incomplete result (\(problem)); this is a bug")
        }
    }

    private static func tls(_ o: WireReader) -> TLSSection {
        TLSSection(caFile: o.optionalString("ca_file"), certFile: o.optionalString("cert_file"), keyFile: o.optionalString("key_file"))
    }
}

/// The first member the wire form lacked.
private final class WireProblems {
    var first: String?
}

/// Reads the wire form's members, noting the first one missing.
private struct WireReader {
    let value: JSONValue
    let problems: WireProblems
    init(_ v: JSONValue, _ p: WireProblems) { value = v; problems = p }

    private func member(_ k: String) -> JSONValue? { value[k] }
    func note(_ what: String) { if problems.first == nil { problems.first = what } }
    func optionalString(_ k: String) -> String? { if case .string(let s)? = member(k) { return s }; return nil }
    func optionalObject(_ k: String) -> WireReader? {
        if let m = member(k), case .object = m { return WireReader(m, problems) }
        return nil
    }
    func string(_ k: String) -> String { optionalString(k) ?? missing(k, "") }
    func bool(_ k: String) -> Bool { if case .bool(let b)? = member(k) { return b }; return missing(k, false) }
    func double(_ k: String) -> Double { if case .number(let d, _)? = member(k) { return d }; return missing(k, 0) }
    func int(_ k: String) -> Int { if case .number(let d, _)? = member(k), let i = Int(exactly: d) { return i }; return missing(k, 0) }
    func object(_ k: String) -> WireReader { optionalObject(k) ?? missing(k, WireReader(.object([:]), problems)) }
    func objects(_ k: String) -> [WireReader] {
        if case .array(let a)? = member(k) { return a.map { WireReader($0, problems) } }
        return missing(k, [])
    }
    private func missing<T>(_ k: String, _ fallback: T) -> T {
        note("no \(k)")
        return fallback
    }
}
