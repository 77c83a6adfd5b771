#if canImport(Glibc)
import Glibc
#endif
import EdgeValues
import EdgeProtocol
@testable import EdgeService

/// A unique socket path under /tmp (short: sun_path holds 107 bytes).
func uniqueSocketPath(_ tag: String = "t") -> String {
    "/tmp/edge-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
}

func monotonicMs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

func monotonicNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
}

/// A real client socket with bounded, poll-based reads.
final class TestClient {
    private(set) var fd: Int32
    private var buffer: [UInt8] = []
    private(set) var closed = false

    init(path: String, receiveBuffer: Int? = nil) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError(description: "socket: errno \(errno)") }
        if let receiveBuffer {
            var v = Int32(receiveBuffer)
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, socklen_t(4))
        }
        guard let addr = Posix.unixAddress(path) else { throw HarnessError(description: "path") }
        let r = Posix.withSockaddr(addr) { connect(fd, $0, $1) }
        guard r == 0 else {
            let e = errno
            close(fd)
            fd = -1 // deinit must not close it again
            throw HarnessError(description: "connect \(path): errno \(e)")
        }
    }

    deinit { disconnect() }

    /// Closes the socket once (tests run in parallel in one process: a
    /// second close could hit another test's descriptor).
    func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    func send(_ text: String) {
        var bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.send(fd, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { if errno == EINTR { continue }; return }
            off += n
        }
    }

    func request(_ json: String) { send(json + "\n") }

    /// Next line (without newline), or nil on EOF / reset / timeout.
    func readLine(timeoutMs: Int64 = waitTimeoutMs) -> String? {
        let deadline = monotonicMs() + timeoutMs
        while true {
            if let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return line
            }
            if closed { return nil }
            let left = deadline - monotonicMs()
            if left <= 0 { return nil }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, Int32(left))
            if r < 0 && errno == EINTR { continue }
            if r <= 0 { return nil }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { closed = true; continue }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// Next message, parsed.
    func readMessage(timeoutMs: Int64 = waitTimeoutMs) -> JSONValue? {
        guard let line = readLine(timeoutMs: timeoutMs) else { return nil }
        return try? JSONValue.parse(Array(line.utf8))
    }

    /// Reads until a message of `cls` arrives; returns it and the messages skipped.
    func waitFor(_ cls: String, timeoutMs: Int64 = waitTimeoutMs) -> (JSONValue?, [JSONValue]) {
        var skipped: [JSONValue] = []
        let deadline = monotonicMs() + timeoutMs
        while monotonicMs() < deadline {
            guard let m = readMessage(timeoutMs: max(1, deadline - monotonicMs())) else { break }
            if m.string("class") == cls { return (m, skipped) }
            skipped.append(m)
        }
        return (nil, skipped)
    }

    /// Sends a ping and returns every message received before its pong: the
    /// service thread drains the sample ring before it reads requests, so all
    /// samples published before the ping are in this list.
    func barrier(timeoutMs: Int64 = waitTimeoutMs) -> [JSONValue]? {
        request(#"{"class":"ping","id":"barrier"}"#)
        let (pong, before) = waitFor("pong", timeoutMs: timeoutMs)
        return pong == nil ? nil : before
    }

    /// Waits for EOF or reset; true if the connection closed.
    func waitClosed(timeoutMs: Int64 = waitTimeoutMs) -> Bool {
        let deadline = monotonicMs() + timeoutMs
        while monotonicMs() < deadline {
            if readLine(timeoutMs: max(1, deadline - monotonicMs())) == nil { return closed }
        }
        return closed
    }

    /// Reads whatever is available without waiting, returning complete lines.
    func drainAvailable() -> [String] {
        var lines: [String] = []
        while let l = readLine(timeoutMs: 0) { lines.append(l) }
        return lines
    }
}

extension JSONValue {
    func string(_ key: String) -> String? {
        if case .string(let s)? = self[key] { return s }
        return nil
    }
    func number(_ key: String) -> Double? {
        if case .number(let d, _)? = self[key] { return d }
        return nil
    }
    func bool(_ key: String) -> Bool? {
        if case .bool(let b)? = self[key] { return b }
        return nil
    }
    func vector(_ key: String) -> (Double, Double, Double)? {
        guard let v = self[key], let x = v.number("x"), let y = v.number("y"), let z = v.number("z") else { return nil }
        return (x, y, z)
    }
    var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}

/// Starts a server on a unique path; the caller stops it.
func makeServer(_ tag: String = "s", policy: EntitlementPolicy = .defaultPolicy(),
                devices: [DeviceInfo] = [],
                configure: (inout ServiceConfiguration) -> Void = { _ in },
                onDemandChange: (@Sendable ([StreamName: Double]) -> Void)? = nil) throws -> ServiceServer {
    var config = ServiceConfiguration(socketPath: uniqueSocketPath(tag))
    configure(&config)
    return try ServiceServer(configuration: config, policy: policy, devices: devices, onDemandChange: onDemandChange)
}

/// Peer credentials for a server in a test: one process cannot connect as
/// several users, so each accepted connection takes the next uid of a
/// script (then the test's own uid). Connect one client at a time (and read
/// its version line) so connections are accepted in script order.
final class ScriptedCredentials: Sendable {
    private let script: Locked<[UInt32]>
    init(_ uids: [UInt32]) { script = Locked(uids.reversed()) }
    func enqueue(_ uids: [UInt32]) { script.withLock { $0.insert(contentsOf: uids.reversed(), at: 0) } }

    var source: ServiceCore.PeerCredentials {
        { fd in
            guard let real = ServiceCore.socketPeerCredentials(fd) else { return nil }
            let uid = self.script.withLock { $0.popLast() } ?? real.uid
            return (real.pid, uid, real.gid)
        }
    }
}

/// Starts a server on a unique path whose clients' uids come from `credentials`.
func makeServer(_ tag: String, policy: EntitlementPolicy, credentials: ScriptedCredentials,
                configure: (inout ServiceConfiguration) -> Void = { _ in }) throws -> ServiceServer {
    var config = ServiceConfiguration(socketPath: uniqueSocketPath(tag))
    configure(&config)
    return try ServiceServer(configuration: config, policy: policy, devices: [], onDemandChange: nil,
                             peerCredentials: credentials.source)
}

/// How long a client's reads wait by default: every wait with it is for
/// something that must come (a reply, a close, the pong of a barrier), so
/// it only bounds a failure and is generous. (It was 5 s, and under
/// ThreadSanitizer beside a plain test run a client of a server just
/// started waited longer for its version line.)
let waitTimeoutMs: Int64 = 30_000

/// How long a new client waits for the version line.
let versionLineTimeoutMs: Int64 = 60_000

/// Connects and reads the version line and, for a refused client, its error.
/// Returns the error's code (nil: admitted, checked with a barrier).
func connectExpectingRefusal(_ server: ServiceServer) throws -> (TestClient, String?) {
    let c = try TestClient(path: server.socketPath)
    guard let v = c.readMessage(timeoutMs: versionLineTimeoutMs), v.string("class") == "version" else {
        throw HarnessError(description: "no version line")
    }
    c.request(#"{"class":"ping","id":"admitted?"}"#)
    guard let m = c.readMessage() else { throw HarnessError(description: "no reply after the version line") }
    switch m.string("class") {
    case "pong": return (c, nil)
    case "error":
        guard m.bool("closesConnection") == true, c.waitClosed() else {
            throw HarnessError(description: "a refused client must be closed: \(m)")
        }
        return (c, m.string("code"))
    default: throw HarnessError(description: "unexpected \(m)")
    }
}

/// Connects and consumes the version line.
func connectClient(_ server: ServiceServer, receiveBuffer: Int? = nil) throws -> TestClient {
    let c = try TestClient(path: server.socketPath, receiveBuffer: receiveBuffer)
    guard let v = c.readMessage(timeoutMs: versionLineTimeoutMs), v.string("class") == "version" else {
        throw HarnessError(description: "no version line")
    }
    return c
}

func subscribe(_ c: TestClient, _ stream: String, interval: Double? = nil) -> JSONValue? {
    if let interval {
        c.request(#"{"class":"subscribe","stream":"\#(stream)","interval_s":\#(interval)}"#)
    } else {
        c.request(#"{"class":"subscribe","stream":"\#(stream)"}"#)
    }
    return c.waitFor("subscribed").0
}

let baseTimestamp: UInt64 = 5_000_000_000
let period100Hz: UInt64 = 10_000_000

func motionSample(_ i: Int) -> DeviceMotionSample {
    DeviceMotionSample(timestampNs: baseTimestamp + UInt64(i) * period100Hz,
                       attitude: Quaternion(w: 1, x: 0, y: 0, z: 0),
                       gravity: Vector3(x: 0, y: 0, z: -9.80665),
                       userAcceleration: Vector3(x: 0.01 * Double(i), y: 0, z: 0),
                       rotationRate: Vector3(x: 0, y: 0, z: 0.5),
                       magneticField: Vector3(x: 20.5, y: -3.25, z: -40),
                       magneticFieldAccuracy: .high, headingDeg: 90,
                       referenceFrame: .xMagneticNorthZVertical)
}

func accelerometerSample(_ i: Int) -> AccelerometerSample {
    AccelerometerSample(timestampNs: baseTimestamp + UInt64(i) * period100Hz,
                        acceleration: Vector3(x: 0, y: 0, z: 9.80665))
}

/// A service loop the test drives itself, one step at a time, with no
/// service thread: what each step did is visible at once, with no waiting.
final class ManualLoop {
    let core: ServiceCore
    let loop: ServiceLoop
    var path: String { core.configuration.socketPath }

    init(policy: EntitlementPolicy = .defaultPolicy(), credentials: ScriptedCredentials = ScriptedCredentials([]),
         configure: (inout ServiceConfiguration) -> Void = { _ in }) throws {
        var config = ServiceConfiguration(socketPath: uniqueSocketPath("m"))
        config.shutdownGraceNs = 0
        configure(&config)
        try config.validate()
        core = try ServiceCore(configuration: config, policy: policy, devices: [], onDemandChange: nil,
                               peerCredentials: credentials.source)
        loop = ServiceLoop(core: core, listener: try ListeningSocket.bind(config))
    }

    /// Closes every client and the socket (the loop's own shutdown).
    func close() { loop.shutdown() }

    /// Whether connections are accepted (`ServiceServer(acceptingClients:)`,
    /// `startAcceptingClients()`).
    var acceptsClients: Bool {
        get { core.acceptingClients.load(ordering: .acquiring) }
        set { core.acceptingClients.store(newValue, ordering: .releasing) }
    }

    /// One cycle of the service thread: the poll set, a poll of at most
    /// `timeoutMs` (0: what is ready now), and what it found handled.
    /// Returns the poll's result (the descriptors ready).
    @discardableResult
    func cycle(timeoutMs: Int32 = 0) -> Int32 {
        _ = loop.preparePoll()
        var fds = loop.pollFDs
        let ready = poll(&fds, nfds_t(fds.count), timeoutMs)
        loop.pollFDs = fds
        loop.handlePolled()
        return ready
    }

    /// What answers `history`, `record` and `recorded` requests.
    func setSources(history: (any HistorySource)?, recorder: (any RecorderSource)?) {
        core.historySource.withLock { $0 = history }
        core.recorderSource.withLock { $0 = recorder }
    }

    /// Whether the last poll set asked the listener for connections.
    var listenerPolled: Bool { loop.pollFDs.count > 1 && loop.pollFDs[1].events != 0 }
}
