#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeProtocol

/// The client end of the agent's Unix-domain socket: connect(2) with typed
/// errors, whole writes, reads. Glibc only; EINTR is retried everywhere.
public enum AgentSocket {
    /// Environment variable naming the agent's socket (read by `watch`,
    /// `poll` and the `CoreMotion` library before any configuration file).
    public static let environmentVariable = "EDGE_AGENT_SOCKET"

    /// A connected blocking stream socket (close-on-exec).
    /// - Parameters:
    ///   - configPath: the configuration the path came from, for the advice
    ///     on a permission error.
    ///   - configuredGroup: its `service.socket_group`, likewise.
    public static func connect(_ path: String, configPath: String? = nil,
                               configuredGroup: String? = nil) throws(AgentClientError) -> Int32 {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { throw .badSocketPath(path) }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(call: "socket", path: path, errno: errno) }
        var r: Int32
        repeat {
            r = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        } while r != 0 && errno == EINTR
        guard r == 0 else {
            let e = errno
            close(fd)
            throw AgentClientError.connect(path: path, errno: e, socketGroup: socketGroupName(path),
                                           configuredGroup: configuredGroup, configPath: configPath)
        }
        return fd
    }

    /// Writes all of `bytes`; false when the socket is broken (the reader
    /// sees EOF next). MSG_NOSIGNAL: a closed peer is EPIPE, never SIGPIPE.
    @discardableResult
    public static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { b -> Bool in
            var off = 0
            while off < b.count {
                let n = Glibc.send(fd, b.baseAddress! + off, b.count - off, Int32(MSG_NOSIGNAL))
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                if n == 0 { return false }
                off += n
            }
            return true
        }
    }

    /// The name of the group owning `path` (or, when the file cannot be
    /// looked at, its directory), for the permission advice; the number when
    /// the group database has no name for it.
    public static func socketGroupName(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 || stat(directory(of: path), &st) == 0 else { return nil }
        var gr = group()
        var result: UnsafeMutablePointer<group>?
        var buf = [CChar](repeating: 0, count: 16384)
        guard getgrgid_r(st.st_gid, &gr, &buf, buf.count, &result) == 0, result != nil, let name = gr.gr_name else {
            return String(st.st_gid)
        }
        return String(cString: name)
    }

    /// The user name of `uid`, for the entitlement advice.
    public static func userName(_ uid: UInt32) -> String? {
        var pw = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buf = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid_t(uid), &pw, &buf, buf.count, &result) == 0, result != nil, let n = pw.pw_name else {
            return nil
        }
        return String(cString: n)
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

