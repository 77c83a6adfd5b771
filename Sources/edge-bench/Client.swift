// Protocol clients for the benchmarks: a Unix-socket connection speaking the
// agent's line-delimited JSON (EdgeService.docc/ClientProtocol.md), read on
// its own pthread with poll(2) and bounded waits.
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import EdgeEngine   // LoopThread: a joinable pthread

enum UnixSocket {
    /// A connected, blocking stream socket.
    static func connect(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            close(fd); throw BenchError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard r == 0 else {
            let e = errno
            close(fd)
            throw BenchError("connect \(path): \(String(cString: strerror(e)))")
        }
        return fd
    }

    /// Writes one request line (bounded: the socket is fresh, requests are tiny).
    static func send(_ fd: Int32, _ line: String) throws {
        var bytes = Array((line + "\n").utf8)
        let ok = bytes.withUnsafeMutableBytes { b -> Bool in
            var off = 0
            while off < b.count {
                let n = Glibc.send(fd, b.baseAddress! + off, b.count - off, Int32(MSG_NOSIGNAL))
                if n < 0 { if errno == EINTR { continue }; return false }
                off += n
            }
            return true
        }
        if !ok { throw BenchError("send: \(String(cString: strerror(errno)))") }
    }
}

/// What a reading client saw.
struct ClientTally: Sendable {
    /// Sample lines per stream name.
    var samples: [String: Int] = [:]
    /// Capture timestamps of the tracked stream, in arrival order.
    var timestamps: [UInt64] = []
    var versionSeen = false
    var subscribedReplies = 0
    var errors: [String] = []
    var shutdownSeen = false
    /// `dropped` of this connection's `stats` reply, if one was asked for.
    var statsDropped: Int?
    var statsDelivered: Int?
    var bytes = 0
    var lines = 0
    var endedBy = ""
}

/// A client that subscribes to streams and reads everything on its own
/// thread until the agent closes the connection or ``stop()`` is called.
final class ReadingClient: @unchecked Sendable {
    let fd: Int32
    let trackedStream: String?
    private let stopFlag = Atomic<Bool>(false)
    private let statsAtNs = Atomic<UInt64>(0)
    private let finished = Atomic<Bool>(false)
    private var thread: LoopThread?
    /// Written by the client thread only; read after ``join()``.
    private(set) var tally = ClientTally()

    /// Connects and subscribes to `streams` (interval 0: every sample).
    /// `track`: keep the capture timestamps of this stream.
    init(socket: String, streams: [String], interval: Double = 0, track: String? = nil) throws {
        fd = try UnixSocket.connect(socket)
        trackedStream = track
        if track != nil { tally.timestamps.reserveCapacity(1 << 16) }
        for (i, s) in streams.enumerated() {
            try UnixSocket.send(fd, "{\"class\":\"subscribe\",\"stream\":\"\(s)\",\"interval_s\":\(interval),\"id\":\(i + 1)}")
        }
    }

    /// Asks for this connection's `stats` at monotonic time `ns` (once).
    func requestStats(atNanoseconds ns: UInt64) { statsAtNs.store(ns, ordering: .relaxed) }

    func start() throws {
        thread = try LoopThread(name: "bench-client") { [self] in self.readLoop() }
    }

    func stop() { stopFlag.store(true, ordering: .relaxed) }

    /// True once the reading thread has ended (EOF, error or stop).
    var isFinished: Bool { finished.load(ordering: .acquiring) }

    func join() {
        thread?.join()
        thread = nil
    }

    deinit { close(fd) }

    private func readLoop() {
        defer { finished.store(true, ordering: .releasing) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var line: [UInt8] = []
        line.reserveCapacity(4096)
        var statsSent = false
        while !stopFlag.load(ordering: .relaxed) {
            if !statsSent {
                let at = statsAtNs.load(ordering: .relaxed)
                if at != 0 && monotonicNanoseconds() >= at {
                    statsSent = true
                    try? UnixSocket.send(fd, "{\"class\":\"stats\",\"id\":\"bench\"}")
                }
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = Glibc.poll(&p, 1, 100)
            if r < 0 { if errno == EINTR { continue }; tally.endedBy = "poll error"; return }
            if r == 0 { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; tally.endedBy = "recv error"; return }
            if n == 0 { tally.endedBy = "agent closed"; return }
            tally.bytes += n
            var start = 0
            for i in 0..<n where buffer[i] == 0x0A {
                line.append(contentsOf: buffer[start..<i])
                handle(line)
                line.removeAll(keepingCapacity: true)
                start = i + 1
            }
            if start < n { line.append(contentsOf: buffer[start..<n]) }
        }
        tally.endedBy = "stopped"
    }

    private static let samplePrefix = Array("{\"class\":\"sample\",\"stream\":\"".utf8)
    private static let timestampKey = Array("\"timestamp_ns\":".utf8)

    private func handle(_ l: [UInt8]) {
        tally.lines += 1
        if l.starts(with: Self.samplePrefix) {
            var i = Self.samplePrefix.count
            let nameStart = i
            while i < l.count && l[i] != 0x22 { i += 1 }
            let name = String(decoding: l[nameStart..<i], as: UTF8.self)
            tally.samples[name, default: 0] += 1
            if name == trackedStream, let t = Self.integer(after: Self.timestampKey, in: l, from: i) {
                tally.timestamps.append(UInt64(t))
            }
            return
        }
        let text = String(decoding: l, as: UTF8.self)
        if text.hasPrefix("{\"class\":\"version\"") { tally.versionSeen = true }
        else if text.hasPrefix("{\"class\":\"subscribed\"") { tally.subscribedReplies += 1 }
        else if text.hasPrefix("{\"class\":\"shutdown\"") { tally.shutdownSeen = true }
        else if text.hasPrefix("{\"class\":\"error\"") { tally.errors.append(text) }
        else if text.hasPrefix("{\"class\":\"stats\"") {
            tally.statsDropped = Self.integer(after: Array("\"dropped\":".utf8), in: l, from: 0)
            tally.statsDelivered = Self.integer(after: Array("\"delivered\":".utf8), in: l, from: 0)
        }
    }

    /// The non-negative integer right after `key` in `l` (searching from `from`).
    static func integer(after key: [UInt8], in l: [UInt8], from: Int) -> Int? {
        guard l.count >= key.count else { return nil }
        var i = from
        while i + key.count <= l.count {
            if l[i] == key[0] && l[i..<(i + key.count)].elementsEqual(key) {
                var j = i + key.count, v = 0, digits = 0
                while j < l.count, l[j] >= 0x30, l[j] <= 0x39 { v = v * 10 + Int(l[j] - 0x30); j += 1; digits += 1 }
                return digits > 0 ? v : nil
            }
            i += 1
        }
        return nil
    }
}

/// A client that subscribes and then never reads a byte (not even the
/// version line): its socket buffer and its queue in the agent fill up.
final class SilentClient {
    let fd: Int32
    init(socket: String, streams: [String], interval: Double = 0) throws {
        fd = try UnixSocket.connect(socket)
        for (i, s) in streams.enumerated() {
            try UnixSocket.send(fd, "{\"class\":\"subscribe\",\"stream\":\"\(s)\",\"interval_s\":\(interval),\"id\":\(i + 1)}")
        }
    }
    deinit { close(fd) }

    /// Asks for this connection's `stats`, then reads (at most `seconds`)
    /// until the reply arrives: how many sample lines came before it and the
    /// agent's `dropped` count for this connection.
    func drainForStats(seconds: Double) -> (samples: Int, dropped: Int?) {
        try? UnixSocket.send(fd, "{\"class\":\"stats\",\"id\":\"silent\"}")
        let end = monotonicNanoseconds() + UInt64(seconds * 1e9)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var line: [UInt8] = []
        var samples = 0
        let key = Array("\"dropped\":".utf8)
        while monotonicNanoseconds() < end {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = Glibc.poll(&p, 1, 100)
            if r <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n <= 0 { break }
            var start = 0
            for i in 0..<n where buffer[i] == 0x0A {
                line.append(contentsOf: buffer[start..<i])
                if line.starts(with: Array("{\"class\":\"sample\"".utf8)) { samples += 1 }
                else if line.starts(with: Array("{\"class\":\"stats\"".utf8)) {
                    return (samples, ReadingClient.integer(after: key, in: line, from: 0))
                }
                line.removeAll(keepingCapacity: true)
                start = i + 1
            }
            if start < n { line.append(contentsOf: buffer[start..<n]) }
        }
        return (samples, nil)
    }
}
