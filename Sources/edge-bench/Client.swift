// Protocol clients for the benchmarks: connections of the client library
// (EdgeClient's AgentConnection), each read on its own pthread with bounded
// waits, every line decoded into its typed message.
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import EdgeClient
import EdgeProtocol
import EdgeEngine   // LoopThread: a joinable pthread

/// The benchmarks' requests and connections go through the client library
/// (EdgeClient): one client of the protocol for every tool.
enum BenchSocket {
    /// A connected socket nobody has read from yet.
    static func connect(_ path: String) throws -> Int32 {
        do { return try AgentSocket.connect(path) } catch { throw BenchError("connect \(path): \(error)") }
    }

    static func streams(_ names: [String]) throws -> [StreamName] {
        try names.map { n in
            guard let s = StreamName(rawValue: n) else { throw BenchError("no stream named \(n)") }
            return s
        }
    }

    static func subscribe(_ s: StreamName, interval: Double, id: Int) -> Request {
        Request(kind: .subscribe(s, intervalNs: UInt64((interval * 1e9).rounded())), id: .number(String(id)))
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
    let connection: AgentConnection
    let trackedStream: StreamName?
    private let stopFlag = Atomic<Bool>(false)
    private let statsAtNs = Atomic<UInt64>(0)
    private let finished = Atomic<Bool>(false)
    private var thread: LoopThread?
    /// Written by the client thread only; read after ``join()``.
    private(set) var tally = ClientTally()

    /// Connects and subscribes to `streams` (interval 0: every sample).
    /// `track`: keep the capture timestamps of this stream.
    init(socket: String, streams: [String], interval: Double = 0, track: String? = nil) throws {
        do { connection = try AgentConnection.connect(to: socket) } catch {
            throw BenchError("connect \(socket): \(error)")
        }
        tally.versionSeen = true
        trackedStream = track.flatMap(StreamName.init(rawValue:))
        if track != nil { tally.timestamps.reserveCapacity(1 << 16) }
        for (i, s) in try BenchSocket.streams(streams).enumerated() {
            connection.send(BenchSocket.subscribe(s, interval: interval, id: i + 1))
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

    private func readLoop() {
        defer { finished.store(true, ordering: .releasing) }
        var statsSent = false
        while !stopFlag.load(ordering: .relaxed) {
            if !statsSent {
                let at = statsAtNs.load(ordering: .relaxed)
                if at != 0 && monotonicNanoseconds() >= at {
                    statsSent = true
                    connection.send(Request(kind: .stats, id: .string("bench")))
                }
            }
            let line: ReceivedLine?
            do { line = try connection.receive(timeoutMs: 100) } catch {
                if case .disconnected = error { tally.endedBy = "agent closed" } else { tally.endedBy = "\(error)" }
                return
            }
            guard let line else { continue }
            tally.bytes += line.bytes.count + 1
            tally.lines += 1
            guard case .success(let m) = line.message else { continue }
            handle(m, line)
        }
        tally.endedBy = "stopped"
    }

    private func handle(_ m: ServerMessage, _ line: ReceivedLine) {
        switch m {
        case .sample(let s):
            tally.samples[s.stream.rawValue, default: 0] += 1
            if s.stream == trackedStream { tally.timestamps.append(s.timestampNs) }
        case .subscribed: tally.subscribedReplies += 1
        case .shutdown: tally.shutdownSeen = true
        case .error: tally.errors.append(line.text)
        case .stats(_, let delivered, let dropped, _, _):
            tally.statsDropped = dropped
            tally.statsDelivered = delivered
        default: break
        }
    }
}

/// A client that subscribes and then never reads a byte (not even the
/// version line): its socket buffer and its queue in the agent fill up.
final class SilentClient {
    let fd: Int32
    /// The socket was handed to a connection (which closes it).
    private var handedOver = false
    deinit { if !handedOver { close(fd) } }
    init(socket: String, streams: [String], interval: Double = 0) throws {
        fd = try BenchSocket.connect(socket)
        var w = JSONWriter()
        for (i, s) in try BenchSocket.streams(streams).enumerated() {
            BenchSocket.subscribe(s, interval: interval, id: i + 1).encode(into: &w)
        }
        AgentSocket.sendAll(fd, w.bytes)
    }

    /// Asks for this connection's `stats`, then reads (at most `seconds`)
    /// until the reply arrives: how many sample lines came before it and the
    /// agent's `dropped` count for this connection.
    func drainForStats(seconds: Double) -> (samples: Int, dropped: Int?) {
        var w = JSONWriter()
        Request(kind: .stats, id: .string("silent")).encode(into: &w)
        AgentSocket.sendAll(fd, w.bytes)
        let end = monotonicNanoseconds() + UInt64(seconds * 1e9)
        // The connection takes the socket over now: its first line is the
        // version line nobody has read.
        handedOver = true
        guard let c = try? AgentConnection.handshake(fd: fd, path: "silent client", timeoutMs: Int(seconds * 1000)) else {
            return (0, nil)
        }
        var samples = 0
        while monotonicNanoseconds() < end {
            guard let line = try? c.receive(timeoutMs: 100) else {
                if c.isClosed { break }
                continue
            }
            switch line.message {
            case .success(.sample): samples += 1
            case .success(.stats(_, _, let dropped, _, _)): return (samples, dropped)
            default: break
            }
        }
        return (samples, nil)
    }
}
