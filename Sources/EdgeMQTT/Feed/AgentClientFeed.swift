#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeClient
import EdgeProtocol
import Synchronization
import EdgeValues

/// The bridge's ``SampleFeed`` over EdgeClient's ``AgentClient``, the
/// project's one client of the agent's socket (connection, version check,
/// subscriptions, reconnection at 50 ms doubling to 2 s).
///
/// A client of its own (not the process's shared one): the bridge is one
/// connection to the agent, bound by its user's entitlements.
///
/// What AgentClient does not report itself is made here:
/// * `.subscribed` is sent at a stream's first sample on each connection
///   (the agent accepted it and data flows: the bridge goes `online` on
///   that, never on an acknowledgement alone);
/// * a refused subscription is over in AgentClient, so the stream is
///   subscribed again on the next connection (an operator may have granted
///   the entitlement and restarted the agent);
/// * `requestDevices()` may be called from the handler (the client's reader
///   thread, where AgentClient's blocking `request` must not run), so the
///   `devices` request runs on a small thread of the feed's own.
public final class AgentClientFeed: SampleFeed, @unchecked Sendable {
    public let socketPath: String
    private let client: AgentClient
    private let wakeup = Wakeup()
    private let stopping = Atomic<Bool>(false)
    private let devicesWanted = Atomic<Bool>(false)
    private let beats = Atomic<UInt64>(0)

    private struct State {
        var handler: (@Sendable (FeedEvent) -> Void)?
        var subscriptions: [FeedSubscription] = []
        var active: [StreamName: Subscription] = [:]
        var refused: Set<StreamName> = []
        /// Streams that delivered a sample on this connection.
        var flowing: Set<StreamName> = []
        var observation: Observation?
    }
    private let state = Locked(State())
    private var worker: BridgeThread?

    public init(socketPath: String) {
        self.socketPath = socketPath
        client = AgentClient(socketPath: socketPath)
    }

    /// Turns of the feed's own thread (about one a second, more when the
    /// device list is asked for).
    public var heartbeat: UInt64 { beats.load(ordering: .relaxed) }

    public func start(subscriptions: [FeedSubscription], handler: @escaping @Sendable (FeedEvent) -> Void) {
        precondition(worker == nil, "start once")
        state.withLock { $0.handler = handler; $0.subscriptions = subscriptions }
        worker = BridgeThread.start(name: "edge-mqtt devices") { [self] in runWorker() }
        let observation = client.observe { [self] event in
            switch event {
            case .connected(let v):
                let again = state.withLock { s -> [FeedSubscription] in
                    s.flowing = []
                    let list = s.subscriptions.filter { s.refused.contains($0.stream) }
                    s.refused.subtract(list.map(\.stream))
                    return list
                }
                handler(.connected(v))
                for sub in again { subscribe(sub) }
                requestDevices()
            case .connectFailed(let e):
                handler(.connectFailed(e.description))
            case .disconnected(let e):
                state.withLock { $0.flowing = [] }
                handler(.disconnected(e.description))
            case .device(let e):
                handler(.device(e))
            case .shutdown(let reason):
                handler(.shutdown(reason: reason))
            }
        }
        state.withLock { $0.observation = observation }
        for sub in subscriptions { subscribe(sub) }
    }

    private func subscribe(_ sub: FeedSubscription) {
        let stream = sub.stream
        let s = client.subscribe(stream, intervalNs: sub.intervalNs, onSample: { [self] sample in
            let (handler, first) = state.withLock { s in (s.handler, s.flowing.insert(stream).inserted) }
            if first { handler?(.subscribed(stream, intervalS: Double(sub.intervalNs) / 1e9)) }
            handler?(.sample(sample))
        }, onError: { [self] error in
            let handler = state.withLock { s -> (@Sendable (FeedEvent) -> Void)? in
                s.active[stream] = nil
                s.refused.insert(stream)
                return s.handler
            }
            let code: ErrorCode?
            switch error {
            case .notEntitled: code = .notEntitled
            case .refused(let c, _, _, _): code = c
            case .tooManyClients(let c, _): code = c
            default: code = nil
            }
            handler?(.refused(stream, code: code, message: error.description))
        }, onLoss: { [self] n in
            state.withLock { $0.handler }?(.lost(stream, count: n))
        })
        state.withLock { $0.active[stream] = s }
    }

    public func requestDevices() {
        devicesWanted.store(true, ordering: .sequentiallyConsistent)
        wakeup.signal()
    }

    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        wakeup.signal()
        worker?.join()
        worker = nil
        let (observation, subs) = state.withLock { s -> (Observation?, [Subscription]) in
            let r = (s.observation, Array(s.active.values))
            s.handler = nil
            s.observation = nil
            s.active = [:]
            return r
        }
        observation?.cancel()
        for s in subs { s.cancel() }
        client.close()
    }

    private func runWorker() {
        while !stopping.load(ordering: .sequentiallyConsistent) {
            beats.add(1, ordering: .relaxed)
            var p = pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 1000)
            wakeup.drain()
            guard devicesWanted.exchange(false, ordering: .sequentiallyConsistent), client.isConnected else { continue }
            // Answered on the client's reader thread; waited for here.
            guard case .devices(let list, _)? = try? client.request(.devices, timeoutMs: 2000) else { continue }
            let handler = state.withLock { $0.handler }
            handler?(.devices(list))
        }
    }
}
