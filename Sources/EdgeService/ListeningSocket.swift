#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The bound, listening Unix-domain socket and the file it created.
struct ListeningSocket: Sendable {
    /// Connections that may wait to be accepted (listen(2)'s backlog).
    static let backlog: Int32 = 64
    let fd: Int32
    let path: String
    /// Inode of the socket file we created, so we never unlink a successor's file.
    let inode: UInt64

    /// socket + bind + listen, non-blocking. A leftover socket file nothing
    /// listens on (ECONNREFUSED) is removed and the bind retried; a live
    /// listener is reported as ``ServiceError/alreadyRunning(_:)``; a
    /// non-socket file is never removed.
    static func bind(_ config: ServiceConfiguration) throws(ServiceError) -> ListeningSocket {
        let path = config.socketPath
        guard let addr = Posix.unixAddress(path) else { throw .socketPathTooLong(path) }
        var gid: gid_t?
        if let g = config.socketGroup {
            guard let resolved = SystemDatabase.gid(named: g) else { throw .unknownGroup(g) }
            gid = resolved
        }
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { throw .system(PosixError(errno: errno, call: "socket")) }
        var ok = false
        defer { if !ok { Posix.close(fd) } }

        var attempt = 0
        while true {
            let r = Posix.withSockaddr(addr) { Glibc.bind(fd, $0, $1) }
            if r == 0 { break }
            let e = errno
            guard e == EADDRINUSE, attempt == 0 else {
                throw .system(PosixError(errno: e, call: "bind", path: path))
            }
            attempt += 1
            try removeStale(path: path, addr: addr)
        }
        guard listen(fd, Self.backlog) == 0 else {
            let e = errno
            unlink(path)
            throw .system(PosixError(errno: e, call: "listen", path: path))
        }
        // bind creates the file with the umask applied; set the mode explicitly.
        guard chmod(path, mode_t(config.socketMode)) == 0 else {
            let e = errno
            unlink(path)
            throw .system(PosixError(errno: e, call: "chmod", path: path))
        }
        var st = stat()
        guard lstat(path, &st) == 0 else {
            let e = errno
            unlink(path)
            throw .system(PosixError(errno: e, call: "lstat", path: path))
        }
        // Only when the file lacks the group: under the unit (Group= is the
        // socket group) it has it already, and SystemCallFilter=~@privileged
        // refuses chown with EPERM even as a no-op.
        if let gid, st.st_gid != gid {
            guard chown(path, uid_t.max, gid) == 0 else { // uid_t.max == (uid_t)-1: keep owner
                let e = errno
                unlink(path)
                throw .system(PosixError(errno: e, call: "chown", path: path))
            }
        }
        ok = true
        return ListeningSocket(fd: fd, path: path, inode: UInt64(st.st_ino))
    }

    private static func removeStale(path: String, addr: sockaddr_un) throws(ServiceError) {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            throw .system(PosixError(errno: errno, call: "lstat", path: path))
        }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { throw .pathNotASocket(path) }
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let probe = socket(AF_UNIX, type, 0)
        guard probe >= 0 else { throw .system(PosixError(errno: errno, call: "socket")) }
        defer { Posix.close(probe) }
        var r: Int32
        repeat { r = Posix.withSockaddr(addr) { connect(probe, $0, $1) } } while r != 0 && errno == EINTR
        if r == 0 { throw .alreadyRunning(path) }
        let e = errno
        switch e {
        case ECONNREFUSED:
            // Nobody listens: a leftover of an agent that did not stop cleanly.
            guard unlink(path) == 0 || errno == ENOENT else {
                throw .system(PosixError(errno: errno, call: "unlink", path: path))
            }
        case EAGAIN, EINPROGRESS:
            // A listener with a full backlog: alive.
            throw .alreadyRunning(path)
        case ENOENT:
            break // vanished meanwhile; retry bind
        default:
            throw .system(PosixError(errno: e, call: "connect", path: path))
        }
    }

    /// Closes the socket and removes its file if it is still ours.
    func closeAndUnlink() {
        Posix.close(fd)
        var st = stat()
        if lstat(path, &st) == 0, UInt64(st.st_ino) == inode, (st.st_mode & S_IFMT) == S_IFSOCK {
            unlink(path)
        }
    }
}
