#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeClient
import EdgeProtocol
import Synchronization
import EdgeValues

/// A ``SampleFeed`` with no thread of its own: the broker thread polls the
/// agent's socket next to the broker's and calls ``service(readable:nowNs:)``
/// when it is readable or ``wakeAtNs`` has come. Each batch the agent
/// delivers (one per its delivery interval) is then read, turned into MQTT
/// messages and published in one turn of one thread: one wake-up per
/// batch, where a reader thread of its own cost a wake-up of that thread
/// and then one of the broker thread per message (docs/benchmarks.md, "MQTT
/// bridge").
public protocol PolledFeed: SampleFeed {
    /// The descriptor to poll for reading (-1: none now).
    var pollDescriptor: Int32 { get }
    /// When ``service(readable:nowNs:)`` is due without input
    /// (CLOCK_MONOTONIC ns; nil: only when readable).
    var wakeAtNs: UInt64? { get }
    /// Does what is due: connects, reads every line that has arrived,
    /// sends what was asked for. Events go to the handler on this thread.
    func service(readable: Bool, nowNs: UInt64)
}

/// The bridge's feed over the agent's socket, for the broker thread to
/// drive (``PolledFeed``), on EdgeClient's one-thread ``AgentConnection``
/// (connection, version check, typed lines).
///
/// What it reports is what ``AgentClientFeed`` reports:
/// * every configured stream is subscribed on every connection;
///   `.subscribed` is sent at a stream's first sample on each connection
///   (data flows: the bridge goes `online` on that, never on an
///   acknowledgement alone); a refusal is `.refused` with the agent's
///   reason, and the stream is asked for again on the next connection;
/// * after a failed attempt or a lost connection it tries again after 50 ms,
///   doubling to 2 s;
/// * the handshake waits in the poll loop (a hung agent holds up nothing
///   else), at most 5 s;
/// * `requestDevices()` may be called from any thread: the request goes
///   out on the next turn; the reply is `.devices`.
public final class PolledAgentFeed: PolledFeed, @unchecked Sendable {
    public let socketPath: String
    /// Wait for the version line, ns.
    let handshakeTimeoutNs: UInt64
    /// Wakes the thread that drives the feed (a devices request from
    /// another thread); nil: the caller's loop turns often enough.
    private let wakeup: Wakeup?
    private let devicesWanted = Atomic<Bool>(false)
    private let beats = Atomic<UInt64>(0)

    private enum Phase {
        case waiting(untilNs: UInt64)
        case handshaking(fd: Int32, deadlineNs: UInt64)
        case connected(AgentConnection)
        case stopped
    }

    private struct State {
        var handler: (@Sendable (FeedEvent) -> Void)?
        var subscriptions: [FeedSubscription] = []
        var phase = Phase.waiting(untilNs: 0)
        var backoff = Backoff(initialNs: 50_000_000, maximumNs: 2_000_000_000)
        /// Ids of the subscribe requests of this connection.
        var subscribeIDs: [RequestID: StreamName] = [:]
        /// Streams that delivered a sample on this connection.
        var flowing: Set<StreamName> = []
        /// The agent said it is stopping (the reason of the end that follows).
        var shutdownReason: String?
        /// ``start(subscriptions:handler:)`` was called.
        var started = false
    }
    /// Held for a whole turn of ``service(readable:nowNs:)`` (handlers run
    /// under it), and by ``stop()``: no event follows once stop returns.
    private let state = Locked(State())

    public init(socketPath: String, wakeup: Wakeup? = nil, handshakeTimeoutS: Double = 5) {
        self.socketPath = socketPath
        self.wakeup = wakeup
        handshakeTimeoutNs = UInt64(handshakeTimeoutS * 1e9)
    }

    /// Turns of the thread that drives it.
    public var heartbeat: UInt64 { beats.load(ordering: .relaxed) }

    public func start(subscriptions: [FeedSubscription], handler: @escaping @Sendable (FeedEvent) -> Void) {
        state.withLock { s in
            precondition(!s.started, "start once")
            s.started = true
            s.handler = handler
            s.subscriptions = subscriptions
        }
        wakeup?.signal()
    }

    public func requestDevices() {
        devicesWanted.store(true, ordering: .sequentiallyConsistent)
        wakeup?.signal()
    }

    public func stop() {
        state.withLock { s in
            if case .connected(let c) = s.phase { c.close() }
            if case .handshaking(let fd, _) = s.phase { close(fd) }
            s.phase = .stopped
            s.handler = nil
        }
    }

    public var pollDescriptor: Int32 {
        state.withLock { s -> Int32 in
            switch s.phase {
            case .handshaking(let fd, _): return fd
            case .connected(let c): return c.fd
            case .waiting, .stopped: return -1
            }
        }
    }

    public var wakeAtNs: UInt64? {
        state.withLock { s -> UInt64? in
            guard s.started else { return nil }
            switch s.phase {
            case .waiting(let at): return at
            case .handshaking(_, let deadline): return deadline
            case .connected, .stopped: return nil
            }
        }
    }

    public func service(readable: Bool, nowNs: UInt64) {
        beats.add(1, ordering: .relaxed)
        state.withLock { s in
            guard s.started, let handler = s.handler else { return }
            switch s.phase {
            case .stopped:
                return
            case .waiting(let at):
                guard nowNs >= at else { return }
                do throws(AgentClientError) {
                    let fd = try AgentSocket.connect(socketPath)
                    s.phase = .handshaking(fd: fd, deadlineNs: nowNs + handshakeTimeoutNs)
                } catch {
                    failed(&s, nowNs, handler, .connectFailed(error.description))
                }
            case .handshaking(let fd, let deadline):
                guard readable || nowNs >= deadline else { return }
                do throws(AgentClientError) {
                    // Readable: the version line is there (a part of it at worst).
                    let c = try AgentConnection.handshake(fd: fd, path: socketPath, timeoutMs: readable ? 200 : 0)
                    connected(&s, c, handler)
                } catch {
                    failed(&s, nowNs, handler, .connectFailed(error.description))
                }
            case .connected:
                break
            }
            guard case .connected(let c) = s.phase else { return }
            if readable { read(&s, c, handler, nowNs) }
            guard case .connected = s.phase else { return }
            if devicesWanted.exchange(false, ordering: .sequentiallyConsistent) {
                if !c.send(Request(kind: .devices, id: .string("devices"))) { read(&s, c, handler, nowNs) }
            }
        }
    }

    // MARK: - inside a turn (lock held)

    private func failed(_ s: inout State, _ nowNs: UInt64, _ handler: @Sendable (FeedEvent) -> Void, _ event: FeedEvent) {
        s.phase = .waiting(untilNs: nowNs + s.backoff.next())
        handler(event)
    }

    private func connected(_ s: inout State, _ c: AgentConnection, _ handler: @Sendable (FeedEvent) -> Void) {
        s.phase = .connected(c)
        s.backoff.reset()
        s.flowing = []
        s.shutdownReason = nil
        s.subscribeIDs = [:]
        handler(.connected(c.version))
        for sub in s.subscriptions {
            let id = RequestID.string("subscribe \(sub.stream.rawValue)")
            s.subscribeIDs[id] = sub.stream
            c.send(Request(kind: .subscribe(sub.stream, intervalNs: sub.intervalNs), id: id))
        }
        devicesWanted.store(true, ordering: .sequentiallyConsistent)
    }

    /// Every line that has arrived (without waiting), then the end of the
    /// connection if the agent closed it.
    private func read(_ s: inout State, _ c: AgentConnection, _ handler: @Sendable (FeedEvent) -> Void, _ nowNs: UInt64) {
        var end: String?
        while end == nil {
            let line: ReceivedLine?
            do { line = try c.receive(timeoutMs: 0) } catch {
                if case .disconnected = error {
                    end = s.shutdownReason.map { "the agent shut down (\($0))" } ?? "it ended without a shutdown message"
                } else {
                    end = error.description
                }
                break
            }
            guard let line else { break }
            guard case .success(let message) = line.message else { continue }
            end = handle(message, &s, c, handler)
        }
        guard let end else { return }
        c.close()
        s.phase = .waiting(untilNs: nowNs + s.backoff.next())
        s.flowing = []
        handler(.disconnected(AgentClientError.disconnected(path: socketPath, reason: end).description))
    }

    /// One message; returns why the connection ends, when it does.
    private func handle(_ message: ServerMessage, _ s: inout State, _ c: AgentConnection,
                        _ handler: @Sendable (FeedEvent) -> Void) -> String? {
        switch message {
        case .sample(let sample):
            let stream = sample.stream
            if s.flowing.insert(stream).inserted {
                let interval = s.subscriptions.first { $0.stream == stream }?.intervalNs ?? 0
                handler(.subscribed(stream, intervalS: Double(interval) / 1e9))
            }
            handler(.sample(sample))
        case .devices(let list, _):
            handler(.devices(list))
        case .connection(let event):
            handler(.device(event))
        case .shutdown(let reason):
            s.shutdownReason = reason
            handler(.shutdown(reason: reason))
        case .error(let code, let name, let text, let stream, let id):
            if let id, let refused = s.subscribeIDs.removeValue(forKey: id) {
                let e = AgentClientError.reply(code: code, codeName: name, message: text, stream: stream ?? refused,
                                               uid: c.version.uid)
                handler(.refused(refused, code: code, message: e.description))
            }
            if code?.closesConnection == true { return "\(name): \(text)" }
        case .subscribed, .version, .streams, .unsubscribed, .stats, .pong, .history, .recording, .recorded, .unknown:
            break
        }
        return nil
    }
}
