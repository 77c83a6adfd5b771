// The harness of the daemon integration tests (DaemonTests.swift): the real
// `edge-agent` binary in a child process, a fake NOTIFY_SOCKET, and protocol
// clients on real Unix sockets. No tests here; every wait is bounded and
// polls with a timeout, nothing sleeps to "let things happen".
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// MARK: - time

/// CLOCK_MONOTONIC now, ns: the clock of the agent's `timestamp_ns`.
func daemonMonotonicNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// A point in time on CLOCK_MONOTONIC after which a wait gives up.
struct DaemonDeadline {
    let endNs: UInt64
    init(seconds: Double) { endNs = daemonMonotonicNs() + UInt64(seconds * 1e9) }
    var expired: Bool { daemonMonotonicNs() >= endNs }
    /// Milliseconds left (0 when expired), for poll(2).
    var remainingMs: Int32 {
        let now = daemonMonotonicNs()
        return now >= endNs ? 0 : Int32(clamping: (endNs - now + 999_999) / 1_000_000)
    }
}

/// Waits on nothing for at most `ms` (poll with no descriptors): the pause
/// between two looks at a condition the test cannot wait on directly, such
/// as a child's exit or a file appearing.
func daemonPause(ms: Int32) {
    var none = pollfd()
    _ = poll(&none, 0, ms)
}

struct DaemonTestError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

// MARK: - paths

enum DaemonPaths {
    /// The package root: three levels above this file.
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static var fixtures: String { packageRoot + "/Tests/Fixtures/agent" }

    /// The agent binary `swift build` / `swift test` produce, or
    /// `$EDGE_AGENT_TEST_BINARY` (CI points it at the sanitized build when it
    /// runs the suite under a sanitizer, so the daemon runs sanitized too).
    static var agentBinary: String {
        ProcessInfo.processInfo.environment["EDGE_AGENT_TEST_BINARY"] ?? packageRoot + "/.build/debug/edge-agent"
    }

    /// A fresh private directory under /tmp (not $TMPDIR: sun_path holds
    /// only 107 bytes, and the socket paths live in here).
    static func makeTemporaryDirectory(_ tag: String) throws -> String {
        var template = Array("/tmp/edge-\(tag)-XXXXXX".utf8CString)
        guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw DaemonTestError("mkdtemp: \(String(cString: strerror(errno)))")
        }
        return String(cString: p)
    }

    static func removeTree(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    static func isSocket(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK
    }

    static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }
}

/// The sqlite3 shell's answer to `sql` on `db`, read-only (the second
/// reader of the files the agent writes). Reads before waiting: a long
/// answer is more than a pipe holds.
func sqlite3Shell(_ db: String, _ sql: String) -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    p.arguments = ["-readonly", db, sql]
    let out = Pipe(); p.standardOutput = out; p.standardError = Pipe()
    guard (try? p.run()) != nil else { return "" }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

// MARK: - the agent process

/// `edge-agent` in a child process, stdout and stderr going to files.
/// Kill it with ``kill()`` in a `defer`: a failing test never leaves it behind.
final class AgentProcess {
    let process = Process()
    let stdoutPath: String
    let stderrPath: String
    /// CLOCK_MONOTONIC just before the child started.
    private(set) var startedNs: UInt64 = 0

    init(arguments: [String], environment: [String: String], outputDirectory: String) {
        stdoutPath = outputDirectory + "/agent.stdout"
        stderrPath = outputDirectory + "/agent.stderr"
        process.executableURL = URL(fileURLWithPath: DaemonPaths.agentBinary)
        process.arguments = arguments
        process.environment = environment
    }

    /// The test process's environment without anything that would steer the
    /// agent (a real systemd socket, another configuration), plus `extra`.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "EDGE_AGENT_CONFIG", "LISTEN_FDS", "LISTEN_PID"] {
            env[key] = nil
        }
        for (k, v) in extra { env[k] = v }
        return env
    }

    func start() throws {
        guard FileManager.default.isExecutableFile(atPath: DaemonPaths.agentBinary) else {
            throw DaemonTestError("""
                the agent binary \(DaemonPaths.agentBinary) is missing: the daemon tests run the real \
                executable. Build it first with `swift build` (swift test normally builds it).
                """)
        }
        FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        FileManager.default.createFile(atPath: stderrPath, contents: nil)
        guard let out = FileHandle(forWritingAtPath: stdoutPath), let err = FileHandle(forWritingAtPath: stderrPath) else {
            throw DaemonTestError("cannot open \(stdoutPath) / \(stderrPath)")
        }
        // The child has its own copies once it runs; ours close here.
        defer { try? out.close(); try? err.close() }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        startedNs = daemonMonotonicNs()
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    var stdout: String { DaemonPaths.read(stdoutPath) }
    var stderr: String { DaemonPaths.read(stderrPath) }

    func signal(_ sig: Int32) {
        if process.isRunning { Glibc.kill(process.processIdentifier, sig) }
    }

    /// Waits for the child to exit; its status, or nil if it still runs at the deadline.
    func waitForExit(_ deadline: DaemonDeadline) -> (status: Int32, bySignal: Bool)? {
        while process.isRunning {
            if deadline.expired { return nil }
            daemonPause(ms: 10)
        }
        return (process.terminationStatus, process.terminationReason == .uncaughtSignal)
    }

    /// SIGKILL if it still runs, and reap it (bounded).
    func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        _ = waitForExit(DaemonDeadline(seconds: 10))
    }

    /// What the agent printed, for failure messages.
    var transcript: String { "--- agent stdout ---\n\(stdout)--- agent stderr ---\n\(stderr)" }
}

// MARK: - fake NOTIFY_SOCKET

/// A SOCK_DGRAM socket bound at a path the agent gets as NOTIFY_SOCKET; the
/// test reads the sd_notify datagrams from it.
final class FakeSystemdNotify {
    let fd: Int32
    let path: String
    private(set) var datagrams: [String] = []

    /// The socket is stored only once bound (as in ``DaemonClient``: a
    /// throw after every stored property is set runs deinit, which would
    /// close it a second time and unlink a path this never bound).
    init(path: String) throws {
        self.path = path
        let s = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw DaemonTestError("notify socket: \(String(cString: strerror(errno)))") }
        var addr: sockaddr_un
        do { addr = try unixAddress(path) } catch { close(s); throw error }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let e = errno
            close(s)
            throw DaemonTestError("bind \(path): \(String(cString: strerror(e)))")
        }
        fd = s
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// Takes every queued datagram without waiting.
    func drain() {
        while receive(timeoutMs: 0) {}
    }

    /// Receives one datagram into ``datagrams``; false if none came in time.
    @discardableResult
    func receive(timeoutMs: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let r = poll(&p, 1, timeoutMs)
        guard r > 0 else { return false }
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard n >= 0 else { return false }
        datagrams.append(String(decoding: buf[0..<n], as: UTF8.self))
        return true
    }

    /// Whether some datagram carries the assignment `line` (e.g. "READY=1").
    func has(_ line: String) -> Bool {
        datagrams.contains { $0.split(separator: "\n").contains { $0 == line } }
    }

    /// Receives until a datagram carries `line`; false at the deadline.
    func waitFor(_ line: String, _ deadline: DaemonDeadline, while condition: () -> Bool = { true }) -> Bool {
        while !has(line) {
            if deadline.expired || !condition() { return has(line) }
            receive(timeoutMs: min(deadline.remainingMs, 50))
        }
        return true
    }
}

func unixAddress(_ path: String) throws -> sockaddr_un {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
        throw DaemonTestError("socket path too long: \(path)")
    }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        raw.initializeMemory(as: UInt8.self, repeating: 0)
        raw.copyBytes(from: bytes)
    }
    return addr
}

// MARK: - protocol messages

/// One line from the agent: the text and its parsed JSON object.
struct DaemonMessage: @unchecked Sendable, CustomStringConvertible {
    let line: String
    let object: [String: Any]
    /// CLOCK_MONOTONIC when the test read the line.
    let receivedNs: UInt64

    init?(line: String, receivedNs: UInt64) {
        guard let obj = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return nil }
        self.line = line
        object = obj
        self.receivedNs = receivedNs
    }

    var description: String { line }
    var cls: String? { object["class"] as? String }
    var stream: String? { object["stream"] as? String }
    func string(_ key: String) -> String? { object[key] as? String }
    func number(_ key: String) -> Double? { (object[key] as? NSNumber)?.doubleValue }
    func bool(_ key: String) -> Bool? { object[key] as? Bool }
    func isNull(_ key: String) -> Bool { object[key] is NSNull }
    func has(_ key: String) -> Bool { object[key] != nil }
    func dictionary(_ key: String) -> [String: Any]? { object[key] as? [String: Any] }

    /// `{x, y, z}` (or any named components) of an object-valued key.
    func components(_ key: String, _ names: [String] = ["x", "y", "z"]) -> [Double]? {
        guard let d = dictionary(key) else { return nil }
        var out: [Double] = []
        for n in names {
            guard let v = (d[n] as? NSNumber)?.doubleValue, v.isFinite else { return nil }
            out.append(v)
        }
        return out
    }

    /// An unsigned integer value read from the line's text itself, digit by
    /// digit, so a `timestamp_ns` beyond 2^53 keeps every nanosecond.
    func integer(_ key: String) -> UInt64? {
        guard let range = line.range(of: "\"\(key)\":") else { return nil }
        let digits = line[range.upperBound...].prefix { $0.isASCII && $0.isNumber }
        return digits.isEmpty ? nil : UInt64(digits)
    }

    var timestampNs: UInt64? { integer("timestamp_ns") }
}

// MARK: - a protocol client

/// A client on the agent's socket: blocking connect, bounded poll-based reads.
final class DaemonClient {
    let fd: Int32
    let name: String
    private var buffer: [UInt8] = []
    /// True once the agent closed the connection (EOF or reset).
    private(set) var closed = false
    /// Every message read, in order.
    private(set) var received: [DaemonMessage] = []
    /// Lines that were not a JSON object (a protocol violation).
    private(set) var garbage: [String] = []

    /// The socket is this object's only once it is connected: a class whose
    /// initializer throws after every stored property is set runs `deinit`,
    /// so an `fd` stored before a failed connect was closed twice (here and
    /// in `deinit`). The second close hit whatever descriptor another test's
    /// thread had been given that number in between: CI saw a client's ring
    /// descriptor, just received, fail `fstat` while this retried a connect.
    init(path: String, name: String) throws {
        self.name = name
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw DaemonTestError("\(name): socket: \(String(cString: strerror(errno)))") }
        var addr: sockaddr_un
        do { addr = try unixAddress(path) } catch { close(s); throw error }
        var r: Int32
        repeat {
            r = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        } while r != 0 && errno == EINTR
        guard r == 0 else {
            let e = errno
            close(s)
            throw DaemonTestError("\(name): connect \(path): \(String(cString: strerror(e)))")
        }
        fd = s
    }

    deinit { close(fd) }

    /// Writes all of `text` (bounded: gives up at the deadline).
    @discardableResult
    func send(_ text: String, _ deadline: DaemonDeadline = DaemonDeadline(seconds: 10)) -> Bool {
        let bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if n > 0 { off += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), !deadline.expired {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, min(deadline.remainingMs, 100))
                continue
            }
            return false
        }
        return true
    }

    /// Sends one request line.
    @discardableResult
    func request(_ json: String) -> Bool { send(json + "\n") }

    /// The next message, or nil on EOF, reset or at the deadline.
    func next(_ deadline: DaemonDeadline) -> DaemonMessage? {
        while true {
            if let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                guard let m = DaemonMessage(line: line, receivedNs: daemonMonotonicNs()) else {
                    garbage.append(line)
                    continue
                }
                received.append(m)
                return m
            }
            if closed { return nil }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, deadline.remainingMs)
            if r < 0 && errno == EINTR { continue }
            if r <= 0 { return nil }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { closed = true; continue }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// Reads until a message satisfies `match`; nil at EOF or the deadline.
    func waitFor(_ deadline: DaemonDeadline, _ match: (DaemonMessage) -> Bool) -> DaemonMessage? {
        while let m = next(deadline) {
            if match(m) { return m }
        }
        return nil
    }

    /// Reads until a message of class `cls` (and `id`, when given) arrives.
    func waitFor(class cls: String, id: String? = nil, _ deadline: DaemonDeadline) -> DaemonMessage? {
        waitFor(deadline) { m in m.cls == cls && (id == nil || m.string("id") == id) }
    }

    /// Reads (and keeps) everything until the agent closes the connection;
    /// true if it did before the deadline.
    func waitClosed(_ deadline: DaemonDeadline) -> Bool {
        while next(deadline) != nil {}
        return closed
    }
}
