#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeProtocol
import EdgeValues

/// What happens to a client's connection, and the agent's events.
public enum AgentEvent: Sendable, Hashable {
    /// Connected (again): the version line. Every subscription has been
    /// sent again.
    case connected(ServerMessage.VersionInfo)
    /// A connection attempt failed; while anything needs the agent the
    /// client tries again after a delay that doubles up to 2 s.
    case connectFailed(AgentClientError)
    /// The connection ended (the agent stopped or restarted); the client
    /// reconnects while anything needs it.
    case disconnected(AgentClientError)
    /// A device's health changed (`connection` event).
    case device(ConnectionEvent)
    /// The agent said it is stopping (`shutdown`), just before it closes.
    case shutdown(reason: String)
}

/// The process's client of the agent: one connection, shared by everything
/// in the process that wants samples (every `CMMotionManager`, `CMAltimeter`
/// ... of an app, so several managers cost the agent one client).
///
/// * Several subscribers of one stream share one wire subscription at an
///   interval that serves them all (``wireInterval(for:)``); each gets its
///   own interval back by capture time (``Decimator``).
/// * Requests carry ids; replies are matched to them.
/// * After the agent restarts, the client reconnects (50 ms, doubling to
///   2 s, while anything is subscribed or observing) and subscribes again.
/// * A reader pthread of its own reads the socket; sample and event
///   handlers run on it and must return quickly (hand the work to a queue).
/// * Where the agent offers one, a stream's samples come through a
///   shared-memory ring instead of lines (``usesRings``): a second pthread
///   reads every ring. Sample handlers are never called concurrently, from
///   either thread.
///
/// Errors are ``AgentClientError``s: a refused subscription reaches its
/// subscriber's error handler (then the subscription is over); a
/// connection that cannot be made reaches ``connect(timeoutMs:)`` and the
/// observers.
public final class AgentClient: @unchecked Sendable {
    /// The socket's path.
    public let socketPath: String
    /// The configuration the path came from and its socket group (for the
    /// advice on permission errors).
    public let configPath: String?
    public let configuredGroup: String?
    /// Wait for the version line, ms.
    public let connectTimeoutMs: Int
    /// Whether subscriptions ask the agent for shared-memory rings (the
    /// default, unless `EDGE_AGENT_RINGS=0` is in the environment). A stream
    /// the agent offers no ring for, or whose ring cannot be read, comes as
    /// lines; nothing else differs.
    public let usesRings: Bool

    /// The default of ``usesRings``: false when `EDGE_AGENT_RINGS` is `0`,
    /// `off`, `no` or `false`.
    public static var ringsByDefault: Bool {
        guard let v = getenv("EDGE_AGENT_RINGS").map({ String(cString: $0).lowercased() }) else { return true }
        return !["0", "off", "no", "false"].contains(v)
    }

    private let lock = ConditionLock()
    // Everything below is guarded by `lock`.
    private var fd: Int32 = -1
    private var currentVersion: ServerMessage.VersionInfo?
    private var streams: [StreamName: StreamState] = [:]
    private var observers: [Int: @Sendable (AgentEvent) -> Void] = [:]
    private var pending: [RequestID: Result<ServerMessage, AgentClientError>?] = [:]
    private var connectWaiters = 0
    private var attempts = 0
    private var lastAttemptError: AgentClientError?
    private var attemptNow = false
    private var stopped = false
    private var thread: ClientThread?
    private var nextToken = 1
    private var nextRequestID = 1
    private var backoff: Backoff
    private var writer = JSONWriter(capacity: 256)
    private var counters = Counters()
    /// Held while sample handlers run (from the socket's thread or the ring
    /// reader's), so they never run concurrently.
    private let deliveryLock = ConditionLock()
    private var ringReader: RingReader?

    /// Counts since the client was made.
    public struct Counters: Sendable, Hashable {
        /// Lines read from the agent.
        public var lines = 0
        /// Samples decoded.
        public var samples = 0
        /// Samples handed to subscribers (after each one's decimation).
        public var delivered = 0
        /// Lines that could not be decoded (ignored).
        public var undecodable = 0
        /// Connections made (the first and every reconnection).
        public var connections = 0
        /// Samples read from shared-memory rings.
        public var ringSamples = 0
        /// Samples a ring had overwritten before they were read (this
        /// process fell more than a ring behind).
        public var ringLost = 0
        /// Rings offered that could not be read (their streams came as lines again).
        public var ringFallbacks = 0
        /// Why the last of them could not be read, with its stream (nil: none was refused).
        public var lastRingFallback: String?
    }

    private struct Subscriber {
        /// In a class: handing it to the delivering thread's list is a
        /// retain, not a closure re-abstracted (and allocated) per sample.
        var onSample: SampleHandler
        var onError: @Sendable (AgentClientError) -> Void
        var onLoss: (@Sendable (Int) -> Void)?
        var decimator: Decimator
        /// The agent accepted the wire subscription since this subscriber joined.
        var confirmed = false
    }

    private struct StreamState {
        var subscribers: [Int: Subscriber] = [:]
        /// The interval last sent on the wire (nil: not subscribed there).
        var wireNs: UInt64?
        /// The id of the last `subscribe` sent, until its reply.
        var pendingID: RequestID?
        /// A ring offered for this stream could not be read: ask for lines.
        var ringRefused = false
    }

    // MARK: - the shared clients

    private static let registryLock = ConditionLock()
    nonisolated(unsafe) private static var registry: [String: AgentClient] = [:]

    /// The process's client for `socketPath` (made on first use; one per path).
    public static func shared(socketPath: String, configPath: String? = nil,
                              configuredGroup: String? = nil) -> AgentClient {
        registryLock.withLock {
            if let c = registry[socketPath], !c.isClosed { return c }
            let c = AgentClient(socketPath: socketPath, configPath: configPath, configuredGroup: configuredGroup)
            registry[socketPath] = c
            return c
        }
    }

    /// A client of its own (not the shared one): tools and tests that want
    /// a connection of their own to count as a separate client.
    public init(socketPath: String, configPath: String? = nil, configuredGroup: String? = nil,
                backoff: Backoff = Backoff(), connectTimeoutMs: Int = 5000, usesRings: Bool = AgentClient.ringsByDefault) {
        self.socketPath = socketPath; self.configPath = configPath; self.configuredGroup = configuredGroup
        self.backoff = backoff; self.connectTimeoutMs = connectTimeoutMs; self.usesRings = usesRings
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    // MARK: - state

    /// The version line of the current connection (nil while not connected).
    public var version: ServerMessage.VersionInfo? { lock.withLock { currentVersion } }

    /// Whether a connection is open now.
    public var isConnected: Bool { lock.withLock { fd >= 0 } }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { lock.withLock { stopped } }

    /// The counters so far.
    public var counts: Counters { lock.withLock { counters } }

    /// The streams read from a shared-memory ring now (the rest come as lines).
    public var ringStreams: [StreamName] { (lock.withLock { ringReader })?.streams ?? [] }

    /// Ends the client: closes the connection, stops the reader thread
    /// (joined), fails waiting requests. Subscriptions end silently.
    public func close() {
        let t: ClientThread? = lock.withLock {
            stopped = true
            if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
            lock.broadcast()
            let t = thread
            thread = nil
            return t
        }
        t?.join()
        let rings = lock.withLock { () -> RingReader? in defer { ringReader = nil }; return ringReader }
        rings?.stop()
        Self.registryLock.withLock {
            if Self.registry[socketPath] === self { Self.registry[socketPath] = nil }
        }
    }

    // MARK: - connecting and requests

    /// Waits until connected, or until a connection attempt made after
    /// this call fails (at most `timeoutMs`), and returns the version line.
    /// - Throws: the failed attempt's error (`noAgent`, `permissionDenied`,
    ///   `incompatibleProtocol`, `tooManyClients`...), or `timedOut`.
    @discardableResult
    public func connect(timeoutMs: Int? = nil) throws(AgentClientError) -> ServerMessage.VersionInfo {
        let timeout = timeoutMs ?? (connectTimeoutMs + 1000)
        let deadline = monotonicNowNs() + UInt64(max(0, timeout)) * 1_000_000
        lock.lock(); defer { lock.unlock() }
        if let v = currentVersion, fd >= 0 { return v }
        guard !stopped else { throw .disconnected(path: socketPath, reason: "the client was closed") }
        connectWaiters += 1
        defer { connectWaiters -= 1 }
        let before = attempts
        attemptNow = true
        try startThreadLocked()
        lock.broadcast()
        while true {
            if let v = currentVersion, fd >= 0 { return v }
            if stopped { throw .disconnected(path: socketPath, reason: "the client was closed") }
            if attempts > before, let e = lastAttemptError { throw e }
            if !lock.wait(untilNs: deadline) && monotonicNowNs() >= deadline {
                throw .timedOut(path: socketPath, waitingFor: "connection", seconds: Double(timeout) / 1000)
            }
        }
    }

    /// Sends `kind` (connecting first if needed) and waits at most
    /// `timeoutMs` for its reply. Do not call from a sample or event handler
    /// (they run on the thread that reads the reply).
    /// - Throws: the agent's error reply, typed; `timedOut`; `disconnected`.
    public func request(_ kind: Request.Kind, timeoutMs: Int = 5000) throws(AgentClientError) -> ServerMessage {
        let deadline = monotonicNowNs() + UInt64(max(0, timeoutMs)) * 1_000_000
        try connect(timeoutMs: timeoutMs)
        lock.lock(); defer { lock.unlock() }
        let id = RequestID.number(String(nextRequestID))
        nextRequestID += 1
        pending[id] = .some(nil)
        defer { pending[id] = nil }
        guard sendLocked(Request(kind: kind, id: id)) else {
            throw .disconnected(path: socketPath, reason: "the connection broke while sending")
        }
        while true {
            if case .some(.some(let result)) = pending[id] {
                switch result {
                case .success(let m): return m
                case .failure(let e): throw e
                }
            }
            if stopped { throw .disconnected(path: socketPath, reason: "the client was closed") }
            if !lock.wait(untilNs: deadline) && monotonicNowNs() >= deadline {
                throw .timedOut(path: socketPath, waitingFor: "reply to \(AgentConnection.name(kind))",
                                seconds: Double(timeoutMs) / 1000)
            }
        }
    }

    // MARK: - subscriptions and events

    /// Subscribes to `stream` every `intervalNs` of capture time (0: every
    /// sample). `onSample` gets the samples; `onError` the agent's refusal
    /// (`notEntitled`, `tooManyDemandChanges`...), after which this
    /// subscription is over; `onLoss` how many samples the stream's
    /// shared-memory ring overwrote before this process read them (it fell
    /// more than a ring, 1024 samples, behind). All run on the client's
    /// threads, never concurrently with another sample handler.
    public func subscribe(_ stream: StreamName, intervalNs: UInt64,
                          onSample: @escaping @Sendable (Sample) -> Void,
                          onError: @escaping @Sendable (AgentClientError) -> Void,
                          onLoss: (@Sendable (Int) -> Void)? = nil) -> Subscription {
        lock.lock(); defer { lock.unlock() }
        let token = nextToken
        nextToken += 1
        streams[stream, default: StreamState()].subscribers[token] =
            Subscriber(onSample: SampleHandler(onSample), onError: onError, onLoss: onLoss, decimator: Decimator(intervalNs: intervalNs))
        if stopped {
            onError(.disconnected(path: socketPath, reason: "the client was closed"))
        } else {
            do { try startThreadLocked() } catch { onError(error) }
            lock.broadcast()
            updateWireLocked(stream)
        }
        return Subscription(client: self, stream: stream, token: token)
    }

    /// Changes a subscriber's interval.
    func setInterval(_ intervalNs: UInt64, stream: StreamName, token: Int) {
        lock.withLock {
            guard streams[stream]?.subscribers[token] != nil else { return }
            streams[stream]!.subscribers[token]!.decimator = Decimator(intervalNs: intervalNs)
            updateWireLocked(stream)
        }
    }

    func cancel(stream: StreamName, token: Int) {
        lock.withLock {
            guard streams[stream]?.subscribers.removeValue(forKey: token) != nil else { return }
            updateWireLocked(stream)
        }
    }

    /// Calls `handler` with every ``AgentEvent`` (on the reader thread)
    /// until the observation is cancelled. Observing keeps the client
    /// connected (and reconnecting).
    public func observe(_ handler: @escaping @Sendable (AgentEvent) -> Void) -> Observation {
        lock.lock(); defer { lock.unlock() }
        let token = nextToken
        nextToken += 1
        observers[token] = handler
        if !stopped {
            try? startThreadLocked()
            lock.broadcast()
        }
        return Observation(client: self, token: token)
    }

    func removeObserver(_ token: Int) {
        _ = lock.withLock { observers.removeValue(forKey: token) }
    }

    /// Sends the wire subscription `stream`'s subscribers need now, if it
    /// differs from the one sent (lock held).
    private func updateWireLocked(_ stream: StreamName) {
        guard var s = streams[stream] else { return }
        let wanted = wireInterval(for: s.subscribers.values.map(\.decimator.intervalNs))
        guard wanted != s.wireNs else { return }
        guard fd >= 0 else { return } // sent on connection
        if let wanted {
            let id = RequestID.number(String(nextRequestID))
            nextRequestID += 1
            s.pendingID = id
            s.wireNs = wanted
            streams[stream] = s
            let ring = usesRings && !s.ringRefused && stream.carriesSamples ? SampleRingFormat.layoutID : nil
            sendLocked(Request(kind: .subscribe(stream, intervalNs: wanted), id: id, ringLayout: ring))
        } else {
            s.wireNs = nil
            s.pendingID = nil
            streams[stream] = s.subscribers.isEmpty ? nil : s
            sendLocked(Request(kind: .unsubscribe(stream)))
            ringReader?.remove(stream)
        }
    }

    @discardableResult
    private func sendLocked(_ request: Request) -> Bool {
        guard fd >= 0 else { return false }
        writer.reset()
        request.encode(into: &writer)
        return AgentSocket.sendAll(fd, writer.bytes)
    }

    private var neededLocked: Bool {
        connectWaiters > 0 || !observers.isEmpty || streams.values.contains { !$0.subscribers.isEmpty }
    }

    private func startThreadLocked() throws(AgentClientError) {
        guard thread == nil, !stopped else { return }
        thread = try ClientThread(name: "edge-client") { [self] in run() }
    }

    // MARK: - the reader thread

    private func notify(_ event: AgentEvent) {
        let list = lock.withLock { Array(observers.values) }
        for o in list { o(event) }
    }

    private func run() {
        var reader = LineReader()
        while true {
            lock.lock()
            while !stopped && fd < 0 && !neededLocked { lock.wait(untilNs: .max) }
            if stopped { lock.unlock(); return }
            if fd < 0 {
                attemptNow = false
                lock.unlock()
                attemptConnection(&reader)
                continue
            }
            let socket = fd
            lock.unlock()
            readUntilClosed(socket, &reader)
        }
    }

    /// One connection attempt: on success the subscriptions are sent again;
    /// on failure the observers are told and the thread waits out the backoff.
    private func attemptConnection(_ reader: inout LineReader) {
        let result: Result<(Int32, ServerMessage.VersionInfo, LineReader), AgentClientError>
        do throws(AgentClientError) {
            let c = try AgentConnection.connect(to: socketPath, timeoutMs: connectTimeoutMs,
                                                configPath: configPath, configuredGroup: configuredGroup)
            result = .success(c.detach())
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success(let (socket, version, r)):
            reader = r
            lock.lock()
            if stopped { lock.unlock(); Glibc.close(socket); return }
            fd = socket
            currentVersion = version
            attempts += 1
            lastAttemptError = nil
            backoff.reset()
            counters.connections += 1
            for name in Array(streams.keys) {
                streams[name]!.wireNs = nil
                for k in Array(streams[name]!.subscribers.keys) {
                    streams[name]!.subscribers[k]!.confirmed = false
                    streams[name]!.subscribers[k]!.decimator.reset()
                }
                updateWireLocked(name)
            }
            lock.broadcast()
            lock.unlock()
            notify(.connected(version))
            // Lines that came with the version line.
            drainLines(&reader)
        case .failure(let e):
            lock.lock()
            attempts += 1
            lastAttemptError = e
            lock.broadcast()
            let delay = backoff.next()
            lock.unlock()
            notify(.connectFailed(e))
            lock.lock()
            let until = monotonicNowNs() + delay
            while !stopped && !attemptNow && monotonicNowNs() < until {
                lock.wait(untilNs: until)
            }
            lock.unlock()
        }
    }

    private func readUntilClosed(_ socket: Int32, _ reader: inout LineReader) {
        var reason = "it ended without a shutdown message"
        loop: while true {
            switch reader.read(socket, timeoutMs: -1) {
            case .data, .timeout:
                if let r = drainLines(&reader) { reason = r }
            case .closed:
                if let r = drainLines(&reader) { reason = r }
                break loop
            case .tooLong:
                reason = "it sent a line over 1 MiB"
                break loop
            case .failed(let e):
                reason = "recv: \(String(cString: strerror(e)))"
                break loop
            }
            if lock.withLock({ stopped }) { break loop }
        }
        let error = AgentClientError.disconnected(path: socketPath, reason: reason)
        reader.closeDescriptors()
        lock.lock()
        ringReader?.removeAll()
        Glibc.close(socket)
        fd = -1
        currentVersion = nil
        for id in Array(pending.keys) where pending[id]! == nil { pending[id] = .some(.failure(error)) }
        for name in Array(streams.keys) { streams[name]!.wireNs = nil; streams[name]!.pendingID = nil }
        let wasStopped = stopped
        lock.broadcast()
        lock.unlock()
        reader = LineReader()
        if !wasStopped { notify(.disconnected(error)) }
    }

    /// Handles every complete line; returns why the agent will close, when
    /// a line said so (shutdown, or an error that closes the connection).
    @discardableResult
    private func drainLines(_ reader: inout LineReader) -> String? {
        var closing: String?
        while let line = reader.takeLine() {
            let message: ServerMessage
            do { message = try ServerMessage.decode(line: line) } catch {
                lock.withLock { counters.lines += 1; counters.undecodable += 1 }
                continue
            }
            // A poll's reply goes to its request, not to the stream's subscribers.
            if case .sample = message, let id = ServerMessage.pollReplyID(line: line) {
                let answered: Bool = lock.withLock {
                    guard pending[id] != nil else { return false }
                    counters.lines += 1
                    pending[id] = .some(.success(message))
                    lock.broadcast()
                    return true
                }
                if answered { continue }
            }
            if case .subscribed(let stream, _, _) = message { takeRingOffer(stream, line: line, &reader) }
            if let r = handle(message) { closing = r }
        }
        return closing
    }

    /// A `subscribed` reply: map the ring it offers (its descriptor is the
    /// first one passed and not yet taken), or read the stream as lines from
    /// now on when it offers none or the ring cannot be read.
    private func takeRingOffer(_ stream: StreamName, line: ArraySlice<UInt8>, _ reader: inout LineReader) {
        guard let offer = ServerMessage.ringOffer(line: line) else {
            lock.withLock { ringReader?.remove(stream) }
            return
        }
        let failure: String?
        if let passed = reader.takeDescriptor() {
            // Unsubscribed since (the unsubscribe is on its way): the ring is not needed.
            if lock.withLock({ streams[stream]?.wireNs == nil }) {
                Glibc.close(passed)
                return
            }
            if offer.isReadable {
                switch rings().add(stream, fd: passed, start: offer.start) {
                case .success: failure = nil
                case .failure(.refused(let e)): failure = "the ring failed its checks: \(String(cString: strerror(e)))"
                }
            } else {
                Glibc.close(passed)
                failure = "the ring's layout differs from this build's"
            }
        } else {
            failure = reader.descriptorsTruncated ? "this process is out of descriptors" : "no descriptor came with the offer"
        }
        guard let failure else { return }
        lock.withLock {
            counters.ringFallbacks += 1
            counters.lastRingFallback = "\(stream.rawValue): \(failure)"
            guard var s = streams[stream] else { return }
            s.ringRefused = true
            s.wireNs = nil
            streams[stream] = s
            updateWireLocked(stream)
        }
    }

    /// The ring reader (made on first use).
    private func rings() -> RingReader {
        lock.withLock {
            if let r = ringReader { return r }
            let r = RingReader(deliver: { [weak self] sample in self?.deliverFromRing(sample) },
                               lost: { [weak self] stream, n in self?.ringLost(stream, n) },
                               closed: { _ in })
            ringReader = r
            return r
        }
    }

    /// Handlers of the ring thread's current sample (kept to avoid an
    /// allocation per sample; only the ring thread touches it).
    private var ringDue = SampleHandler.list()

    /// Handlers of the socket thread's current sample (reused, as ``ringDue``).
    private var lineDue = SampleHandler.list()

    /// With `lock` held: appends the handlers of the subscribers that
    /// `sample` is due for (each one's decimation, advanced in place: no copy
    /// of the stream's state, no allocation).
    private func dueHandlersLocked(_ sample: Sample, into due: inout [SampleHandler]) {
        guard let si = streams.index(forKey: sample.stream) else { return }
        let t = sample.timestampNs
        var k = streams.values[si].subscribers.values.startIndex
        while k != streams.values[si].subscribers.values.endIndex {
            if streams.values[si].subscribers.values[k].decimator.admit(t) {
                due.append(streams.values[si].subscribers.values[k].onSample)
            }
            streams.values[si].subscribers.values.formIndex(after: &k)
        }
    }

    private func deliverFromRing(_ sample: Sample) { deliver(sample, fromRing: true, &ringDue) }

    /// Hands `sample` to the subscribers it is due for, `due` being the
    /// calling thread's reused list (``ringDue`` or ``lineDue``).
    private func deliver(_ sample: Sample, fromRing: Bool, _ due: inout [SampleHandler]) {
        due.removeAll(keepingCapacity: true)
        lock.withLock {
            if fromRing { counters.ringSamples += 1 } else { counters.lines += 1 }
            counters.samples += 1
            dueHandlersLocked(sample, into: &due)
            counters.delivered += due.count
        }
        deliveryLock.withLock { for h in due { h.call(sample) } }
    }

    private func ringLost(_ stream: StreamName, _ n: Int) {
        let handlers: [@Sendable (Int) -> Void] = lock.withLock {
            counters.ringLost += n
            return streams[stream]?.subscribers.values.compactMap(\.onLoss) ?? []
        }
        for h in handlers { h(n) }
    }

    private func handle(_ message: ServerMessage) -> String? {
        switch message {
        case .sample(let sample):
            deliver(sample, fromRing: false, &lineDue)
            return nil
        case .subscribed(let stream, _, let id):
            lock.withLock {
                counters.lines += 1
                guard let id, streams[stream]?.pendingID == id else { return }
                streams[stream]!.pendingID = nil
                for k in Array(streams[stream]!.subscribers.keys) { streams[stream]!.subscribers[k]!.confirmed = true }
            }
            return nil
        case .error(let code, let name, let text, let stream, let id):
            var failed: [@Sendable (AgentClientError) -> Void] = []
            let closes = code?.closesConnection == true
            let error: AgentClientError = lock.withLock {
                counters.lines += 1
                let error = AgentClientError.reply(code: code, codeName: name, message: text, stream: stream,
                                                   uid: currentVersion?.uid)
                guard let id else { return error }
                if pending[id] != nil { pending[id] = .some(.failure(error)); lock.broadcast(); return error }
                // A refused subscribe: its unconfirmed subscribers are told, and dropped.
                for (s, state) in streams where state.pendingID == id {
                    var st = state
                    st.pendingID = nil
                    st.wireNs = nil
                    for (k, sub) in st.subscribers where !sub.confirmed {
                        failed.append(sub.onError)
                        st.subscribers[k] = nil
                    }
                    streams[s] = st.subscribers.isEmpty ? nil : st
                    if !st.subscribers.isEmpty { updateWireLocked(s) }
                }
                return error
            }
            for f in failed { f(error) }
            return closes ? "\(name): \(text)" : nil
        case .devices(_, let id), .streams(_, let id), .unsubscribed(_, let id), .stats(_, _, _, _, let id),
             .pong(_, let id), .history(_, let id), .recording(_, let id), .recorded(_, let id):
            lock.withLock {
                counters.lines += 1
                if let id, pending[id] != nil { pending[id] = .some(.success(message)); lock.broadcast() }
            }
            return nil
        case .connection(let event):
            lock.withLock { counters.lines += 1 }
            notify(.device(event))
            return nil
        case .shutdown(let reason):
            lock.withLock { counters.lines += 1 }
            notify(.shutdown(reason: reason))
            return "the agent shut down (\(reason))"
        case .version, .unknown:
            lock.withLock { counters.lines += 1 }
            return nil
        }
    }
}

extension AgentConnection {
    /// Hands the socket, the version and the read buffer over (the
    /// connection no longer owns the socket).
    func detach() -> (Int32, ServerMessage.VersionInfo, LineReader) {
        let r = (fd, version, takeReader())
        forget()
        return r
    }
}

/// A subscriber's sample handler, in a class so that lists of them are lists
/// of references (a closure stored in an array is re-abstracted, which
/// allocates, every time it is put there).
final class SampleHandler: Sendable {
    let call: @Sendable (Sample) -> Void
    init(_ call: @escaping @Sendable (Sample) -> Void) { self.call = call }

    /// An empty list with room for the handlers of one sample.
    static func list() -> [SampleHandler] {
        var a: [SampleHandler] = []
        a.reserveCapacity(16)
        return a
    }
}

/// One subscriber's subscription; ``cancel()`` ends it (idempotent).
public final class Subscription: Sendable {
    private let client: AgentClient
    public let stream: StreamName
    private let token: Int

    init(client: AgentClient, stream: StreamName, token: Int) {
        self.client = client; self.stream = stream; self.token = token
    }

    /// Asks for samples every `intervalNs` from now on.
    public func setInterval(_ intervalNs: UInt64) { client.setInterval(intervalNs, stream: stream, token: token) }

    public func cancel() { client.cancel(stream: stream, token: token) }
}

/// An observer of a client's events; ``cancel()`` ends it.
public final class Observation: Sendable {
    private let client: AgentClient
    private let token: Int
    init(client: AgentClient, token: Int) { self.client = client; self.token = token }
    public func cancel() { client.removeObserver(token) }
}
