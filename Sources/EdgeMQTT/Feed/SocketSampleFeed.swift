#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeProtocol
import Synchronization

/// TEMPORARY: a ``SampleFeed`` straight over the agent's socket, with
/// EdgeProtocol's `Request.encode(into:)` and `ServerMessage.decode(line:)`,
/// until EdgeClient's `AgentClient` is on main (see SampleFeed.swift). Kept
/// to what the bridge needs: connect, check the version, subscribe, read
/// lines, reconnect (50 ms doubling to 2 s, like AgentClient).
public final class SocketSampleFeed: SampleFeed, @unchecked Sendable {
    public let socketPath: String
    private let wakeup = Wakeup()
    private let stopping = Atomic<Bool>(false)
    private let beats = Atomic<UInt64>(0)
    /// The connected socket (-1: none); guarded so `requestDevices` may send from any thread.
    private let connection = Mutex<Int32>(-1)
    private var thread: BridgeThread?

    public init(socketPath: String) { self.socketPath = socketPath }

    public var heartbeat: UInt64 { beats.load(ordering: .relaxed) }

    public func start(subscriptions: [FeedSubscription], handler: @escaping @Sendable (FeedEvent) -> Void) {
        precondition(thread == nil, "start once")
        thread = BridgeThread.start(name: "edge-mqtt feed") { [self] in
            run(subscriptions, handler)
        }
    }

    public func requestDevices() {
        connection.withLock { fd in
            guard fd >= 0 else { return }
            _ = sendAll(fd, Self.line(Request(kind: .devices, id: .string("devices"))), timeoutMs: 100)
        }
    }

    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        wakeup.signal()
        thread?.join()
        thread = nil
    }

    static func line(_ r: Request) -> [UInt8] {
        var w = JSONWriter(capacity: 128)
        r.encode(into: &w)
        return w.bytes
    }

    private var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    /// Waits `ns` or until stopped.
    private func pause(_ ns: UInt64) {
        var p = pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&p, 1, Int32(ns / 1_000_000))
    }

    private func run(_ subscriptions: [FeedSubscription], _ handler: @Sendable (FeedEvent) -> Void) {
        var delay: UInt64 = 50_000_000
        while !isStopping {
            beats.add(1, ordering: .relaxed)
            switch connect() {
            case .failure(let reason):
                handler(.connectFailed(reason))
                pause(delay)
                delay = min(delay * 2, 2_000_000_000)
            case .success(let fd):
                let reason = serve(fd, subscriptions, handler, onVersion: { delay = 50_000_000 })
                connection.withLock { $0 = -1 }
                close(fd)
                if !isStopping {
                    handler(.disconnected(reason))
                    pause(delay)
                    delay = min(delay * 2, 2_000_000_000)
                }
            }
        }
    }

    private enum Attempt { case success(Int32), failure(String) }

    private func connect() -> Attempt {
        guard var addr = unixSocketAddress(socketPath) else {
            return .failure("the socket path \(socketPath) is too long for a Unix socket")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure("socket: \(String(cString: strerror(errno)))") }
        var r: Int32
        repeat {
            r = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        } while r != 0 && errno == EINTR
        if r != 0 {
            let e = errno
            close(fd)
            let advice: String
            switch e {
            case ENOENT, ECONNREFUSED: advice = "is edge-agent running? (systemctl status edge-agent)"
            case EACCES: advice = "the bridge's user may not connect: add it to the socket's group (usermod -a -G edge-motion edge-mqtt)"
            default: advice = "check agent.socket_path"
            }
            return .failure("cannot connect to \(socketPath): \(String(cString: strerror(e))) (errno \(e)); \(advice)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return .success(fd)
    }

    /// Reads the connection until it ends; returns why it ended.
    private func serve(_ fd: Int32, _ subscriptions: [FeedSubscription], _ handler: @Sendable (FeedEvent) -> Void,
                       onVersion: () -> Void) -> String {
        var splitter = LineSplitter()
        var chunk = [UInt8](repeating: 0, count: 65536)
        var versioned = false
        var ended: String?
        let versionDeadline = monotonicNs() + 5_000_000_000
        while ended == nil && !isStopping {
            beats.add(1, ordering: .relaxed)
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0)]
            let r = poll(&fds, 2, 1000)
            if r < 0 && errno != EINTR { return "poll: \(String(cString: strerror(errno)))" }
            if !versioned && monotonicNs() > versionDeadline { return "the agent sent no version line within 5 s" }
            guard r > 0, fds[0].revents != 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n < 0 { return "read: \(String(cString: strerror(errno)))" }
            if n == 0 { return "the agent closed the connection" }
            chunk.withUnsafeBytes { raw in
                splitter.append(UnsafeRawBufferPointer(rebasing: raw[0..<n])) { line in
                    guard ended == nil else { return }
                    let message: ServerMessage
                    do { message = try ServerMessage.decode(line: line) } catch { return } // ignored, as clients must
                    switch message {
                    case .version(let v):
                        guard v.protocolVersion == EdgeProtocolInfo.version else {
                            ended = "the agent speaks protocol \(v.protocolVersion), this bridge \(EdgeProtocolInfo.version): install matching versions"
                            return
                        }
                        versioned = true
                        onVersion()
                        connection.withLock { $0 = fd }
                        var out: [UInt8] = []
                        for s in subscriptions {
                            out += Self.line(Request(kind: .subscribe(s.stream, intervalNs: s.intervalNs),
                                                     id: .string("sub-" + s.stream.rawValue)))
                        }
                        out += Self.line(Request(kind: .devices, id: .string("devices")))
                        handler(.connected(v))
                        if !sendAll(fd, out) { ended = "the agent stopped reading our requests" }
                    case .sample(let s):
                        handler(.sample(s))
                    case .subscribed(let s, let interval, _):
                        handler(.subscribed(s, intervalS: interval))
                    case .error(let code, let name, let text, let stream, _):
                        if let stream {
                            handler(.refused(stream, code: code, message: text))
                        } else if code?.closesConnection ?? false {
                            ended = "the agent refused the connection (\(name)): \(text)"
                        }
                    case .devices(let list, _):
                        handler(.devices(list))
                    case .connection(let e):
                        handler(.device(e))
                    case .shutdown(let reason):
                        handler(.shutdown(reason: reason))
                    case .streams, .unsubscribed, .stats, .pong, .unknown:
                        break
                    }
                }
            }
        }
        return ended ?? "stopped"
    }
}
