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
import EdgeCommandLine
import EdgeClient
import EdgeConfig
import EdgeProtocol
import EdgeValues
import EdgeRuntime
import EdgeLocations

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
    retry and stall counts, whether it runs uncalibrated and why; the lines the agent dropped because this client
    read too slowly; the deviceMotion rate. Heading is the compass direction
    the device faces - degrees clockwise from north in [0, 360): where its
    top edge (+Y) points when flat, where its back (-Z) looks when upright.

    On a terminal the view is redrawn in place (at most 20 times a second);
    Ctrl-C restores the cursor and ends it cleanly. When standard output is not a
    terminal, or with --plain, it prints one key=value line per update, at
    most 2 a second, for logs:
      t_s=… roll_deg=… pitch_deg=… yaw_deg=… heading_deg=… magneticFieldAccuracy=…
      rotationRate_radps=x,y,z
      userAcceleration_mps2=x,y,z relativeAltitude_m=… pressure_pa=… altitude_m=…
      accuracy_m=… devices=id:state:errors,… uncalibrated=id,… dropped=… rate_hz=…
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
    public static let socketEnvironmentVariable = AgentSocketLocator.environmentVariable

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
        let location: AgentSocketLocation
        do {
            if let configArg {
                location = try AgentSocketLocator.fromConfig(configArg)
            } else {
                location = try AgentSocketLocator.locate(environment: env, executablePaths: executablePaths)
            }
        } catch {
            throw SetupError(error, hint: BoardSession.configHint(unreadable: error.unreadable, configArg: configArg, environment: env))
        }
        // The socket lookup reads only the service keys (it is the Core
        // Motion library's too); a tool says what is wrong with the rest of
        // the file as `run` would.
        if let path = location.configPath {
            do {
                _ = try ConfigLoader.load(AgentConfig.self, from: path)
            } catch {
                throw SetupError(error, hint: BoardSession.configHint(error, configArg: configArg, environment: env))
            }
        }
        return SocketChoice(path: location.path, source: location.source, explicit: configArg != nil,
                            configPath: location.configPath, configuredGroup: location.configuredGroup)
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
        let connection: AgentConnection
        do {
            connection = try AgentConnection.connect(to: o.socketPath, timeoutMs: Int(o.handshakeTimeoutMs),
                                                     configPath: o.configPath, configuredGroup: o.configuredGroup)
        } catch {
            throw WatchError(error)
        }
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
        WatchError(AgentClientError.connect(path: path, errno: e, socketGroup: socketGroup,
                                            configuredGroup: configuredGroup, configPath: configPath).description)
    }

    /// A client error in the watcher's words (the protocol advice names the tool).
    init(_ e: AgentClientError, tool: String = "edge-agent watch") {
        switch e {
        case .incompatibleProtocol(let path, let agent, let client):
            self.init("the agent at \(path) speaks protocol \(agent); this \(tool) speaks protocol \(client). Use the edge-agent tool of the same release as the agent.")
        case .notEntitled(let stream, let entitlement, let uid, _):
            self = WatchError.notEntitled(stream: stream.rawValue, entitlement: entitlement.rawValue,
                                          user: uid.flatMap(AgentSocket.userName), uid: uid.map(Int.init))
        case .timedOut(let path, "version line", let seconds):
            self.init("no version line from \(path) within \(Int(seconds)) s; is it an edge-agent socket?")
        default:
            self.init(e.description)
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
            (the file `edge-agent run` reads; the installed service's is \
            /etc/edge-agent/edge-agent.json5), then restart the agent:
              clients: [ { \(subject), entitlements: ["\(entitlement)"] } ]
            """)
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

    static func motion(_ s: DeviceMotionSample) -> WatchMotion {
        WatchMotion(timestampNs: s.timestampNs, w: s.attitude.w, x: s.attitude.x, y: s.attitude.y, z: s.attitude.z,
                    rotationRate: (s.rotationRate.x, s.rotationRate.y, s.rotationRate.z),
                    userAcceleration: (s.userAcceleration.x, s.userAcceleration.y, s.userAcceleration.z),
                    headingDeg: s.headingDeg, frame: s.referenceFrame.rawValue,
                    magneticAccuracy: s.magneticFieldAccuracy.wireName.description)
    }

    static func devices(_ list: [DeviceInfo]) -> [WatchDevice] {
        list.map { d in
            WatchDevice(id: d.id, kind: d.kind, state: d.state.rawValue, errorCount: d.errorCount,
                        resetCount: d.resetCount, lastError: d.lastError, streams: d.streams.map(\.rawValue),
                        reason: d.reason, retryCount: d.retryCount, stallCount: d.stallCount,
                        calibration: d.calibration?.rawValue, calibrationNote: d.calibrationNote)
        }
    }

    /// The devices and stats requests (refreshed every second).
    static let refreshRequests = [Request(kind: .devices, id: .string("watch-devices")),
                                  Request(kind: .stats, id: .string("watch-stats"))]

    /// The subscriptions to send once the devices are known: deviceMotion at
    /// the terminal rate, altitude, absolute altitude, and the accessory IMU
    /// (with its connection events) when a device feeds it.
    func subscriptionRequests() -> [(stream: StreamName, intervalS: Double)] {
        var list: [(StreamName, Double)] = [(.deviceMotion, 0.05), (.altitude, 0.1), (.absoluteAltitude, 0.5)]
        if state.accessoryConfigured {
            list.append((.accessoryMotion, 0.05))
            list.append((.accessoryConnection, 1))
        }
        return list
    }

    /// Folds one message into the state. Returns what the loop should do;
    /// `send` takes the requests to send.
    mutating func handle(_ m: ServerMessage, send: (Request) -> Void) -> Action {
        if !versionSeen {
            // The connection has checked the protocol; a session fed by hand
            // (the tests) starts with the version line too.
            guard case .version(let v) = m else { return notAnAgent() }
            guard v.protocolVersion == EdgeProtocolInfo.version else {
                return .fail(WatchError(.incompatibleProtocol(path: options.socketPath, agent: v.protocolVersion,
                                                              client: EdgeProtocolInfo.version)).description)
            }
            versionSeen = true
            state.protocolVersion = v.protocolVersion
            state.agent = "\(v.agent) \(v.agentVersion)"
            uid = Int(v.uid)
            for r in Self.refreshRequests { send(r) }
            return .none
        }
        switch m {
        case .devices(let list, _):
            state.devices = Self.devices(list)
            if !subscriptionsSent {
                state.accessoryConfigured = list.contains { $0.streams.contains(.accessoryMotion) }
                for r in subscriptionRequests() {
                    state.streams[r.stream.rawValue] = .requested
                    send(Request(kind: .subscribe(r.stream, intervalNs: UInt64((r.intervalS * 1e9).rounded()))))
                }
                subscriptionsSent = true
            }
            return .redraw
        case .stats(_, _, let dropped, _, _):
            state.dropped = dropped
            return .none
        case .subscribed(let stream, _, _):
            state.streams[stream.rawValue] = .subscribed
            return .none
        case .sample(let sample):
            return self.sample(sample)
        case .connection(let e):
            let connected = e.state.isHealthy
            if let i = state.devices.firstIndex(where: { $0.id == e.deviceID }) {
                if state.devices[i].streams.contains(StreamName.accessoryMotion.rawValue) { state.accessoryConnected = connected }
                state.devices[i].state = e.state.rawValue
                state.devices[i].reason = connected ? nil : e.reason
            }
            send(Self.refreshRequests[0])
            var line = "event=connection device=\(e.deviceID) connected=\(connected) state=\(e.state.rawValue)"
            if let reason = e.reason, !connected { line += " reason=\"\(reason)\"" }
            return terminal ? .redraw : .event(line)
        case .shutdown(let reason):
            return .shutdown("the agent shut down (\(reason)); nothing more to watch.")
        case .error(let code, let name, let message, let stream, _):
            return error(code: code, codeName: name, message: message, stream: stream)
        default:
            return .none // version, pong, unsubscribed, and classes a newer agent adds
        }
    }

    func notAnAgent() -> Action {
        .fail("\(options.socketPath) did not start with a version line; is it an edge-agent socket?")
    }

    mutating func sample(_ s: Sample) -> Action {
        let t = s.timestampNs
        switch s {
        case .deviceMotion(let m):
            let v = Self.motion(m)
            state.motion = v
            motionStamps.append(t)
            if motionStamps.count > 32 { motionStamps.removeFirst(motionStamps.count - 32) }
            if let first = motionStamps.first, motionStamps.count >= 2, t > first {
                state.motionRateHz = Double(motionStamps.count - 1) / (Double(t - first) / 1e9)
            }
        case .accessoryMotion(let m):
            state.accessory = Self.motion(m)
            state.accessoryConnected = true
        case .altitude(let a):
            state.altitude = WatchAltitude(timestampNs: t, relative: a.relativeAltitude, pressure: a.pressure,
                                           temperature: a.temperature)
        case .absoluteAltitude(let a):
            state.absoluteAltitude = WatchAbsoluteAltitude(timestampNs: t, altitude: a.altitude,
                                                           accuracy: a.accuracy, precision: a.precision)
        default:
            return .none
        }
        let stream = s.stream
        // deviceMotion paces the updates. Other streams do only when it is
        // refused, or has been silent for a second of capture time (no IMU):
        // so the first update waits for motion, and altitude alone still shows.
        if firstSampleNs == nil { firstSampleNs = t }
        if stream != .deviceMotion && state.streams["deviceMotion"] == .subscribed,
           t < (state.motion?.timestampNs ?? firstSampleNs ?? t) &+ 1_000_000_000 {
            return .none
        }
        if let last = lastUpdateNs, t >= last, t - last < updateIntervalNs { return .none }
        if let last = lastUpdateNs, t < last, stream != .deviceMotion { return .none }
        lastUpdateNs = t
        return .update
    }

    mutating func error(code: ErrorCode?, codeName: String, message: String, stream: StreamName?) -> Action {
        if code?.closesConnection == true {
            return .fail("the agent closed the connection: \(codeName): \(message)")
        }
        guard let stream, state.streams[stream.rawValue] != nil else { return .none }
        if code == .notEntitled {
            state.streams[stream.rawValue] = .notEntitled(stream.entitlement.rawValue)
        } else {
            state.streams[stream.rawValue] = .failed("\(codeName): \(message)")
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

    static func monotonicMs() -> Int64 { Int64(monotonicNowNs() / 1_000_000) }

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
    mutating func run(_ c: AgentConnection, console: Console, interrupted: () -> Int32) throws(WatchError) -> Int32 {
        var lastRefresh = Self.monotonicMs()
        // Terminal frames: at most one per minimumFrameMs of wall time, on
        // top of the capture-clock pacing, so bursts (a backlog, device
        // refreshes, connection events) cannot exceed ~20 redraws/s.
        var lastFrameMs = Int64.min / 2
        var framePending = false
        var messages: [ServerMessage] = [.version(c.version)]
        var closed = false
        while true {
            if interrupted() != 0 { return Self.interruptedStatus }
            var redraw = false
            for m in messages {
                let action = handle(m, send: { c.send($0) })
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
            messages.removeAll(keepingCapacity: true)
            if everyStreamRefused {
                throw WatchError("the agent refused every stream this watcher needs; nothing to show.")
            }
            if redraw && terminal { framePending = true }
            if framePending && Self.monotonicMs() - lastFrameMs >= options.minimumFrameMs {
                draw(console)
                lastFrameMs = Self.monotonicMs()
                framePending = false
            }
            if closed {
                throw WatchError("the agent at \(options.socketPath) closed the connection without a shutdown message.")
            }
            let now = Self.monotonicMs()
            if now - lastRefresh >= 1000 {
                lastRefresh = now
                for r in Self.refreshRequests { c.send(r) }
            }
            var timeoutMs: Int64 = 200
            if framePending { timeoutMs = max(1, min(timeoutMs, lastFrameMs + options.minimumFrameMs - Self.monotonicMs())) }
            // One wait, then whatever else has arrived: one batch, one frame.
            do {
                var wait = Int32(timeoutMs)
                while let line = try c.receive(timeoutMs: wait) {
                    wait = 0
                    // A line this watcher cannot read is skipped; the rest still can be.
                    if case .success(let m) = line.message { messages.append(m) }
                    if messages.count >= 256 { break }
                }
            } catch .disconnected {
                closed = true
            } catch {
                throw WatchError(error)
            }
        }
    }
}
