import EdgeValues
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A body handed to a pthread.
private final class ThreadBody {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// A pthread of the bridge's own (never the cooperative pool: the feed and
/// the broker loops block in poll(2)).
public struct BridgeThread: Sendable {
    let id: pthread_t

    /// Starts `body` on a new thread (`name` is for reading the code: Glibc
    /// does not export pthread_setname_np to Swift).
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) -> BridgeThread {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { arg in
            let b = Unmanaged<ThreadBody>.fromOpaque(arg!).takeRetainedValue()
            b.run()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create: \(String(cString: strerror(rc)))")
        return BridgeThread(id: tid)
    }

    /// Waits for the thread to end.
    public func join() { pthread_join(id, nil) }
}


/// Writes all of `bytes` to `fd` (non-blocking sockets: waits for POLLOUT
/// at most `timeoutMs` in all). False if the peer is gone or too slow.
func sendAll(_ fd: Int32, _ bytes: [UInt8], timeoutMs: Int32 = 2000) -> Bool {
    var off = 0
    let deadline = monotonicNowNs() + UInt64(timeoutMs) * 1_000_000
    while off < bytes.count {
        let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL)) }
        if n > 0 { off += n; continue }
        if n < 0 && errno == EINTR { continue }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
            let now = monotonicNowNs()
            guard now < deadline else { return false }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, Int32((deadline - now) / 1_000_000) + 1)
            continue
        }
        return false
    }
    return true
}

/// A sockaddr_un for `path`; nil when it does not fit sun_path.
func unixSocketAddress(_ path: String) -> sockaddr_un? {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        raw.initializeMemory(as: UInt8.self, repeating: 0)
        raw.copyBytes(from: bytes)
    }
    return addr
}
