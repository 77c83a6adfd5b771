// The integration tests' harness: a real mosquitto broker on a free
// loopback port with a generated configuration, a real `edge-agent run` on
// the simulated board, the real `edge-mqtt` binary, and mosquitto_sub as an
// independent reader of what reached the broker. Every wait is bounded and
// polls; nothing sleeps to "let things happen". No network beyond loopback.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

// MARK: - time and paths

func nowNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// A bounded wait.
struct Deadline {
    let endNs: UInt64
    init(_ seconds: Double) { endNs = nowNs() + UInt64(seconds * 1e9) }
    var expired: Bool { nowNs() >= endNs }
}

/// Polls `condition` every 10 ms until it holds or the deadline passes.
@discardableResult
func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let d = Deadline(seconds)
    while !condition() {
        if d.expired { return condition() }
        var none = pollfd()
        _ = poll(&none, 0, 10)
    }
    return true
}

enum Paths {
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()
    /// The agent `swift test` built, or `$EDGE_AGENT_TEST_BINARY` (CI's
    /// sanitizer runs point it at their own build).
    static var agentBinary: String {
        ProcessInfo.processInfo.environment["EDGE_AGENT_TEST_BINARY"] ?? root + "/.build/debug/edge-agent"
    }
    /// `$EDGE_MQTT_TEST_BINARY`, else the edge-mqtt next to the agent binary
    /// (so a sanitized agent comes with the bridge of the same build).
    static var bridgeBinary: String {
        if let b = ProcessInfo.processInfo.environment["EDGE_MQTT_TEST_BINARY"] { return b }
        return URL(fileURLWithPath: agentBinary).deletingLastPathComponent().path + "/edge-mqtt"
    }

    /// A private directory under /tmp (sun_path is short).
    static func temporaryDirectory(_ tag: String) throws -> String {
        var template = Array("/tmp/edge-mqtt-\(tag)-XXXXXX".utf8CString)
        guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw HarnessError("mkdtemp failed")
        }
        let dir = String(cString: p)
        chmod(dir, 0o755)
        return dir
    }

    static func remove(_ path: String) { try? FileManager.default.removeItem(atPath: path) }
    static func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    static func write(_ text: String, to path: String, mode: Int = 0o644) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode_t(mode))
    }
}

/// Which tools the integration tests need; a missing one fails the test
/// with the install command (CI installs them in .ci/run).
func requireTools() throws {
    for tool in ["mosquitto", "mosquitto_sub", "mosquitto_pub", "mosquitto_passwd", "openssl"] {
        guard which(tool) != nil else {
            throw HarnessError("\(tool) is not installed: apt-get install -y mosquitto mosquitto-clients openssl")
        }
    }
    for binary in [Paths.agentBinary, Paths.bridgeBinary] where !FileManager.default.isExecutableFile(atPath: binary) {
        throw HarnessError("\(binary) is missing: `swift build` builds it (swift test normally does)")
    }
}

func which(_ tool: String) -> String? {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/bin", "/usr/local/sbin"] {
        let p = dir + "/" + tool
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

/// A loopback TCP port nobody listens on right now.
func freePort() throws -> Int {
    let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard s >= 0 else { throw HarnessError("socket failed") }
    defer { close(s) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Int32 in
            guard bind(s, p, len) == 0 else { return -1 }
            return getsockname(s, p, &len)
        }
    }
    guard bound == 0 else { throw HarnessError("bind failed") }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func isListening(_ port: Int) -> Bool {
    let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard s >= 0 else { return false }
    defer { close(s) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

// MARK: - child processes

/// A child process with stdout and stderr in files; killed by ``stop()``
/// (every test defers it, so a failing test leaves nothing behind).
final class Child: @unchecked Sendable {
    let process = Process()
    let name: String
    let outPath: String
    let errPath: String

    init(_ name: String, executable: String, arguments: [String], directory: String,
         environment extra: [String: String] = [:]) {
        self.name = name
        outPath = directory + "/\(name).out"
        errPath = directory + "/\(name).err"
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for k in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "EDGE_AGENT_CONFIG", "EDGE_MQTT_CONFIG", "LISTEN_FDS"] {
            env[k] = nil
        }
        for (k, v) in extra { env[k] = v }
        process.environment = env
    }

    func start() throws {
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        guard let out = FileHandle(forWritingAtPath: outPath), let err = FileHandle(forWritingAtPath: errPath) else {
            throw HarnessError("cannot open \(outPath)")
        }
        defer { try? out.close(); try? err.close() }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
    }

    var isRunning: Bool { process.isRunning }
    var stdout: String { Paths.read(outPath) }
    var stderr: String { Paths.read(errPath) }
    var transcript: String { "--- \(name) stdout ---\n\(stdout)--- \(name) stderr ---\n\(stderr)" }

    func signal(_ sig: Int32) { if process.isRunning { kill(process.processIdentifier, sig) } }

    /// Waits for the exit; the status, or nil at the deadline.
    func waitForExit(_ seconds: Double) -> Int32? {
        guard waitUntil(seconds, { !process.isRunning }) else { return nil }
        return process.terminationStatus
    }

    /// SIGKILL and reap (bounded).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        _ = waitForExit(10)
    }
}

/// Runs a command to completion (bounded); its exit status and output.
@discardableResult
func runTool(_ executable: String, _ arguments: [String], in directory: String, timeout: Double = 30) throws
    -> (status: Int32, out: String, err: String)
{
    let c = Child("tool-\(UInt32.random(in: 0...UInt32.max))", executable: executable, arguments: arguments, directory: directory)
    try c.start()
    defer { c.stop(); Paths.remove(c.outPath); Paths.remove(c.errPath) }
    guard let status = c.waitForExit(timeout) else { throw HarnessError("\(executable) \(arguments) did not finish in \(timeout) s") }
    return (status, c.stdout, c.stderr)
}

// MARK: - the broker

/// mosquitto on 127.0.0.1 with a generated configuration.
final class Broker: @unchecked Sendable {
    let directory: String
    private(set) var port: Int
    let extraConfig: String
    private var child: Child?
    private var generation = 0

    /// `extraConfig` is appended to the listener's section (password_file,
    /// acl_file, TLS, allow_anonymous…).
    init(directory: String, port: Int? = nil, extraConfig: String = "allow_anonymous true") throws {
        self.directory = directory
        self.port = try port ?? freePort()
        self.extraConfig = extraConfig
    }

    var address: String { "127.0.0.1:\(port)" }
    var isRunning: Bool { child?.isRunning ?? false }
    var log: String { child.map { $0.stderr + $0.stdout } ?? "" }

    func start() throws {
        let user = String(cString: getpwuid(geteuid()).pointee.pw_name)
        let conf = """
        # generated by the edge-mqtt tests
        per_listener_settings true
        persistence false
        log_dest stderr
        log_type error
        log_type warning
        log_type notice
        log_type information
        user \(user)
        listener \(port) 127.0.0.1
        \(extraConfig)

        """
        let path = directory + "/mosquitto.conf"
        try Paths.write(conf, to: path)
        generation += 1
        let c = Child("mosquitto-\(generation)", executable: which("mosquitto")!, arguments: ["-c", path], directory: directory)
        try c.start()
        child = c
        guard waitUntil(10, { isListening(port) || !c.isRunning }), c.isRunning else {
            throw HarnessError("mosquitto did not start on port \(port)\n\(c.transcript)")
        }
    }

    /// Kills the broker (SIGKILL: retained messages are gone with it, persistence is off).
    func kill() {
        child?.stop()
        _ = waitUntil(5) { !isListening(port) }
    }

    func stop() {
        child?.signal(SIGCONT)
        child?.stop()
    }

    /// Freezes (SIGSTOP) or thaws (SIGCONT) the broker: a hung broker, or a
    /// network that silently drops everything, keeps its TCP connections open.
    func freeze() { child?.signal(SIGSTOP) }
    func thaw() { child?.signal(SIGCONT) }
}

// MARK: - a reader of the broker

/// One message as mosquitto_sub printed it.
struct SeenMessage: CustomStringConvertible {
    var retained: Bool
    /// The QoS it was delivered with: the lower of the publisher's and the
    /// subscription's (1), so 0 or 1 says what the bridge published with.
    var qos: Int
    var topic: String
    var payload: String
    var description: String { "\(retained ? "[r] " : "")\(topic) \(payload)" }
}

/// mosquitto_sub on `#` (and the `$`-less rest), writing `retain qos length topic payload` lines.
final class Subscriber: @unchecked Sendable {
    let child: Child
    let broker: Broker
    let tlsArguments: [String]
    let authArguments: [String]

    init(broker: Broker, name: String = "sub", filters: [String] = ["#"], tls: [String] = [], auth: [String] = []) {
        self.broker = broker
        tlsArguments = tls
        authArguments = auth
        // --retain-as-published: the retain flag as the bridge set it, also
        // on messages delivered live (MQTT 5 subscription option).
        var args = ["-h", "127.0.0.1", "-p", String(broker.port), "-V", "mqttv5", "-q", "1", "--retain-as-published",
                    "-F", "%r %q %l %t %p"]
        for f in filters { args += ["-t", f] }
        if !filters.contains("#") { args += ["-t", Self.readyFilter] }
        child = Child(name, executable: which("mosquitto_sub")!, arguments: args + tls + auth, directory: broker.directory)
    }

    /// The topic ``start()`` publishes on to see the subscriber receive.
    static let readyFilter = "edge-test/ready/#"

    /// Starts and waits until it receives (so nothing published after this is missed).
    func start() throws {
        try child.start()
        let marker = "edge-test/ready/\(UInt32.random(in: 0...UInt32.max))"
        let ok = waitUntil(10) {
            _ = try? runTool(which("mosquitto_pub")!, ["-h", "127.0.0.1", "-p", String(broker.port), "-t", marker, "-m", "x"] + tlsArguments + authArguments,
                             in: broker.directory, timeout: 5)
            return messages.contains { $0.topic == marker }
        }
        guard ok else { throw HarnessError("mosquitto_sub did not start receiving\n\(child.transcript)") }
    }

    func stop() { child.stop() }

    var messages: [SeenMessage] {
        child.stdout.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
            guard parts.count >= 4 else { return nil }
            return SeenMessage(retained: parts[0] == "1", qos: Int(parts[1]) ?? -1, topic: String(parts[3]),
                               payload: parts.count > 4 ? String(parts[4]) : "")
        }
    }

    func messages(on topic: String) -> [SeenMessage] { messages.filter { $0.topic == topic } }
    func last(on topic: String) -> SeenMessage? { messages(on: topic).last }
}

// MARK: - the agent and the bridge

/// `edge-agent run` on the simulated board, on a private socket.
final class Agent: @unchecked Sendable {
    let child: Child
    let socket: String

    /// `clients` is the agent configuration's `clients:` value (nil: the
    /// running user gets motion and altitude). `alwaysOn` keeps streams running.
    init(directory: String, clients: String? = nil, alwaysOn: [String] = [], name: String = "agent") throws {
        socket = directory + "/\(name).sock"
        let config = """
        {
          board: "\(Paths.root)/boards/simulated.json5",
          calibration_file: "\(Paths.root)/config/calibration.json",
          // 50 Hz IMU, 50 Hz magnetometer: ample for 10 Hz topics, and a
          // quarter of the default board's load on a machine that runs the
          // rest of the suite (timing-sensitive tests) alongside.
          sensors: { mpu6050: { sample_rate_hz: 50 }, qmc5883l: { output_rate_hz: 50 } },
          service: { socket_path: "\(socket)", delivery_interval_ms: 20 },
          \(clients.map { "clients: \($0)," } ?? "")
          always_on: [\(alwaysOn.map { "\"\($0)\"" }.joined(separator: ", "))],
        }
        """
        let path = directory + "/\(name).json5"
        try Paths.write(config, to: path)
        child = Child(name, executable: Paths.agentBinary, arguments: ["run", "--config", path, "--quiet"], directory: directory)
    }

    func start() throws {
        try child.start()
        guard waitUntil(30, { FileManager.default.fileExists(atPath: socket) || !child.isRunning }), child.isRunning else {
            throw HarnessError("edge-agent did not start\n\(child.transcript)")
        }
    }

    func stop() { child.stop() }
}

/// `edge-mqtt run` with a generated configuration.
final class BridgeProcess: @unchecked Sendable {
    let child: Child
    let configPath: String
    let statusSocket: String
    let node: String

    /// `broker` is the body of the configuration's `broker` section after
    /// host and port; `rest` more top-level keys.
    init(directory: String, node: String, brokerPort: Int, agentSocket: String, broker: String = "",
         streams: String = #"[ { stream: "deviceMotion", json_interval_s: 0.1, scalars_interval_s: 0.5 }, { stream: "altitude", json_interval_s: 0.5, scalars_interval_s: 0.5 } ]"#,
         rest: String = "", name: String = "bridge", arguments: [String] = [],
         backoff: String = "reconnect_initial_s: 0.1, reconnect_max_s: 1", environment: [String: String] = [:]) throws {
        self.node = node
        statusSocket = directory + "/\(name)-status.sock"
        configPath = directory + "/\(name).json5"
        let config = """
        // generated by the edge-mqtt tests
        {
          node: "\(node)",
          agent: { socket_path: "\(agentSocket)" },
          broker: { host: "127.0.0.1", port: \(brokerPort), \(backoff), keepalive_s: 5, \(broker) },
          streams: \(streams),
          status_socket: "\(statusSocket)",
          \(rest)
        }
        """
        try Paths.write(config, to: configPath)
        child = Child(name, executable: Paths.bridgeBinary, arguments: ["run", "--config", configPath] + arguments, directory: directory,
                      environment: environment)
    }

    func start() throws { try child.start() }
    func stop() { child.stop() }
    var log: String { child.stderr }

    /// Waits until the log has a line containing `text`.
    func waitForLog(_ text: String, _ seconds: Double = 20) -> Bool {
        waitUntil(seconds) { log.contains(text) || !child.isRunning } && log.contains(text)
    }

    /// The bridge's status report (its status socket), parsed.
    func status() -> [String: Any]? {
        guard let c = try? runTool(Paths.bridgeBinary, ["status", "--socket", statusSocket, "--json"], in: URL(fileURLWithPath: statusSocket).deletingLastPathComponent().path, timeout: 10),
              c.status == 0 else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(c.out.utf8))) as? [String: Any]
    }
}

// MARK: - TLS material

/// A certificate authority, a server certificate for 127.0.0.1/localhost
/// and a client certificate, made with openssl for one test.
struct TestCertificates {
    let directory: String
    var ca: String { directory + "/ca.crt" }
    var serverCert: String { directory + "/server.crt" }
    var serverKey: String { directory + "/server.key" }
    var clientCert: String { directory + "/client.crt" }
    var clientKey: String { directory + "/client.key" }
    /// A second CA that signed nothing the broker has.
    var otherCA: String { directory + "/other-ca.crt" }

    static func make(in directory: String) throws -> TestCertificates {
        let c = TestCertificates(directory: directory)
        let openssl = which("openssl")!
        func run(_ args: [String]) throws {
            let r = try runTool(openssl, args, in: directory)
            guard r.status == 0 else { throw HarnessError("openssl \(args.joined(separator: " ")): \(r.err)") }
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run(["req", "-x509"] + ec + ["-keyout", directory + "/ca.key", "-out", c.ca, "-days", "2", "-subj", "/CN=edge-mqtt test CA"])
        try run(["req", "-x509"] + ec + ["-keyout", directory + "/other-ca.key", "-out", c.otherCA, "-days", "2", "-subj", "/CN=another CA"])
        try Paths.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n", to: directory + "/san.ext")
        for (name, cn) in [("server", "localhost"), ("client", "edge-mqtt bridge")] {
            try run(["req"] + ec + ["-keyout", directory + "/\(name).key", "-out", directory + "/\(name).csr", "-subj", "/CN=\(cn)"])
            var args = ["x509", "-req", "-in", directory + "/\(name).csr", "-CA", c.ca, "-CAkey", directory + "/ca.key",
                        "-CAcreateserial", "-out", directory + "/\(name).crt", "-days", "2"]
            if name == "server" { args += ["-extfile", directory + "/san.ext"] }
            try run(args)
        }
        for f in ["ca.key", "other-ca.key", "server.key", "client.key"] { chmod(directory + "/" + f, 0o644) }
        return c
    }
}
