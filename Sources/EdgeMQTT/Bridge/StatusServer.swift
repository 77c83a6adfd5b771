import EdgeValues
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why the status socket could not be set up.
public struct StatusSocketError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var call: String
    public var errno: Int32
    public var description: String {
        var s = "status socket \(path): \(call): \(String(cString: strerror(errno))) (errno \(errno))"
        if errno == EACCES || errno == ENOENT {
            s += "; its directory must exist and be writable by the service (status_socket; systemd: RuntimeDirectory=edge-mqtt)"
        } else if errno == EADDRINUSE {
            s += "; another edge-mqtt serves it (two bridges need two status_socket paths)"
        }
        return s
    }
}

/// The bridge's own status socket: a Unix stream socket where every
/// connection gets one JSON line (the ``BrokerLink`` status report) and is
/// closed. `edge-mqtt status` reads it. Served from the broker thread's
/// poll loop: no thread of its own. Mode 0660: the service's group may read
/// the status (it holds counters and names, never a secret).
public final class StatusServer: @unchecked Sendable {
    public let path: String
    public let fd: Int32

    public init(path: String) throws(StatusSocketError) {
        self.path = path
        guard var addr = unixSocketAddress(path) else {
            throw StatusSocketError(path: path, call: "address", errno: ENAMETOOLONG)
        }
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard s >= 0 else { throw StatusSocketError(path: path, call: "socket", errno: errno) }
        // A socket file left by a bridge that was killed: nobody answers on
        // it, so it may go. A live one answers, and is kept (EADDRINUSE).
        if Self.isStale(path) { unlink(path) }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let e = errno
            close(s)
            throw StatusSocketError(path: path, call: "bind", errno: e)
        }
        chmod(path, 0o660)
        guard listen(s, 16) == 0 else {
            let e = errno
            close(s)
            unlink(path)
            throw StatusSocketError(path: path, call: "listen", errno: e)
        }
        fd = s
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// A socket file nobody listens on.
    static func isStale(_ path: String) -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFSOCK, var addr = unixSocketAddress(path) else { return false }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return r != 0 && errno == ECONNREFUSED
    }

    /// Answers every waiting connection with `report` and closes it.
    func serve(_ report: @autoclosure () -> [UInt8]) {
        var bytes: [UInt8]?
        while true {
            let c = accept(fd, nil, nil)
            if c < 0 {
                if errno == EINTR { continue }
                return
            }
            _ = fcntl(c, F_SETFD, FD_CLOEXEC)
            _ = fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK)
            if bytes == nil { bytes = report() }
            _ = sendAll(c, bytes!, timeoutMs: 200)
            close(c)
        }
    }

    /// Reads the report from the bridge serving `path` (for `edge-mqtt status`).
    public static func read(path: String, timeoutMs: Int32 = 3000) -> Result<[UInt8], StatusSocketError> {
        guard var addr = unixSocketAddress(path) else { return .failure(StatusSocketError(path: path, call: "address", errno: ENAMETOOLONG)) }
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { return .failure(StatusSocketError(path: path, call: "socket", errno: errno)) }
        defer { close(s) }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else { return .failure(StatusSocketError(path: path, call: "connect", errno: errno)) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        let deadline = monotonicNowNs() + UInt64(timeoutMs) * 1_000_000
        while monotonicNowNs() < deadline {
            var p = pollfd(fd: s, events: Int16(POLLIN), revents: 0)
            let left = Int32((deadline - min(deadline, monotonicNowNs())) / 1_000_000) + 1
            if poll(&p, 1, left) <= 0 { continue }
            let n = chunk.withUnsafeMutableBytes { Glibc.read(s, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        return .success(out)
    }
}
