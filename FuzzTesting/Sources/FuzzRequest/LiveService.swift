// The request target's second half: the same lines sent to a real agent
// service (`ServiceServer`, its service thread and its `ServiceLoop`) with
// the agent's fitness history source attached (`FitnessHistorySource` over
// a real SQLite history holding more activity rows than one reply pages),
// over a real Unix socket. Issue 16: one `history` request with a from_s
// the seconds-to-nanoseconds conversion could not hold trapped on the
// service thread and took every client's agent down; the parsers above
// never saw it because nothing drove the service.
//
// Findings here: the service stops answering (a trap kills the process;
// a hang is caught by the 5 s deadline), or a line it sends does not decode.
#if canImport(Glibc)
import Glibc
#endif
import EdgeProtocol
import EdgeService
import EdgeHistory
@testable import EdgeAgentCLI
@testable import EdgeRuntime
import FuzzSupport

/// One service for the fuzz process (started on first use).
final class LiveService: @unchecked Sendable {
    static let shared = LiveService()

    let server: ServiceServer
    let socketPath: String
    let source: FitnessHistorySource
    /// The id of the ping that ends each exchange.
    static let barrier = "fuzz-barrier-7f3a"

    private init() {
        var template = Array("/tmp/edge-fuzz-XXXXXX".utf8CString)
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) }) else {
            fatalError("mkdtemp: errno \(errno)")
        }
        let historyPath = dir + "/history.sqlite3"
        do {
            // A week of activities, one a minute (more than a reply pages),
            // and pedometer intervals; times from 2026.
            let h = try FitnessHistory(path: historyPath, retentionSeconds: 1e9)
            let t0: Int64 = 1_767_225_600_000_000_000
            let activities = (0..<1500).map {
                ActivityRecord(startUnixNs: t0 + Int64($0) * 60_000_000_000, flags: $0 % 3 == 0 ? .walking : .stationary,
                               confidence: .high)
            }
            var totals = PedometerTotals()
            totals.steps = 100; totals.distanceMeters = 70; totals.activeSeconds = 60
            let pedometer = (0..<100).map { PedometerRecord(endUnixNs: t0 + Int64($0) * 60_000_000_000, totals: totals) }
            try h.commit(pedometer: pedometer, activities: activities, events: [], nowUnixNs: t0 + 7 * 86_400_000_000_000)
            h.close()
            source = try FitnessHistorySource(path: historyPath, retentionSeconds: 1e9, recorder: nil)
        } catch {
            fatalError("the fuzz target's fitness history could not be made: \(error)")
        }
        socketPath = dir + "/agent.sock"
        var config = ServiceConfiguration(socketPath: socketPath)
        config.floodLimit = 1_000_000
        config.maxClients = 1024
        config.maxClientsPerUID = 1024
        do {
            server = try ServiceServer(configuration: config)
        } catch {
            fatalError("the fuzz target's service could not start: \(error)")
        }
        server.setHistorySource(source)
    }

    /// Sends `lines` then a ping, and reads until the ping's pong: the
    /// service answered everything before it. Every line it sent must decode.
    func exchange(_ lines: [ArraySlice<UInt8>]) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { invariantBroken("socket: errno \(errno)") }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in socketPath.utf8.enumerated() { p[i] = b }
        }
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard ok == 0 else { invariantBroken("the service stopped accepting: connect errno \(errno)") }

        var out: [UInt8] = []
        for line in lines { out += line; out.append(UInt8(ascii: "\n")) }
        out += Array("{\"class\":\"ping\",\"id\":\"\(Self.barrier)\"}\n".utf8)
        var sent = 0
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = now() + 5_000_000_000
        let marker = Array("\"\(Self.barrier)\"".utf8)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN) | (sent < out.count ? Int16(POLLOUT) : 0), revents: 0)
            let left = deadline > now() ? Int32((deadline - now()) / 1_000_000) : 0
            guard poll(&p, 1, max(1, left)) >= 0 || errno == EINTR else { invariantBroken("poll: errno \(errno)") }
            if now() >= deadline { invariantBroken("the service did not answer within 5 s (\(received.count) bytes read)") }
            if p.revents & Int16(POLLOUT) != 0, sent < out.count {
                let n = out[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n > 0 { sent += n }
            }
            if p.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { invariantBroken("the service closed the connection before answering the ping (\(received.count) bytes read)") }
                received += buffer[0..<n]
                if received.count > 64 << 20 { invariantBroken("the service sent more than 64 MiB for one input") }
                if contains(received, marker) { break }
            }
        }
        for line in received.split(separator: UInt8(ascii: "\n")) {
            do { _ = try ServerMessage.decode(line: line) } catch {
                invariantBroken("the service sent a line its clients cannot read (\(error.reason)): \(String(decoding: line, as: UTF8.self))")
            }
        }
    }

    private func now() -> UInt64 { monotonicNowNs() }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return true }
        }
        return false
    }
}
