// Agents for the CoreMotion tests: the real `edge-agent run` (the debug
// binary `swift build` makes) on a simulated board, each with its own
// configuration, board, scenario and socket in a private directory under
// /tmp. Waits are bounded and poll a condition; nothing sleeps to let
// things happen.
import Foundation
import CoreMotion
import CoreMotionInProcessAgent
#if canImport(Glibc)
import Glibc
import TestThreads
#endif

public struct TestAgentError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// What an agent serves.
public enum TestAgentKind: Sendable, Equatable {
    /// The full simulated board (IMU, magnetometer, barometer, accessory
    /// IMU) at rest, lying flat face up, X north; this user holds `motion`
    /// and `altitude`.
    case restFlat
    /// IMU and barometer only (no magnetometer, no accessory); this user
    /// holds `altitude` only (no `motion`).
    case restricted
    /// The full board at rest; the accessory IMU (0x69) is unplugged from
    /// `from` to `to` seconds after the agent starts.
    case accessoryUnplugged(from: Double, to: Double)
    /// IMU and barometer; still for 1 s, an 8 s walk at 1.8 steps/s (the
    /// scenario's gait: a 3 cm bob), then still; this user holds `motion`,
    /// `altitude` and `fitness`; the pedometer runs all the time and keeps
    /// its history in `fitness.sqlite3` next to the configuration.
    case walking
    /// The full board at rest; this user holds `motion` and `altitude`, a
    /// second user `uid` only `altitude`. The socket is open to that user
    /// (group `nogroup`, the directory traversable), so a client process
    /// running as `uid` reaches the agent and is told what it lacks.
    case secondUser(uid: UInt32)
    /// The full board at rest with a magnetometer calibration loaded (a
    /// good fit, residual 1 %, in the scenario's 48 µT field, no offsets:
    /// the chips are ideal), as `edge-agent calibrate mag` writes one.
    case calibratedMagnetometer
    /// IMU, BMP280 (0x77) and an MS5837-30BA depth sensor (0x76), at rest
    /// out of water; this user holds `motion`, `altitude` and
    /// `submersion.shallow` (or `submersion.full`).
    case diver(full: Bool)
    /// The full board at rest, lying flat, turned `yawDeg` degrees
    /// counter-clockwise (seen from above) from X north, so the top edge
    /// (+Y) faces the compass heading 270 − `yawDeg`; the magnetometer
    /// (0x0d) stops answering `magnetometerLostAfter` seconds after the
    /// agent starts (nil: never).
    case headed(yawDeg: Double, magnetometerLostAfter: Double?)
    /// The diver's board going down: 2 s at the surface, then to 10 m in
    /// 10 s (sea water), and staying there.
    case diving(full: Bool)
    /// IMU and barometer at rest, flat, face up (ideal chips); the sensor
    /// recorder keeps `recorder.sqlite3` next to the configuration (8 MB at
    /// most); this user holds `motion` and `altitude`, and `recorder` when
    /// `entitled`; a second user `otherUID` (when given) holds `recorder`,
    /// and reaches the socket as with ``secondUser(uid:)``. `walking`: the
    /// board is still for 1 s, then walks (1.8 steps/s, a 3 cm bob) for
    /// 120 s, then is still.
    case recorder(entitled: Bool, otherUID: UInt32? = nil, walking: Bool = false)
}

/// An `edge-agent run` child process. ``stop()`` (or the process's exit)
/// ends it; it also stops by itself after `--duration`.
public final class TestAgent: @unchecked Sendable {
    public let kind: TestAgentKind
    public let directory: String
    public let socketPath: String
    public let configPath: String
    private(set) var process = Process()
    private var duration = 900
    let stderrPath: String

    /// The package root: three levels above this file.
    public static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The agent `swift test` built, or `$EDGE_AGENT_TEST_BINARY` (CI's
    /// sanitizer passes point it at the sanitized build, as for the daemon
    /// tests; a second clone's tests so run their own agent, not this
    /// tree's stale one).
    public static var agentBinary: String {
        ProcessInfo.processInfo.environment["EDGE_AGENT_TEST_BINARY"] ?? packageRoot + "/.build/debug/edge-agent"
    }

    init(kind: TestAgentKind) throws {
        self.kind = kind
        var template = Array("/tmp/edge-cm-XXXXXX".utf8CString)
        guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestAgentError("mkdtemp: errno \(errno)")
        }
        directory = String(cString: p)
        socketPath = directory + "/agent.sock"
        configPath = directory + "/edge-agent.json5"
        stderrPath = directory + "/agent.stderr"
        try Self.files(kind).forEach { name, text in
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        var reachable = false
        if case .secondUser = kind { reachable = true }
        if case .recorder(_, _?, _) = kind { reachable = true }
        if reachable {
            // The other user may enter the directory (not list it) and read the files.
            guard chmod(directory, 0o711) == 0 else { throw TestAgentError("chmod \(directory): errno \(errno)") }
            for name in ["board.json5", "scenario.json5", "edge-agent.json5"] { _ = chmod(directory + "/" + name, 0o644) }
        }
    }

    /// Starts an agent and waits (at most 30 s) until its socket accepts.
    public static func start(_ kind: TestAgentKind, duration: Int = 900) throws -> TestAgent {
        let a = try TestAgent(kind: kind)
        try a.launch(duration: duration)
        return a
    }

    func launch(duration: Int) throws {
        self.duration = duration
        guard FileManager.default.isExecutableFile(atPath: Self.agentBinary) else {
            throw TestAgentError("the agent binary \(Self.agentBinary) is missing: build it with `swift build` (swift test builds it)")
        }
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: Self.agentBinary)
        process.arguments = ["run", "--config", configPath, "--quiet", "--duration", String(duration)]
        var env = ProcessInfo.processInfo.environment
        for k in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "EDGE_AGENT_CONFIG", "EDGE_AGENT_SOCKET", "LISTEN_FDS", "LISTEN_PID"] {
            env[k] = nil
        }
        process.environment = env
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: stderrPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        track()
        let end = Date().addingTimeInterval(30)
        while Date() < end {
            if !process.isRunning { throw TestAgentError("the agent exited (\(process.terminationStatus)):\n\(transcript)") }
            if Self.listsDevices(socketPath) { return }
            var none = pollfd()
            _ = poll(&none, 0, 10)
        }
        stop()
        throw TestAgentError("the agent's socket \(socketPath) did not accept within 30 s:\n\(transcript)")
    }

    public var transcript: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
    public var isRunning: Bool { process.isRunning }

    /// Ends the agent with `signal` (SIGKILL: a crash, leaving its socket
    /// file behind) and waits for it; its files stay, for ``relaunch()``.
    public func terminate(with signal: Int32) {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, signal)
        process.waitUntilExit()
        TestAgent.untrack(process.processIdentifier)
    }

    /// Starts the agent again on the same files and socket (after
    /// ``terminate(with:)``), and waits until it accepts. Its scenario starts again
    /// from its beginning.
    public func relaunch() throws {
        terminate(with: SIGKILL)
        process = Process()
        try launch(duration: duration)
    }

    /// SIGTERM, then SIGKILL after 10 s; removes the directory.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            let end = Date().addingTimeInterval(10)
            while process.isRunning && Date() < end {
                var none = pollfd()
                _ = poll(&none, 0, 10)
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        TestAgent.untrack(process.processIdentifier)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The primary IMU's rate as the agent's devices report gives it, Hz
    /// (0 while it idles); nil when the agent does not answer.
    public func imuRateHz() -> Double? {
        guard let line = Self.devicesReply(socketPath),
              let obj = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let list = obj["devices"] as? [[String: Any]],
              let imu = list.first(where: { ($0["kind"] as? String) == "mpu6050" && ($0["id"] as? String)?.hasSuffix("0x68") == true })
        else { return nil }
        return imu["rate_hz"] as? Double
    }

    /// The agent's reply line to a `devices` request tagged `id` (nil: no
    /// answer within 2 s).
    static func devicesReply(_ path: String, id: String = "rate") -> String? {
        reply(path, to: #"{"class":"devices","id":"\#(id)"}"#, id: id)
    }

    /// The agent's reply line to `request` (one JSON object that carries
    /// `"id":"<id>"`), on a connection of its own; nil: no answer within 2 s.
    public func reply(to request: String, id: String) -> String? { Self.reply(socketPath, to: request, id: id) }

    static func reply(_ path: String, to requestLine: String, id: String) -> String? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else { return nil }
        let request = Array(requestLine.utf8) + [10]
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return nil }
        var text = ""
        var buf = [UInt8](repeating: 0, count: 65536)
        let end = Date().addingTimeInterval(2)
        let tag = #""id":"\#(id)""#
        while Date() < end {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            text += String(decoding: buf[0..<n], as: UTF8.self)
            // A whole line carrying the tag.
            for line in text.split(separator: "\n", omittingEmptySubsequences: true).dropLast(text.hasSuffix("\n") ? 0 : 1)
            where line.contains(tag) {
                return String(line)
            }
        }
        return nil
    }

    /// Whether the agent answers a `devices` request with at least one
    /// device (it has started its board).
    static func listsDevices(_ path: String) -> Bool {
        devicesReply(path, id: "ready")?.contains(#""devices":[{"#) ?? false
    }

    /// A connect(2) that succeeds (then closed at once).
    static func accepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    // MARK: the files

    static func files(_ kind: TestAgentKind) -> [(String, String)] {
        let uid = getuid()
        var chips = """
            { kind: "mpu6050", address: 0x68, mounting: ["+x", "+y", "+z"] },
            { kind: "bmp280", address: 0x76 },
        """
        var entitlements = #"["motion", "altitude"]"#
        var faults = ""
        var segments = ""
        var fitness = ""
        var recorder = ""
        var otherClients = ""
        var socketGroup = ""
        var calibration = ""
        var pressure = #"pressure: { mode: "altitude", sea_level_pa: 101325, start_altitude_m: 0 },"#
        var extraFiles: [(String, String)] = []
        switch kind {
        case .restFlat:
            chips += """

                { kind: "qmc5883l", address: 0x0d, mounting: ["-y", "+x", "+z"] },
                { kind: "mpu6050", address: 0x69, role: "accessory", label: "head" },
            """
        case .headed(_, let lost):
            chips += """

                { kind: "qmc5883l", address: 0x0d, mounting: ["-y", "+x", "+z"] },
            """
            if let lost {
                faults = "faults: [ { kind: \"disappear\", name: \"magnetometer lost\", address: 0x0d, from_s: \(lost), to_s: 3600 } ],"
            }
        case .restricted:
            entitlements = #"["altitude"]"#
        case .recorder:
            break   // below
        case .diver(let full), .diving(let full):
            if case .diving = kind {
                pressure = """
                    pressure: { mode: "water", surface_pa: 101325, density_kg_m3: 1025, start_depth_m: 0,
                      profile: [ { hold_s: 2 }, { to_depth_m: 10, duration_s: 10 }, { hold_s: 3600 } ] },
                    """
            }
            chips = """
                { kind: "mpu6050", address: 0x68, mounting: ["+x", "+y", "+z"] },
                { kind: "bmp280", address: 0x77 },
                { kind: "ms5837", address: 0x76 },
            """
            entitlements = full ? #"["motion", "altitude", "submersion.full"]"# : #"["motion", "altitude", "submersion.shallow"]"#
        case .accessoryUnplugged(let from, let to):
            chips += """

                { kind: "qmc5883l", address: 0x0d, mounting: ["-y", "+x", "+z"] },
                { kind: "mpu6050", address: 0x69, role: "accessory", label: "head" },
            """
            faults = "faults: [ { kind: \"disappear\", name: \"accessory unplugged\", address: 0x69, from_s: \(from), to_s: \(to) } ],"
        case .walking:
            entitlements = #"["motion", "altitude", "fitness"]"#
            segments = """
                segments: [
                  { name: "still", duration_s: 1 },
                  { name: "walk", duration_s: 8, walk: { step_hz: 1.8, bob_m: 0.03, sway_m: 0.02 } },
                  { name: "still again", duration_s: 3591 },
                ],
                """
            fitness = #"fitness: { enabled: true, history: { path: "fitness.sqlite3", retention_days: 1 } },"#
        case .secondUser(let other):
            chips += """

                { kind: "qmc5883l", address: 0x0d, mounting: ["-y", "+x", "+z"] },
            """
            otherClients = ", { uid: \(other), entitlements: [\"altitude\"] }"
            socketGroup = ", socket_group: \"nogroup\""
        case .calibratedMagnetometer:
            chips += """

                { kind: "qmc5883l", address: 0x0d, mounting: ["-y", "+x", "+z"] },
            """
            calibration = #"calibration_file: "calibration.json","#
            // No measured_on: used as this board's (with a warning), as a
            // version-1 file would be.
            extraFiles = [("calibration.json", """
                { "version": 2, "frame": "chip", "chips": { "qmc5883l@0x0d": { "mag": {
                  "hard_iron_ut": [0, 0, 0], "soft_iron": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                  "field_strength_ut": 48.0, "residual": 0.01, "created": "2026-12-01T00:00:00Z" } } } }
                """)]
        }
        if case .recorder(let entitled, let other, let walking) = kind {
            if walking {
                segments = """
                    segments: [
                      { name: "still", duration_s: 1 },
                      { name: "walk", duration_s: 120, walk: { step_hz: 1.8, bob_m: 0.03, sway_m: 0.02 } },
                      { name: "still again", duration_s: 3479 },
                    ],
                    """
            }
            entitlements = entitled ? #"["motion", "altitude", "recorder"]"# : #"["motion", "altitude"]"#
            if let other {
                otherClients = ", { uid: \(other), entitlements: [\"recorder\"] }"
                socketGroup = ", socket_group: \"nogroup\""
            }
            recorder = #"recorder: { path: "recorder.sqlite3", max_mb: 8 },"#
        }
        var yaw = 0.0
        if case .headed(let y, _) = kind { yaw = y }
        let board = """
            // CoreMotion test board (TestAgent.swift).
            {
              name: "CoreMotion test board",
              bus: "simulated",
              simulation: { scenario: "scenario.json5" },
              chips: [
            \(chips)
              ],
            }
            """
        let scenario = """
            // At rest, level, face up, X north (identity attitude), sea level, 20 °C.
            // Ideal chips (no noise, no offsets): the tests check conventions
            // and delivery, not the engine's accuracy.
            {
              name: "coremotion-rest-flat",
              description: "CoreMotion tests: still and level for an hour.",
              duration_s: 3600,
              seed: 9,
              board: { start: { roll_deg: 0, pitch_deg: 0, yaw_deg: \(yaw) }, \(segments) },
              accessory: { address: 0x69, relative_to: "earth", start: { roll_deg: 0, pitch_deg: 0, heading_deg: 0 } },
              imperfections: { default: "ideal" },
              environment: {
                field: { intensity_ut: 48, inclination_deg: 60, declination_deg: 0 },
                \(pressure)
                temperature: { start_c: 20 },
              },
              \(faults)
            }
            """
        let config = """
            // CoreMotion test agent (TestAgent.swift).
            {
              board: "board.json5",
              sensors: {
                mpu6050: { sample_rate_hz: 200, dlpf_bandwidth_hz: 44 },
                bmp280: { mode: "normal", pressure_oversampling: 16, temperature_oversampling: 2, iir_filter: 0, standby_ms: 0.5 },
                qmc5883l: { mode: "continuous", output_rate_hz: 50 },
              },
              loop: { imu_batch: 0, data_ready: false, realtime: false },
              fusion: { frame: "xMagneticNorthZVertical" },
              altimeter: { sea_level_pa: 101325, sea_level_uncertainty_pa: 1000 },
              service: { socket_path: "agent.sock", delivery_interval_ms: 20, demand_raise_limit: 100000, max_clients_per_uid: 128\(socketGroup) },
              clients: [ { uid: \(uid), entitlements: \(entitlements) }\(otherClients) ],
              always_on: [],
              faults: { reprobe_interval_s: 0.05 },
              \(fitness)
              \(recorder)
              \(calibration)
            }
            """
        return [("board.json5", board), ("scenario.json5", scenario), ("edge-agent.json5", config)] + extraFiles
    }

    // MARK: children left behind

    nonisolated(unsafe) static var children: [Int32: String] = [:]
    nonisolated(unsafe) static var exitHook = false
    static let childrenLock = NSLock()

    func track() {
        TestAgent.childrenLock.withLock {
            if !TestAgent.exitHook { atexit { TestAgent.killAll() }; TestAgent.exitHook = true }
            TestAgent.children[process.processIdentifier] = directory
        }
    }
    static func untrack(_ pid: Int32) { _ = childrenLock.withLock { children.removeValue(forKey: pid) } }
    /// At exit: the agents still running (the shared one) stop, their files go.
    static func killAll() {
        for (pid, dir) in childrenLock.withLock({ children }) {
            kill(pid, SIGTERM)
            try? FileManager.default.removeItem(atPath: dir)
        }
    }
}

/// Which agent the process's Core Motion uses. The shared agent (rest,
/// flat) serves any number of tests at once; a test with an agent of its
/// own has the data source to itself while it runs.
public actor AgentAccess {
    public static let shared = AgentAccess()
    private var readers = 0
    private var writer = false
    private var queue: [(exclusive: Bool, continuation: CheckedContinuation<Void, Never>)] = []
    private var sharedAgent: TestAgent?

    func acquire(exclusive: Bool) async {
        if queue.isEmpty && !writer && (!exclusive || readers == 0) {
            if exclusive { writer = true } else { readers += 1 }
            return
        }
        await withCheckedContinuation { queue.append((exclusive, $0)) }
    }

    func release(exclusive: Bool) {
        if exclusive { writer = false } else { readers -= 1 }
        while let next = queue.first, !writer, !next.exclusive || readers == 0 {
            queue.removeFirst()
            if next.exclusive { writer = true } else { readers += 1 }
            next.continuation.resume()
            if next.exclusive { break }
        }
    }

    func shared() throws -> TestAgent {
        if let a = sharedAgent, a.isRunning { return a }
        let a = try TestAgent.start(.restFlat)
        sharedAgent = a
        return a
    }
}

/// Runs `body` with the process's Core Motion on the shared agent (at rest,
/// flat, face up), alongside other tests that use it; `alone`: while no
/// other test uses it (the agent's rates follow demand, so a test that
/// checks intervals keeps other tests from re-rating the IMU under it).
public func withSharedAgent<T>(alone: Bool = false, _ body: (TestAgent) async throws -> T) async throws -> T {
    await AgentAccess.shared.acquire(exclusive: alone)
    do {
        let agent = try await AgentAccess.shared.shared()
        EdgeMotionAgent.socketPath = agent.socketPath
        let r = try await body(agent)
        await AgentAccess.shared.release(exclusive: alone)
        return r
    } catch {
        await AgentAccess.shared.release(exclusive: alone)
        throw error
    }
}

/// Runs `body` with the process's Core Motion on an agent of its own
/// (started here, stopped after), with the data source to itself.
public func withAgent<T>(_ kind: TestAgentKind, _ body: (TestAgent) async throws -> T) async throws -> T {
    await AgentAccess.shared.acquire(exclusive: true)
    var agent: TestAgent?
    do {
        let a = try TestAgent.start(kind)
        agent = a
        EdgeMotionAgent.socketPath = a.socketPath
        let r = try await body(a)
        EdgeMotionAgent.socketPath = nil
        a.stop()
        await AgentAccess.shared.release(exclusive: true)
        return r
    } catch {
        EdgeMotionAgent.socketPath = nil
        agent?.stop()
        await AgentAccess.shared.release(exclusive: true)
        throw error
    }
}

/// Runs `body` with the process's Core Motion pointed at a socket where no
/// agent listens (a fresh directory, nothing in it) and no in-process
/// agent allowed to start, with the data source to itself.
public func withNoAgent<T>(_ body: () async throws -> T) async throws -> T {
    await AgentAccess.shared.acquire(exclusive: true)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("edge-cm-none-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        EdgeMotionAgent.socketPath = directory + "/agent.sock"
        let r = try await body()
        EdgeMotionAgent.socketPath = nil
        try? FileManager.default.removeItem(atPath: directory)
        await AgentAccess.shared.release(exclusive: true)
        return r
    } catch {
        EdgeMotionAgent.socketPath = nil
        try? FileManager.default.removeItem(atPath: directory)
        await AgentAccess.shared.release(exclusive: true)
        throw error
    }
}

/// A socket that accepts connections and never says anything: an agent
/// that hangs (stopped in a debugger, swapped out, stuck starting). A
/// client connects at once and then waits for a `version` line that never
/// comes.
public final class HungAgent: @unchecked Sendable {
    public let socketPath: String
    private let directory: String
    private var serving: ListeningThread?
    private let lock = NSLock()
    private var accepted: [Int32] = []
    private var closed = false

    public init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("edge-cm-hung-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        socketPath = directory + "/agent.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestAgentError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { throw TestAgentError("socket path too long: \(socketPath)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let e = errno
            close(fd)
            throw TestAgentError("bind/listen \(socketPath): errno \(e)")
        }
        // The listener is the thread's to close (ListeningThread says why).
        serving = ListeningThread(listener: fd) { [self] listener in acceptLoop(listener) }
    }

    /// Accepts every connection and keeps it open, saying nothing.
    private func acceptLoop(_ listener: Int32) {
        while true {
            let c = accept(listener, nil, nil)
            let done = lock.withLock { () -> Bool in
                if c >= 0 && !closed { accepted.append(c) } else if c >= 0 { close(c) }
                return closed
            }
            if done || (c < 0 && errno != EINTR) { return }
        }
    }

    public func stop() {
        let fds: [Int32] = lock.withLock {
            closed = true
            defer { accepted.removeAll() }
            return accepted
        }
        serving?.stop()
        for c in fds { close(c) }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Runs `body` with the process's Core Motion pointed at a ``HungAgent``
/// (a socket that accepts and never answers), with the data source to itself.
public func withHungAgent<T>(_ body: () async throws -> T) async throws -> T {
    await AgentAccess.shared.acquire(exclusive: true)
    var hung: HungAgent?
    do {
        let h = try HungAgent()
        hung = h
        EdgeMotionAgent.socketPath = h.socketPath
        let r = try await body()
        EdgeMotionAgent.socketPath = nil
        h.stop()
        await AgentAccess.shared.release(exclusive: true)
        return r
    } catch {
        EdgeMotionAgent.socketPath = nil
        hung?.stop()
        await AgentAccess.shared.release(exclusive: true)
        throw error
    }
}

/// Waits (polling every 10 ms, at most `seconds`) until `condition` holds.
/// The deadline only ends a wait that would hang: it returns as soon as the
/// condition holds. 30 s, not 10: on a two-core machine with a fuzzer on one
/// core and the suite's CPU-bound models on the other, an agent's start-up
/// and first samples once took longer than 10 s (18 of 26 samples came).
public func eventually(seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}

/// Runs `body` with no agent at the configuration's socket, so the library
/// starts one in this process (with the test board at rest), with the data
/// source to itself.
public func withInProcessFallback<T>(_ kind: TestAgentKind = .restFlat, _ body: () async throws -> T) async throws -> T {
    await AgentAccess.shared.acquire(exclusive: true)
    EdgeMotionInProcessAgent.install()
    var directory: String?
    do {
        let files = try TestAgent(kind: kind) // its files; no process
        directory = files.directory
        EdgeMotionAgent.socketPath = nil
        EdgeMotionAgent.configurationPath = files.configPath
        let r = try await body()
        EdgeMotionAgent.configurationPath = nil
        try? FileManager.default.removeItem(atPath: files.directory)
        await AgentAccess.shared.release(exclusive: true)
        return r
    } catch {
        EdgeMotionAgent.configurationPath = nil
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
        await AgentAccess.shared.release(exclusive: true)
        throw error
    }
}

/// Runs `body` with the process's Core Motion to itself (no other test uses
/// it meanwhile), starting from ``EdgeMotionAgent``'s defaults (other
/// tests leave `socketPath` set), and back to them after.
public func withDataSourceToItself<T>(_ body: () async throws -> T) async throws -> T {
    await AgentAccess.shared.acquire(exclusive: true)
    func reset() {
        EdgeMotionAgent.socketPath = nil
        EdgeMotionAgent.configurationPath = nil
        EdgeMotionAgent.allowsInProcessAgent = true
    }
    EdgeMotionInProcessAgent.install()
    reset()
    do {
        let r = try await body()
        reset()
        await AgentAccess.shared.release(exclusive: true)
        return r
    } catch {
        reset()
        await AgentAccess.shared.release(exclusive: true)
        throw error
    }
}

/// A directory of its own under /tmp with the given files, removed by
/// ``remove()``.
public struct ScratchFiles: Sendable {
    public let directory: String
    public init(_ files: [String: String]) throws {
        var template = Array("/tmp/edge-cm-files-XXXXXX".utf8CString)
        guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestAgentError("mkdtemp: errno \(errno)")
        }
        directory = String(cString: p)
        for (name, text) in files { try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8) }
    }
    public func path(_ name: String) -> String { directory + "/" + name }
    public func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
