#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CEdgeShims

/// A failed system call: which call, on what, and the errno it returned.
public struct PosixError: Error, Equatable, Sendable, CustomStringConvertible {
    /// errno as the kernel reported it.
    public var errno: Int32
    /// The call, e.g. `bind`.
    public var call: String
    /// The file or socket path involved, if any.
    public var path: String?

    public init(errno: Int32, call: String, path: String? = nil) {
        self.errno = errno; self.call = call; self.path = path
    }

    public var description: String {
        let text = String(cString: strerror(errno))
        if let path { return "\(call)(\(path)): \(text) (errno \(errno))" }
        return "\(call): \(text) (errno \(errno))"
    }
}

/// Why the service could not start.
public enum ServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The socket path does not fit `sockaddr_un.sun_path` (107 bytes).
    case socketPathTooLong(String)
    /// Another process (another agent) accepts connections on the path.
    case alreadyRunning(String)
    /// The path exists and is not a socket; the agent will not delete it.
    case pathNotASocket(String)
    /// The configured socket group does not exist.
    case unknownGroup(String)
    /// The configured user in an entitlement grant does not exist.
    case unknownUser(String)
    /// A grant names neither or several of user, group, uid, gid.
    case invalidGrant(String)
    /// A configuration value is out of range.
    case invalidConfiguration(String)
    /// A system call failed.
    case system(PosixError)

    public var description: String {
        switch self {
        case .socketPathTooLong(let p): return "socket path too long (max 107 bytes): \(p)"
        case .alreadyRunning(let p): return "another agent is already listening on \(p); stop it first"
        case .pathNotASocket(let p): return "\(p) exists and is not a socket; refusing to replace it"
        case .unknownGroup(let g): return "no group named \"\(g)\" on this system"
        case .unknownUser(let u): return "no user named \"\(u)\" on this system"
        case .invalidGrant(let m): return "invalid entitlement grant: \(m)"
        case .invalidConfiguration(let m): return "invalid service configuration: \(m)"
        case .system(let e): return e.description
        }
    }
}

/// Thin wrappers that retry EINTR and return typed errors (swift-nio's Posix layer).
enum Posix {
    /// read(2): bytes read, 0 at EOF, nil when it would block.
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(PosixError) -> Int? {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return nil }
            throw PosixError(errno: e, call: "read")
        }
    }

    /// send(2) with MSG_NOSIGNAL (a closed peer gives EPIPE, not SIGPIPE):
    /// bytes written, nil when it would block.
    static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(PosixError) -> Int? {
        while true {
            let n = Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return n }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return nil }
            throw PosixError(errno: e, call: "send")
        }
    }

    /// send(2) that also passes `fds` (SCM_RIGHTS) with the first byte:
    /// bytes written, nil when it would block (then nothing went, the
    /// descriptors neither).
    static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, passing fds: [Int32]) throws(PosixError) -> Int? {
        let n = fds.withUnsafeBufferPointer {
            edge_send_with_fds(fd, buffer.baseAddress, buffer.count, $0.baseAddress, Int32($0.count))
        }
        if n >= 0 { return n }
        let e = Int32(-n)
        if e == EAGAIN || e == EWOULDBLOCK { return nil }
        throw PosixError(errno: e, call: "sendmsg")
    }

    /// poll(2); EINTR is reported as zero ready descriptors.
    static func poll(_ fds: inout [pollfd], timeoutMs: Int32) throws(PosixError) -> Int {
        let r = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), timeoutMs) }
        if r >= 0 { return Int(r) }
        let e = errno
        if e == EINTR { return 0 }
        throw PosixError(errno: e, call: "poll")
    }

    static func setNonBlockingCloseOnExec(_ fd: Int32) throws(PosixError) {
        let flags = fcntl(fd, F_GETFL)
        if flags < 0 { throw PosixError(errno: errno, call: "fcntl(F_GETFL)") }
        if fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 { throw PosixError(errno: errno, call: "fcntl(F_SETFL)") }
        if fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 { throw PosixError(errno: errno, call: "fcntl(F_SETFD)") }
    }

    /// Fills a `sockaddr_un` for `path`; nil if the path is empty or too long.
    static func unixAddress(_ path: String) -> sockaddr_un? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return addr
    }

    static func withSockaddr<R>(_ addr: sockaddr_un, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var a = addr
        return withUnsafePointer(to: &a) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    static func close(_ fd: Int32) {
        // close(2) is not retried on EINTR on Linux: the descriptor is gone either way.
        _ = Glibc.close(fd)
    }
}
