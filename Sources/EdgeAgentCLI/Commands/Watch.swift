#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import EdgeConfig
import EdgeProtocol

/// `edge-agent watch`: a live view of a running agent, as one of its clients.
public enum WatchCommand: Subcommand {
    public static let name = "watch"
    public static let summary = "Live view of a running agent: attitude and level, rates, altitude, devices"
    public static let help = """
    Usage: edge-agent watch [--socket PATH | --config FILE] [--count N] [--plain]

    Connects to a running agent as an ordinary client and shows what it
    serves: roll, pitch and yaw (degrees) with a bubble level, heading,
    rotation rate (rad/s) and user acceleration (m/s²) from deviceMotion;
    relative altitude, pressure (hPa, as `run` shows it) and temperature
    from altitude; absolute altitude with its accuracy; the accessory IMU's
    attitude when the board has one; every device's state (present, idle,
    degraded, missing, failed), why it is not present, its error, reset,
    retry and stall counts; the lines the agent dropped because this client
    read too slowly; the deviceMotion rate. Heading is the compass direction
    the device faces - degrees clockwise from north in [0, 360): where its
    top edge (+Y) points when flat, where its back (-Z) looks when upright.

    On a terminal the view is redrawn in place (at most 20 times a second);
    Ctrl-C restores the cursor and ends it cleanly. When standard output is not a
    terminal, or with --plain, it prints one key=value line per update, at
    most 2 a second, for logs:
      t_s=… roll_deg=… pitch_deg=… yaw_deg=… heading_deg=… rotationRate_radps=x,y,z
      userAcceleration_mps2=x,y,z relativeAltitude_m=… pressure_pa=… altitude_m=…
      accuracy_m=… devices=id:state:errors,… dropped=… rate_hz=…
    (keys carry the wire's units: pressure_pa in Pa), and one line per
    connection event: event=connection device=… connected=… state=… reason="…"

    The bubble floats to the high side, as in a spirit level: right edge
    down moves it left, forward edge up moves it up. It reaches the rim at 18°.

    Socket: the one `run` binds with the same configuration - --socket
    PATH, else service.socket_path of --config FILE, else $EDGE_AGENT_SOCKET,
    else service.socket_path of the configuration `run` would read
    ($EDGE_AGENT_CONFIG, /etc/edge-agent/edge-agent.json5,
    config/edge-agent.json5 in the working directory, then that of the
    repository a build-tree executable belongs to), else
    /run/edge-agent/agent.sock. Unless given with --socket or --config, the
    socket and where it came from are said on standard error.

    Options:
      --socket PATH  the agent's Unix-domain socket
      --config FILE  take the socket path from this configuration
      --count N      exit after N updates, 1 to 1000000 (for scripts and
                     tests; leave it out to watch until stopped)
      --plain        plain lines even on a terminal

    Exit status: 0 after --count updates, when the agent shuts down, or on
    Ctrl-C / SIGTERM (a clean stop, as `run`); 1 when the agent cannot be
    reached, speaks another protocol version, refuses every stream, or drops
    the connection; 2 on bad usage, or a configuration that is missing or
    invalid.
    """

    /// Environment variable naming the agent's socket.
    public static let socketEnvironmentVariable = "EDGE_AGENT_SOCKET"

    /// The socket used without `--socket`: `$EDGE_AGENT_SOCKET` when set and
    /// not empty, else `configuredPath` (the configuration file's socket path,
    /// once the configuration has one), else the system service's
    /// `/run/edge-agent/agent.sock`.
    public static func defaultSocketPath(environment: [String: String], configuredPath: String? = nil) -> String {
        if let p = environment[socketEnvironmentVariable], !p.isEmpty { return p }
        if let p = configuredPath, !p.isEmpty { return p }
        return EdgeProtocolInfo.defaultSocketPath
    }

    /// Which socket, and why that one: what `watch` (and `poll`) connect to.
    struct SocketChoice: Equatable, Sendable {
        var path: String
        /// How it was chosen, for the note and the view ("--socket",
        /// "service.socket_path of FILE", ...).
        var source: String
        /// Given on the command line (no note printed).
        var explicit: Bool
        /// The configuration read for it, if any.
        var configPath: String?
        /// Its `service.socket_group` (nil: the agent's own group).
        var configuredGroup: String?
    }

    /// The socket, chosen as `run` chooses the one it binds: `--socket
    /// PATH`, else the configuration's `service.socket_path` when
    /// `--config FILE` is given, else `$EDGE_AGENT_SOCKET`, else the
    /// configuration `run` would read (``BoardLocator``), else the system
    /// service's `/run/edge-agent/agent.sock`.
    static func chooseSocket(socket: String?, config configArg: String?, environment env: [String: String],
                             executablePaths: [String] = BoardLocator.currentExecutablePaths()) throws -> SocketChoice {
        if let socket { return SocketChoice(path: socket, source: "--socket", explicit: true) }
        func fromConfig(_ path: String) throws -> SocketChoice {
            let config: AgentConfig
            do {
                config = try ConfigLoader.load(AgentConfig.self, from: path)
            } catch {
                throw SetupError(error, hint: BoardSession.configHint(error, configArg: configArg, environment: env))
            }
            return SocketChoice(path: EngineSetup.path(config.service.socketPath, config: path),
                                source: "service.socket_path of \(path)", explicit: configArg != nil,
                                configPath: path, configuredGroup: config.service.socketGroup)
        }
        if let configArg { return try fromConfig(configArg) }
        if let p = env[socketEnvironmentVariable], !p.isEmpty {
            return SocketChoice(path: p, source: "$\(socketEnvironmentVariable)", explicit: false)
        }
        if let found = BoardLocator.defaultConfigPath(environment: env, executablePaths: executablePaths) {
            return try fromConfig(found)
        }
        let tried = BoardLocator.configCandidates(environment: env, executablePaths: executablePaths)
        return SocketChoice(path: EdgeProtocolInfo.defaultSocketPath,
                            source: "the system service's socket; no configuration file found (looked for \(tried.joined(separator: ", ")))",
                            explicit: false)
    }

    /// What the command line asked for.
    struct Options: Sendable {
        var socketPath: String
        var count: Int?
        var plain: Bool
        /// Between drawn updates, on the samples' capture clock, ns.
        var terminalIntervalNs: UInt64 = 50_000_000
        var plainIntervalNs: UInt64 = 500_000_000
        /// Least wall time between terminal frames, ms (the last frame before
        /// exit is always drawn).
        var minimumFrameMs: Int64 = 50
        /// Wait for the version line and the first replies, ms.
        var handshakeTimeoutMs: Int32 = 5000
        /// How the socket was chosen (shown in the view; nil: given explicitly).
        var socketSource: String? = nil
        /// For the permission advice: the configuration and its socket group.
        var configPath: String? = nil
        var configuredGroup: String? = nil
    }

    /// The most updates `--count` takes (about 14 hours of terminal updates;
    /// to watch without end, leave --count out).
    static let maximumCount = 1_000_000

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let socket = try a.option("--socket")
        let count = try a.int("--count", in: 1...maximumCount)
        let plain = a.flag("--plain")
        let configArg = try a.option("--config")
        try a.finish()
        if socket != nil && configArg != nil {
            throw UsageError("use either --socket PATH or --config FILE (whose service.socket_path is used), not both")
        }
        let choice = try chooseSocket(socket: socket, config: configArg, environment: ProcessInfo.processInfo.environment)
        if !choice.explicit { console.error("edge-agent watch: socket \(choice.path) (\(choice.source))") }
        var options = Options(socketPath: choice.path, count: count, plain: plain)
        options.socketSource = choice.explicit ? nil : choice.source
        options.configPath = choice.configPath
        options.configuredGroup = choice.configuredGroup
        // Signal dispositions are process-wide: only the program itself (on
        // the standard console) takes them over, never a test running
        // watchers side by side in one process.
        return try watch(options, console: console, handleSignals: console === Console.standard)
    }

    /// Runs the watcher until `count` updates, the agent's shutdown, an error
    /// or (with `handleSignals`) SIGINT/SIGTERM, which end it cleanly (exit
    /// 0, as `run`). Tests pass `handleSignals: false` so they do not touch
    /// the test process's signal dispositions.
    static func watch(_ o: Options, console: Console, handleSignals: Bool) throws -> Int32 {
        let terminal = console.isTerminal && !o.plain
        let connection = try WatchConnection.connect(o.socketPath, configPath: o.configPath,
                                                     configuredGroup: o.configuredGroup)
        var session = WatchSession(options: o, terminal: terminal)
        let signals = handleSignals ? WatchSignals.install() : nil
        var stoppedBy: Int32 = 0
        defer {
            signals?.restore()
            if session.drewFrame { console.write("\n" + WatchView.terminalRestore) }
            if stoppedBy != 0 { console.error(EdgeAgentCLI.stopNote(command: "watch", signal: stoppedBy)) }
        }
        let status = try session.run(connection, console: console, interrupted: { signals?.received ?? 0 })
        if status == WatchSession.interruptedStatus { stoppedBy = signals?.received ?? SIGINT; return 0 }
        return status
    }
}

/// Why the watcher stopped with an error. Each message says what to do.
struct WatchError: Error, CustomStringConvertible, Equatable {
    var description: String
    init(_ description: String) { self.description = description }

    /// A failed connect(2) on `path`, with the advice that fits the errno.
    /// `socketGroup` is the group that owns the socket file (or, when the
    /// file cannot be looked at, its directory), if known; `configuredGroup`
    /// the configuration's `service.socket_group` and `configPath` the
    /// configuration, when the socket was found through one. Never advises
    /// joining root: a socket owned by group root needs a group configured.
    static func connect(path: String, errno e: Int32, socketGroup: String?, configuredGroup: String? = nil,
                        configPath: String? = nil) -> WatchError {
        switch e {
        case ENOENT, ECONNREFUSED, ENOTDIR:
            let what = e == ECONNREFUSED ? "nothing is listening on \(path)" : "no agent socket at \(path)"
            return WatchError("\(what). Is the agent running? Check with `systemctl status edge-agent`, or start one with `edge-agent run`. (Another socket: --socket PATH or $\(WatchCommand.socketEnvironmentVariable).)")
        case EACCES, EPERM:
            let config = configPath ?? "the agent's configuration"
            let setting = "service.socket_group in \(config)"
            guard let group = socketGroup ?? configuredGroup else {
                return WatchError("permission denied connecting to \(path): the socket (or its directory) does not admit this user. Members of the socket's group may connect: find it with `ls -l \(path)`, join it (`sudo usermod -aG GROUP $USER`, then log in again), or have the agent's owner set \(setting).")
            }
            if group == "root" || group == "0" {
                return WatchError("permission denied connecting to \(path): the socket belongs to group root (the agent runs as root and \(configuredGroup == nil ? "no socket group is configured" : "its socket group is root")), so only root may connect. Do not join root: give the clients a group of their own - `sudo groupadd edge-motion`, set socket_group: \"edge-motion\" under service in \(config), join it (`sudo usermod -aG edge-motion $USER`, then log in again) and restart the agent; or run the agent as your own user.")
            }
            var text = "permission denied connecting to \(path): the socket admits its owner and members of group '\(group)'. Add yourself (`sudo usermod -aG \(group) $USER`, then log in again) or run as a member."
            if configPath != nil && configuredGroup == nil {
                text += " ('\(group)' is the agent's own group, as no socket group is configured; to choose the group clients need, set \(setting) and restart the agent.)"
            }
            return WatchError(text)
        default:
            return WatchError("cannot connect to \(path): \(String(cString: strerror(e))) (errno \(e))")
        }
    }

    /// A `notEntitled` error for `stream`: which entitlement, and the
    /// configuration that grants it.
    static func notEntitled(stream: String, entitlement: String, user: String?, uid: Int?) -> WatchError {
        let who = user.map { "user \"\($0)\"" } ?? uid.map { "uid \($0)" } ?? "this user"
        let subject = user.map { "user: \"\($0)\"" } ?? uid.map { "uid: \($0)" } ?? "user: \"NAME\""
        return WatchError("""
            not entitled to \(stream): \(who) does not hold the "\(entitlement)" entitlement. \
            Grant it in the clients section of the agent's configuration \
            (/etc/edge-agent/edge-agent.json5), then restart the agent:
              clients: [ { \(subject), entitlements: ["\(entitlement)"] } ]
            """)
    }
}

// MARK: - the connection

/// A client socket to the agent: blocking connect, poll-bounded reads, whole
/// lines out. Glibc only (no Foundation in the data path).
final class WatchConnection {
    let fd: Int32
    let path: String
    private var buffer: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 65536)
    /// The agent closed the connection.
    private(set) var closed = false

    private init(fd: Int32, path: String) { self.fd = fd; self.path = path }
    deinit { close(fd) }

    static func connect(_ path: String, configPath: String? = nil, configuredGroup: String? = nil) throws(WatchError) -> WatchConnection {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw WatchError("socket path must be 1 to \(capacity - 1) bytes: \(path)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw WatchError("socket: \(String(cString: strerror(errno)))") }
        var r: Int32
        repeat {
            r = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        } while r != 0 && errno == EINTR
        guard r == 0 else {
            let e = errno
            close(fd)
            throw WatchError.connect(path: path, errno: e, socketGroup: socketGroupName(path),
                                     configuredGroup: configuredGroup, configPath: configPath)
        }
        return WatchConnection(fd: fd, path: path)
    }

    /// The name of the group owning `path` (or, when the file cannot be
    /// looked at, its directory), for the permission advice; the number when
    /// the group database has no name for it.
    static func socketGroupName(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 || stat(BoardLocator.directory(of: path), &st) == 0 else { return nil }
        var gr = group()
        var result: UnsafeMutablePointer<group>?
        var buf = [CChar](repeating: 0, count: 16384)
        guard getgrgid_r(st.st_gid, &gr, &buf, buf.count, &result) == 0, result != nil, let name = gr.gr_name else {
            return String(st.st_gid)
        }
        return String(cString: name)
    }

    /// Sends one request line. A failure shows up as EOF on the next read.
    func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            off += n
        }
    }

    /// Complete lines available within `timeoutMs` (empty on timeout or
    /// signal; check ``closed`` for EOF). Waits at most once.
    func readLines(timeoutMs: Int32) throws(WatchError) -> [String] {
        var lines = takeLines()
        if !lines.isEmpty || closed { return lines }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let r = poll(&p, 1, timeoutMs)
        if r <= 0 { return [] } // timeout, or EINTR (a signal: the caller checks)
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR || errno == EAGAIN { return [] }
            if errno == ECONNRESET { closed = true; return takeLines() }
            throw WatchError("reading from \(path): \(String(cString: strerror(errno)))")
        }
        if n == 0 { closed = true } else { buffer.append(contentsOf: chunk[..<n]) }
        lines = takeLines()
        if buffer.count > 1 << 20 { throw WatchError("the agent sent a line over 1 MiB; is \(path) an edge-agent socket?") }
        return lines
    }

    private func takeLines() -> [String] {
        var lines: [String] = []
        var start = 0
        while let nl = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: buffer[start..<nl], as: UTF8.self))
            start = nl + 1
        }
        if start > 0 { buffer.removeSubrange(0..<start) }
        return lines
    }
}

// MARK: - signals

/// The last SIGINT/SIGTERM received while the watcher runs (0: none).
private let watchSignalReceived = Atomic<Int32>(0)

/// SIGINT/SIGTERM handlers that only set a flag, so the watcher leaves
/// through its normal path and restores the terminal. No SA_RESTART: a
/// blocked poll(2) returns EINTR at once. The calling thread unblocks both
/// signals while the watcher runs (a thread started from a dispatch worker
/// inherits a mask that blocks them).
struct WatchSignals {
    private var previous: [(Int32, sigaction)] = []
    private var previousMask = sigset_t()

    static func install() -> WatchSignals {
        watchSignalReceived.store(0, ordering: .relaxed)
        var s = WatchSignals()
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { sig in watchSignalReceived.store(sig, ordering: .relaxed) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var mask = sigset_t()
        sigemptyset(&mask)
        for sig in [SIGINT, SIGTERM] {
            var old = sigaction()
            if sigaction(sig, &action, &old) == 0 { s.previous.append((sig, old)) }
            sigaddset(&mask, sig)
        }
        pthread_sigmask(SIG_UNBLOCK, &mask, &s.previousMask)
        return s
    }

    var received: Int32 { watchSignalReceived.load(ordering: .relaxed) }

    func restore() {
        var mask = previousMask
        pthread_sigmask(SIG_SETMASK, &mask, nil)
        for (sig, old) in previous {
            var o = old
            sigaction(sig, &o, nil)
        }
    }
}

// MARK: - the session

/// The watcher's protocol state machine: handshake, subscriptions, updating
/// ``WatchState`` from messages, deciding when to draw.
struct WatchSession {
    let options: WatchCommand.Options
    let terminal: Bool
    var state: WatchState
    /// A terminal frame has been drawn (the cursor is hidden).
    var drewFrame = false
    /// Capture time of the last drawn update.
    var lastUpdateNs: UInt64?
    /// Capture time of the first sample of any stream.
    var firstSampleNs: UInt64?
    /// Recent deviceMotion capture times, for the rate.
    var motionStamps: [UInt64] = []
    var versionSeen = false
    var subscriptionsSent = false
    /// The uid the agent sees us as (version line), for entitlement advice.
    var uid: Int?
    /// Streams refused for lack of an entitlement, reported once each.
    var refusalsReported: Set<String> = []

    init(options: WatchCommand.Options, terminal: Bool) {
        self.options = options; self.terminal = terminal
        self.state = WatchState(socketPath: options.socketPath)
        self.state.socketSource = options.socketSource
    }

    /// What ``run(_:console:interrupted:)`` returns when a signal stopped it
    /// (never an exit status of its own; the command makes it a clean 0).
    static let interruptedStatus: Int32 = -1

    /// Between updates on the capture clock, with 1/16 slack for timestamp
    /// jitter (as the agent's own decimation).
    var updateIntervalNs: UInt64 {
        let i = terminal ? options.terminalIntervalNs : options.plainIntervalNs
        return i - i / 16
    }

    /// What a message asks the loop to do.
    enum Action: Equatable {
        case none
        /// A sample made an update due.
        case update
        /// Redraw without counting an update (devices, connection, refusals).
        case redraw
        /// A plain line for an event (connection changes), not counted.
        case event(String)
        /// The agent is stopping: exit 0 with this note.
        case shutdown(String)
        /// Exit 1 with this message.
        case fail(String)

        var failure: String? {
            if case .fail(let m) = self { return m }
            return nil
        }
    }

    static func number(_ v: JSONValue?) -> Double? {
        if case .number(let d, _)? = v { return d }
        return nil
    }
    static func string(_ v: JSONValue?) -> String? {
        if case .string(let s)? = v { return s }
        return nil
    }
    /// A count; nil unless a finite number in Int's range (a hostile or
    /// broken peer must not trap the conversion).
    static func int(_ v: JSONValue?) -> Int? {
        guard let d = number(v), d.isFinite, abs(d) < 9.0e18 else { return nil }
        return Int(d)
    }
    static func vector(_ v: JSONValue?) -> (x: Double, y: Double, z: Double)? {
        guard let x = number(v?["x"]), let y = number(v?["y"]), let z = number(v?["z"]) else { return nil }
        return (x, y, z)
    }
    static func timestamp(_ m: JSONValue) -> UInt64? {
        guard let t = number(m["timestamp_ns"]), t >= 0, t < 1.8e19 else { return nil }
        return UInt64(t)
    }

    static func motion(_ m: JSONValue) -> WatchMotion? {
        guard let t = timestamp(m), let q = m["attitude"], let w = number(q["w"]), let x = number(q["x"]),
              let y = number(q["y"]), let z = number(q["z"]) else { return nil }
        return WatchMotion(timestampNs: t, w: w, x: x, y: y, z: z,
                           rotationRate: vector(m["rotationRate_radps"]) ?? (.nan, .nan, .nan),
                           userAcceleration: vector(m["userAcceleration_mps2"]) ?? (.nan, .nan, .nan),
                           headingDeg: number(m["heading_deg"]),
                           frame: string(m["frame"]) ?? "?",
                           magneticAccuracy: string(m["magneticFieldAccuracy"]) ?? "?")
    }

    static func devices(_ m: JSONValue) -> [WatchDevice] {
        guard case .array(let list)? = m["devices"] else { return [] }
        return list.compactMap { d in
            guard let id = string(d["id"]) else { return nil }
            var streams: [String] = []
            if case .array(let s)? = d["streams"] { streams = s.compactMap { string($0) } }
            return WatchDevice(id: id, kind: string(d["kind"]) ?? "?", state: string(d["state"]) ?? "?",
                               errorCount: int(d["errorCount"]) ?? 0,
                               resetCount: int(d["resetCount"]) ?? 0,
                               lastError: string(d["lastError"]), streams: streams,
                               reason: string(d["reason"]),
                               retryCount: int(d["retryCount"]) ?? 0,
                               stallCount: int(d["stallCount"]) ?? 0)
        }
    }

    /// The subscriptions to send once the devices are known: deviceMotion at
    /// the terminal rate, altitude, absolute altitude, and the accessory IMU
    /// (with its connection events) when a device feeds it.
    func subscriptionRequests() -> [(stream: String, intervalS: String)] {
        var list: [(String, String)] = [("deviceMotion", "0.05"), ("altitude", "0.1"), ("absoluteAltitude", "0.5")]
        if state.accessoryConfigured {
            list.append(("accessoryMotion", "0.05"))
            list.append(("accessoryConnection", "1"))
        }
        return list
    }

    /// Folds one message into the state. Returns what the loop should do and
    /// the request lines to send.
    mutating func handle(_ m: JSONValue, send: (String) -> Void) -> Action {
        let cls = Self.string(m["class"])
        if !versionSeen {
            guard cls == "version" else { return notAnAgent() }
            guard let p = Self.number(m["protocol"]) else {
                return .fail("the version line from \(options.socketPath) has no protocol number")
            }
            guard Int(exactly: p) == EdgeProtocolInfo.version else {
                return .fail("the agent at \(options.socketPath) speaks protocol \(Self.fixedOrInt(p)); this edge-agent watch speaks protocol \(EdgeProtocolInfo.version). Use the edge-agent tool of the same release as the agent.")
            }
            versionSeen = true
            state.protocolVersion = EdgeProtocolInfo.version
            state.agent = [Self.string(m["agent"]), Self.string(m["agentVersion"])].compactMap { $0 }.joined(separator: " ")
            uid = Self.number(m["uid"]).flatMap { Int(exactly: $0) }
            send(#"{"class":"devices","id":"watch-devices"}"#)
            send(#"{"class":"stats","id":"watch-stats"}"#)
            return .none
        }
        switch cls ?? "" {
        case "devices":
            state.devices = Self.devices(m)
            if !subscriptionsSent {
                state.accessoryConfigured = state.devices.contains { $0.streams.contains("accessoryMotion") }
                for r in subscriptionRequests() {
                    state.streams[r.stream] = .requested
                    send(#"{"class":"subscribe","stream":"\#(r.stream)","interval_s":\#(r.intervalS)}"#)
                }
                subscriptionsSent = true
            }
            return .redraw
        case "stats":
            state.dropped = Self.int(m["dropped"])
            return .none
        case "subscribed":
            if let s = Self.string(m["stream"]) { state.streams[s] = .subscribed }
            return .none
        case "sample":
            return sample(m)
        case "connection":
            guard let device = Self.string(m["device"]) else { return .none }
            let connected = m["connected"] == .bool(true)
            // An agent older than the `state` key says only connected or not.
            let newState = Self.string(m["state"]) ?? (connected ? "present" : "missing")
            let reason = Self.string(m["reason"])
            if let i = state.devices.firstIndex(where: { $0.id == device }) {
                if state.devices[i].streams.contains("accessoryMotion") { state.accessoryConnected = connected }
                state.devices[i].state = newState
                state.devices[i].reason = connected ? nil : reason
            }
            send(#"{"class":"devices","id":"watch-devices"}"#)
            var line = "event=connection device=\(device) connected=\(connected) state=\(newState)"
            if let reason, !connected { line += " reason=\"\(reason)\"" }
            return terminal ? .redraw : .event(line)
        case "shutdown":
            let reason = Self.string(m["reason"]).map { " (\($0))" } ?? ""
            return .shutdown("the agent shut down\(reason); nothing more to watch.")
        case "error":
            return error(m)
        default:
            return .none // pong, unsubscribed, and classes a newer agent adds
        }
    }

    func notAnAgent() -> Action {
        .fail("\(options.socketPath) did not start with a version line; is it an edge-agent socket?")
    }

    static func fixedOrInt(_ d: Double) -> String {
        if let i = Int(exactly: d) { return String(i) }
        return fixed(d, 3)
    }

    mutating func sample(_ m: JSONValue) -> Action {
        guard let stream = Self.string(m["stream"]) else { return .none }
        let t: UInt64
        switch stream {
        case "deviceMotion":
            guard let v = Self.motion(m) else { return .none }
            state.motion = v
            t = v.timestampNs
            motionStamps.append(t)
            if motionStamps.count > 32 { motionStamps.removeFirst(motionStamps.count - 32) }
            if let first = motionStamps.first, motionStamps.count >= 2, t > first {
                state.motionRateHz = Double(motionStamps.count - 1) / (Double(t - first) / 1e9)
            }
        case "accessoryMotion":
            guard let v = Self.motion(m) else { return .none }
            state.accessory = v
            state.accessoryConnected = true
            t = v.timestampNs
        case "altitude":
            guard let ts = Self.timestamp(m), let r = Self.number(m["relativeAltitude_m"]) else { return .none }
            state.altitude = WatchAltitude(timestampNs: ts, relative: r, pressure: Self.number(m["pressure_pa"]) ?? .nan,
                                           temperature: Self.number(m["temperature_c"]) ?? .nan)
            t = ts
        case "absoluteAltitude":
            guard let ts = Self.timestamp(m), let a = Self.number(m["altitude_m"]) else { return .none }
            state.absoluteAltitude = WatchAbsoluteAltitude(timestampNs: ts, altitude: a,
                                                           accuracy: Self.number(m["accuracy_m"]) ?? .nan,
                                                           precision: Self.number(m["precision_m"]) ?? .nan)
            t = ts
        default:
            return .none
        }
        // deviceMotion paces the updates. Other streams do only when it is
        // refused, or has been silent for a second of capture time (no IMU):
        // so the first update waits for motion, and altitude alone still shows.
        if firstSampleNs == nil { firstSampleNs = t }
        if stream != "deviceMotion" && state.streams["deviceMotion"] == .subscribed,
           t < (state.motion?.timestampNs ?? firstSampleNs ?? t) &+ 1_000_000_000 {
            return .none
        }
        if let last = lastUpdateNs, t >= last, t - last < updateIntervalNs { return .none }
        if let last = lastUpdateNs, t < last, stream != "deviceMotion" { return .none }
        lastUpdateNs = t
        return .update
    }

    mutating func error(_ m: JSONValue) -> Action {
        let code = Self.string(m["code"]) ?? "?"
        let message = Self.string(m["message"]) ?? ""
        let stream = Self.string(m["stream"])
        if m["closesConnection"] == .bool(true) {
            return .fail("the agent closed the connection: \(code): \(message)")
        }
        guard let stream, state.streams[stream] != nil else { return .none }
        if code == "notEntitled" {
            let needed = StreamName(rawValue: stream)?.entitlement.rawValue ?? "?"
            state.streams[stream] = .notEntitled(needed)
        } else {
            state.streams[stream] = .failed("\(code): \(message)")
        }
        return .redraw
    }

    /// Streams refused for lack of an entitlement, not reported yet.
    mutating func newRefusals() -> [(stream: String, entitlement: String)] {
        var out: [(String, String)] = []
        for (stream, status) in state.streams.sorted(by: { $0.key < $1.key }) {
            if case .notEntitled(let e) = status, !refusalsReported.contains(stream) {
                refusalsReported.insert(stream)
                out.append((stream, e))
            }
        }
        return out
    }

    /// Every sample stream asked for was refused: nothing left to show.
    var everyStreamRefused: Bool {
        let sampleStreams = state.streams.filter { $0.key != "accessoryConnection" }
        return !sampleStreams.isEmpty && sampleStreams.values.allSatisfy {
            if case .notEntitled = $0 { return true }
            if case .failed = $0 { return true }
            return false
        }
    }

    /// The user name of `uid`, for the entitlement advice.
    static func userName(_ uid: Int?) -> String? {
        guard let uid, let u = uid_t(exactly: uid) else { return nil }
        var pw = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buf = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(u, &pw, &buf, buf.count, &result) == 0, result != nil, let n = pw.pw_name else { return nil }
        return String(cString: n)
    }

    static func monotonicMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Draws the current state: a frame on a terminal, a line otherwise.
    mutating func draw(_ console: Console) {
        if terminal {
            console.write(WatchView.terminalFrame(WatchView.render(state), first: !drewFrame))
            drewFrame = true
        } else {
            console.print(WatchView.plainLine(state))
        }
    }

    /// The read loop. Returns the exit status; throws ``WatchError``.
    mutating func run(_ c: WatchConnection, console: Console, interrupted: () -> Int32) throws(WatchError) -> Int32 {
        let started = Self.monotonicMs()
        var lastRefresh = started
        // Terminal frames: at most one per minimumFrameMs of wall time, on
        // top of the capture-clock pacing, so bursts (a backlog, device
        // refreshes, connection events) cannot exceed ~20 redraws/s.
        var lastFrameMs = Int64.min / 2
        var framePending = false
        while true {
            if interrupted() != 0 { return Self.interruptedStatus }
            var timeoutMs: Int64 = 200
            if framePending { timeoutMs = max(1, min(timeoutMs, lastFrameMs + options.minimumFrameMs - Self.monotonicMs())) }
            let lines = try c.readLines(timeoutMs: Int32(timeoutMs))
            var redraw = false
            for line in lines {
                guard let m = try? JSONValue.parse(Array(line.utf8)) else {
                    if !versionSeen { throw WatchError(notAnAgent().failure ?? "") }
                    continue // a line this watcher cannot read; the rest still can be
                }
                let action = handle(m, send: c.send)
                // Refusals are said at once, before any exit on --count.
                for r in newRefusals() {
                    console.error("edge-agent watch: " + WatchError.notEntitled(
                        stream: r.stream, entitlement: r.entitlement, user: Self.userName(uid), uid: uid).description)
                }
                switch action {
                case .none: break
                case .redraw: redraw = true
                case .event(let line): console.print(line)
                case .update:
                    state.updates += 1
                    if terminal {
                        redraw = true // drawn once per batch of lines
                    } else {
                        draw(console)
                    }
                    if let n = options.count, state.updates >= n {
                        if terminal { draw(console) }
                        return 0
                    }
                case .shutdown(let note):
                    if terminal { draw(console) }
                    console.error("edge-agent watch: " + note)
                    return 0
                case .fail(let message):
                    throw WatchError(message)
                }
            }
            if everyStreamRefused {
                throw WatchError("the agent refused every stream this watcher needs; nothing to show.")
            }
            if redraw && terminal && versionSeen { framePending = true }
            if framePending && Self.monotonicMs() - lastFrameMs >= options.minimumFrameMs {
                draw(console)
                lastFrameMs = Self.monotonicMs()
                framePending = false
            }
            if c.closed {
                throw WatchError("the agent at \(options.socketPath) closed the connection without a shutdown message.")
            }
            let now = Self.monotonicMs()
            if !versionSeen && now - started > Int64(options.handshakeTimeoutMs) {
                throw WatchError("no version line from \(options.socketPath) within \(options.handshakeTimeoutMs / 1000) s; is it an edge-agent socket?")
            }
            if versionSeen && now - lastRefresh >= 1000 {
                lastRefresh = now
                c.send(#"{"class":"devices","id":"watch-devices"}"#)
                c.send(#"{"class":"stats","id":"watch-stats"}"#)
            }
        }
    }
}
