#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeProtocol

/// One line from the agent: its bytes and what they decode to.
public struct ReceivedLine: Sendable {
    /// The line as the agent sent it, without its newline.
    public let bytes: ArraySlice<UInt8>
    /// The typed message (``ServerMessage/decode(line:)``), or why the line
    /// could not be decoded (a client ignores such a line and reads on).
    public let message: Result<ServerMessage, ServerMessage.DecodeError>

    /// The line as text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// A connection to the agent used from one thread: connect, the version
/// check, requests (with ids, replies matched to them), and every message
/// the agent sends, typed. No threads of its own, no reconnection: what a
/// command-line tool that talks to the agent once needs (`edge-agent
/// watch`, `poll`, the benchmarks' clients). ``AgentClient`` builds the
/// shared, reconnecting, multiplexed client on it.
public final class AgentConnection {
    /// The socket's path.
    public let socketPath: String
    /// The version line: protocol, the uid/gid the agent sees, entitlements.
    public let version: ServerMessage.VersionInfo
    /// The socket (closed by ``close()`` or deinit).
    public private(set) var fd: Int32

    private var reader: LineReader
    /// Lines received while ``request(_:timeoutMs:)`` waited for its reply,
    /// handed out by ``receive(timeoutMs:)`` in order.
    private var held: [ReceivedLine] = []
    private var nextID = 1
    private var writer = JSONWriter(capacity: 256)

    private init(socketPath: String, fd: Int32, version: ServerMessage.VersionInfo, reader: LineReader) {
        self.socketPath = socketPath; self.fd = fd; self.version = version; self.reader = reader
    }

    deinit { close() }

    /// Connects, reads the version line (waiting at most `timeoutMs`) and
    /// checks the protocol version.
    /// - Throws: ``AgentClientError``: `noAgent`, `permissionDenied` (with
    ///   the socket's group), `notAnAgent`, `incompatibleProtocol`,
    ///   `timedOut`; `tooManyClients` when the agent refuses the connection
    ///   right after the version line.
    public static func connect(to path: String, timeoutMs: Int = 5000, configPath: String? = nil,
                               configuredGroup: String? = nil) throws(AgentClientError) -> AgentConnection {
        let fd = try AgentSocket.connect(path, configPath: configPath, configuredGroup: configuredGroup)
        return try handshake(fd: fd, path: path, timeoutMs: timeoutMs)
    }

    /// Takes over a socket already connected to the agent (``AgentSocket/connect(_:configPath:configuredGroup:)``)
    /// whose lines nobody has read yet, and reads its version line. The
    /// socket is closed on failure.
    public static func handshake(fd: Int32, path: String, timeoutMs: Int = 5000) throws(AgentClientError) -> AgentConnection {
        var reader = LineReader()
        let deadline = monotonicNowNs() + UInt64(max(0, timeoutMs)) * 1_000_000
        func fail(_ e: AgentClientError) -> AgentClientError { Glibc.close(fd); return e }
        while true {
            if let line = reader.takeLine() {
                let version = try check(line, path: path, fd: fd)
                let c = AgentConnection(socketPath: path, fd: fd, version: version, reader: reader)
                // A refusal (tooManyClients...) follows the version line at once.
                try c.checkRefusal()
                return c
            }
            let now = monotonicNowNs()
            if now >= deadline { throw fail(.timedOut(path: path, waitingFor: "version line", seconds: Double(timeoutMs) / 1000)) }
            switch reader.read(fd, timeoutMs: Int32(clamping: (deadline - now) / 1_000_000 + 1)) {
            case .data, .timeout: continue
            case .closed: throw fail(.notAnAgent(path: path, detail: "the connection closed before any line"))
            case .tooLong: throw fail(.notAnAgent(path: path, detail: "a first line over 1 MiB"))
            case .failed(let e): throw fail(.system(call: "recv", path: path, errno: e))
            }
        }
    }

    /// Checks the first line: a version line of a protocol this client speaks.
    static func check(_ line: ArraySlice<UInt8>, path: String, fd: Int32) throws(AgentClientError) -> ServerMessage.VersionInfo {
        let message: ServerMessage
        do { message = try ServerMessage.decode(line: line) } catch {
            // Say the protocol number when there is one, even if the rest differs.
            if let v = try? JSONValue.parse(line), case .string("version")? = v["class"],
               case .number(let p, _)? = v["protocol"], Int(exactly: p) != EdgeProtocolInfo.version {
                Glibc.close(fd)
                throw .incompatibleProtocol(path: path, agent: Int(exactly: p) ?? -1, client: EdgeProtocolInfo.version)
            }
            Glibc.close(fd)
            throw .notAnAgent(path: path, detail: error.reason)
        }
        guard case .version(let version) = message else {
            Glibc.close(fd)
            throw .notAnAgent(path: path, detail: "its first line is not a version line")
        }
        guard version.protocolVersion == EdgeProtocolInfo.version else {
            Glibc.close(fd)
            throw .incompatibleProtocol(path: path, agent: version.protocolVersion, client: EdgeProtocolInfo.version)
        }
        return version
    }

    /// A connection the agent refuses gets an error right after the version
    /// line and is closed: look (briefly) for that error.
    private func checkRefusal() throws(AgentClientError) {
        // Only what already arrived: the agent writes the refusal right
        // behind the version line. One that comes later still reaches the
        // reader as an error that closes the connection.
        guard let r = try receive(timeoutMs: 0) else { return }
        if case .success(.error(let code, let name, let message, let stream, nil)) = r.message,
           code?.closesConnection == true {
            close()
            throw AgentClientError.reply(code: code, codeName: name, message: message, stream: stream, uid: version.uid)
        }
        held.insert(r, at: 0)
    }

    /// The read buffer (with any lines after the version line), for a
    /// client that takes the socket over.
    func takeReader() -> LineReader {
        // Lines already taken out (a refusal check) go back in front.
        var r = reader
        if !held.isEmpty {
            var joined: [UInt8] = []
            for h in held { joined += h.bytes; joined.append(UInt8(ascii: "\n")) }
            r.prepend(joined)
            held.removeAll()
        }
        return r
    }

    /// The first descriptor the agent passed (a shared-memory ring's, with
    /// or before the bytes of the `subscribed` reply that offers it) and
    /// nobody took yet; nil when none came.
    public func takeDescriptor() -> Int32? { reader.takeDescriptor() }

    /// The kernel dropped descriptors the agent passed (this process is out of them).
    public var descriptorsTruncated: Bool { reader.descriptorsTruncated }

    /// Gives up the socket without closing it.
    func forget() { fd = -1; reader = LineReader() }

    /// The agent closed the connection (or it broke).
    public var isClosed: Bool { fd < 0 || reader.closed }

    /// Closes the socket (idempotent).
    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        reader.closeDescriptors()
    }

    /// Sends a request as one line. Returns false when the socket is broken
    /// (the next read sees the end).
    @discardableResult
    public func send(_ request: Request) -> Bool {
        guard fd >= 0 else { return false }
        writer.reset()
        request.encode(into: &writer)
        return AgentSocket.sendAll(fd, writer.bytes)
    }

    /// Sends `kind` with a fresh numeric id and returns the id (the reply,
    /// or the error, echoes it).
    @discardableResult
    public func send(_ kind: Request.Kind) -> RequestID {
        let id = RequestID.number(String(nextID))
        nextID += 1
        send(Request(kind: kind, id: id))
        return id
    }

    /// The next line from the agent, typed; nil when none arrives within
    /// `timeoutMs` (0: only what is already there; -1: wait without limit).
    /// - Throws: `disconnected` once the agent has closed the connection and
    ///   every line before the end has been returned.
    public func receive(timeoutMs: Int32) throws(AgentClientError) -> ReceivedLine? {
        if !held.isEmpty { return held.removeFirst() }
        let deadline = timeoutMs < 0 ? UInt64.max : monotonicNowNs() + UInt64(timeoutMs) * 1_000_000
        while true {
            if let line = reader.takeLine() {
                return ReceivedLine(bytes: line, message: Result { () throws(ServerMessage.DecodeError) in
                    try ServerMessage.decode(line: line)
                })
            }
            guard fd >= 0 else { throw .disconnected(path: socketPath, reason: "the connection was closed") }
            let now = monotonicNowNs()
            let wait: Int32 = deadline == .max ? -1 : (now >= deadline ? 0 : Int32(clamping: (deadline - now + 999_999) / 1_000_000))
            switch reader.read(fd, timeoutMs: wait) {
            case .data: continue
            case .timeout:
                if wait == 0 || monotonicNowNs() >= deadline { return nil }
            case .closed: throw .disconnected(path: socketPath, reason: "it ended without a shutdown message")
            case .tooLong: throw .undecodable(path: socketPath, reason: "a line over 1 MiB")
            case .failed(let e): throw .system(call: "recv", path: socketPath, errno: e)
            }
        }
    }

    /// Sends `kind` and waits (at most `timeoutMs`) for the reply with its
    /// id. Lines that arrive meanwhile (samples, events, other replies) are
    /// kept for ``receive(timeoutMs:)``.
    /// - Returns: the reply.
    /// - Throws: the agent's `error` reply as a typed error
    ///   (``AgentClientError/notEntitled(stream:entitlement:uid:message:)``,
    ///   `refused`), `timedOut`, `disconnected` (including a `shutdown`).
    public func request(_ kind: Request.Kind, timeoutMs: Int = 5000) throws(AgentClientError) -> ServerMessage {
        let id = send(kind)
        let deadline = monotonicNowNs() + UInt64(max(0, timeoutMs)) * 1_000_000
        var kept: [ReceivedLine] = []
        defer { held.insert(contentsOf: kept, at: 0) }
        let pending = held
        held.removeAll()
        kept = pending
        while true {
            let now = monotonicNowNs()
            if now >= deadline {
                throw .timedOut(path: socketPath, waitingFor: "reply to \(Self.name(kind))", seconds: Double(timeoutMs) / 1000)
            }
            guard let line = try receive(timeoutMs: Int32(clamping: (deadline - now) / 1_000_000 + 1)) else { continue }
            guard case .success(let m) = line.message else { kept.append(line); continue }
            if m.requestID == id {
                if case .error(let code, let name, let message, let stream, _) = m {
                    throw AgentClientError.reply(code: code, codeName: name, message: message, stream: stream,
                                                 uid: version.uid)
                }
                return m
            }
            if case .shutdown(let reason) = m {
                throw .disconnected(path: socketPath, reason: "the agent shut down (\(reason))")
            }
            kept.append(line)
        }
    }

    static func name(_ kind: Request.Kind) -> String {
        switch kind {
        case .devices: return "devices"
        case .streams: return "streams"
        case .stats: return "stats"
        case .ping: return "ping"
        case .poll(let s): return "poll \(s.rawValue)"
        case .subscribe(let s, _): return "subscribe \(s.rawValue)"
        case .unsubscribe(let s): return "unsubscribe \(s.rawValue)"
        case .history(let s, _, _): return "history \(s.rawValue)"
        case .record: return "record"
        case .recorded: return "recorded"
        }
    }
}

extension ServerMessage {
    /// The `id` the message echoes (nil for samples, events, the version
    /// line, and replies to requests sent without one).
    public var requestID: RequestID? {
        switch self {
        case .devices(_, let id), .streams(_, let id), .unsubscribed(_, let id): return id
        case .subscribed(_, _, let id): return id
        case .error(_, _, _, _, let id): return id
        case .stats(_, _, _, _, let id): return id
        case .pong(_, let id), .history(_, let id), .recording(_, let id), .recorded(_, let id): return id
        case .version, .sample, .connection, .shutdown, .unknown: return nil
        }
    }
}
