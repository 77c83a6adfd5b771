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
    /// Does what is due: connects, reads every line that has arrived and
    /// every record of its shared-memory rings, sends what was asked for.
    /// Events go to the handler on this thread.
    func service(readable: Bool, nowNs: UInt64)
    /// Whether the agent's batches come through shared-memory rings only
    /// now (every subscribed stream reads one): the driving thread then
    /// sleeps in ``waitForRings(control:controlSeen:timeoutMs:)``, which
    /// the agent ends once per delivery, and looks at the socket (replies,
    /// events) without waiting when it wakes.
    var readsRings: Bool { get }
    /// Whether the driving thread should sleep on the rings now: it reads
    /// rings and a sample may be due at the agent's next delivery. (When
    /// none can be due before a later time, ``wakeAtNs`` says when, and the
    /// thread polls its sockets until then.)
    var waitsOnRings: Bool { get }
    /// Waits until the agent signals a delivery on a ring read by the last
    /// ``service(readable:nowNs:)``, or the process-private word `control`
    /// differs from `controlSeen` (``Wakeup/control``), or `timeoutMs` passes.
    func waitForRings(control: UnsafePointer<UInt32>, controlSeen: UInt32, timeoutMs: Int32)
    /// What came through rings so far.
    var ringCounts: RingCounts { get }
}

extension PolledFeed {
    public var readsRings: Bool { false }
    public var waitsOnRings: Bool { false }
    public func waitForRings(control: UnsafePointer<UInt32>, controlSeen: UInt32, timeoutMs: Int32) {}
    public var ringCounts: RingCounts { RingCounts() }
}

/// How a ``PolledAgentFeed`` got its samples (the bridge's status report).
public struct RingCounts: Sendable, Equatable {
    /// Samples read from shared-memory rings (before the feed's decimation).
    public var samples = 0
    /// Samples read as JSON lines.
    public var lineSamples = 0
    /// Samples a ring overwrote before the feed read them.
    public var lost = 0
    /// Rings offered that could not be read (their streams came as lines again).
    public var fallbacks = 0
    /// Why the last of those could not be read.
    public var lastFailure: String?
    /// Streams read from a ring now.
    public var streams: [StreamName] = []
    public init() {}
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
///   out on the next turn; the reply is `.devices`;
/// * with ``usesRings`` (the default unless `EDGE_AGENT_RINGS=0`) each
///   sample stream is asked for in a shared-memory ring (docs/protocol.md,
///   "Shared-memory rings"): binary records, no JSON per sample, decimated
///   here by the agent's own rule (``Decimator``), so the samples are those
///   the lines would carry. A stream the agent offers no ring for, or whose
///   ring cannot be read, comes as lines (asked for again without a ring);
///   samples a ring overwrote before they were read are `.lost`.
public final class PolledAgentFeed: PolledFeed, @unchecked Sendable {
    public let socketPath: String
    /// Wait for the version line, ns.
    let handshakeTimeoutNs: UInt64
    /// Wakes the thread that drives the feed (a devices request from
    /// another thread); nil: the caller's loop turns often enough.
    private let wakeup: Wakeup?
    /// Subscriptions ask the agent for shared-memory rings.
    public let usesRings: Bool
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
        /// The rings this connection reads.
        var rings: [SampleRing] = []
        /// Subscribed streams whose samples come as lines on this
        /// connection (every one until the agent's reply offers a ring).
        var lineStreams: Set<StreamName> = []
        /// Streams whose ring could not be read: asked for as lines from then on.
        var ringRefused: Set<StreamName> = []
        /// Each stream's subscription interval applied to its ring's records.
        var decimators: [StreamName: Decimator] = [:]
        var counts = RingCounts()
        /// Samples of one pass over the rings (capacity kept).
        var batch: [Sample] = []
        /// The agent's delivery interval as the rings' wake words show it
        /// (its `service.delivery_interval_ms`: each delivery bumps the
        /// words once), ns; measured over at least 0.2 s.
        var deliveryGapNs: UInt64 = 20_000_000
        /// The start of that measurement: CLOCK_MONOTONIC ns and each ring's wake word then.
        var gapMarkNs: UInt64?
        var gapMarkWords: [StreamName: UInt32] = [:]
        /// What ``stop()`` let go of while the driving thread may still use
        /// it (poll the socket, read the rings' wake words outside the lock:
        /// before Linux 5.16 that read is in user space). Shut down, not
        /// closed or unmapped, so that no descriptor number or address is
        /// freed under that thread; released by its next turn or by deinit.
        var retiredRings: [SampleRing] = []
        var retiredConnection: AgentConnection?
        var retiredFD: Int32 = -1
    }
    /// Held for a whole turn of ``service(readable:nowNs:)`` (handlers run
    /// under it), and by ``stop()``: no event follows once stop returns.
    private let state = Locked(State())

    // The driving thread's own: what the last pass over the rings saw, for
    // the wait that follows it (outside the lock: stop() must not wait for it).
    private let waitBases = UnsafeMutablePointer<UnsafeRawPointer?>.allocate(capacity: StreamName.count)
    private let waitSeen = UnsafeMutablePointer<UInt32>.allocate(capacity: StreamName.count)
    private var waitCount = 0
    /// The ring whose wake ended the last wait (passed on in the next pass).
    private var wokenBy: UnsafeRawPointer?
    private let record = UnsafeMutableRawPointer.allocate(byteCount: SampleRingFormat.recordBytes, alignment: 8)

    public init(socketPath: String, wakeup: Wakeup? = nil, handshakeTimeoutS: Double = 5,
                usesRings: Bool = AgentClient.ringsByDefault) {
        self.socketPath = socketPath
        self.wakeup = wakeup
        self.usesRings = usesRings
        handshakeTimeoutNs = UInt64(handshakeTimeoutS * 1e9)
        waitBases.initialize(repeating: nil, count: StreamName.count)
        waitSeen.initialize(repeating: 0, count: StreamName.count)
        state.withLock { $0.batch.reserveCapacity(2 * SampleRingFormat.slotCount) }
    }

    deinit {
        state.withLock { s in
            for r in s.rings { r.unmap() }
            Self.releaseRetired(&s)
        }
        waitBases.deallocate(); waitSeen.deallocate(); record.deallocate()
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

    /// Stops: no event follows once it returns. May be called from any
    /// thread, also while the driving thread polls the socket or waits on
    /// the rings: the socket is shut down and the rings are kept mapped
    /// until the driving thread's next turn (or deinit) releases them.
    public func stop() {
        state.withLock { s in
            switch s.phase {
            case .connected(let c):
                shutdown(c.fd, Int32(SHUT_RDWR))
                s.retiredConnection = c
            case .handshaking(let fd, _):
                shutdown(fd, Int32(SHUT_RDWR))
                s.retiredFD = fd
            case .waiting, .stopped:
                break
            }
            dropRings(&s, retiring: true)
            s.phase = .stopped
            s.handler = nil
        }
    }

    /// Closes and unmaps what ``stop()`` let go of: on the driving thread,
    /// or once it has ended.
    private static func releaseRetired(_ s: inout State) {
        for r in s.retiredRings { r.unmap() }
        s.retiredRings.removeAll()
        s.retiredConnection?.close()
        s.retiredConnection = nil
        if s.retiredFD >= 0 { close(s.retiredFD); s.retiredFD = -1 }
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
            case .connected: return ringTimerNs(s, nowNs: monotonicNowNs())
            case .stopped: return nil
            }
        }
    }

    public func service(readable: Bool, nowNs: UInt64) {
        beats.add(1, ordering: .relaxed)
        state.withLock { s in
            if case .stopped = s.phase {
                // This thread is not waiting on them now.
                Self.releaseRetired(&s)
                return
            }
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
            if !s.rings.isEmpty { readRings(&s, handler, nowNs) }
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
        dropRings(&s)
        handler(.connected(c.version))
        for sub in s.subscriptions {
            s.lineStreams.insert(sub.stream)
            s.decimators[sub.stream] = Decimator(intervalNs: sub.intervalNs)
            subscribe(sub, &s, c)
        }
        devicesWanted.store(true, ordering: .sequentiallyConsistent)
    }

    private func subscribe(_ sub: FeedSubscription, _ s: inout State, _ c: AgentConnection) {
        let id = RequestID.string("subscribe \(sub.stream.rawValue)")
        s.subscribeIDs[id] = sub.stream
        let ring = usesRings && !s.ringRefused.contains(sub.stream) && sub.stream.carriesSamples
            ? SampleRingFormat.layoutID : nil
        c.send(Request(kind: .subscribe(sub.stream, intervalNs: sub.intervalNs), id: id, ringLayout: ring))
    }

    /// Lets go of every ring: on the driving thread (the connection ended)
    /// each is unmapped and the wait's state reset; from ``stop()``
    /// (`retiring`, maybe another thread, while the driving thread may wait
    /// on the rings' words) each is kept mapped for that thread's next turn
    /// to release, and the wait's state, which only it touches, is left.
    private func dropRings(_ s: inout State, retiring: Bool = false) {
        if retiring {
            s.retiredRings += s.rings
        } else {
            for r in s.rings { r.unmap() }
            waitCount = 0
            wokenBy = nil
        }
        s.rings.removeAll()
        s.lineStreams.removeAll()
        s.gapMarkNs = nil
    }

    /// A `subscribed` reply: map the ring it offers (its descriptor is the
    /// first one passed and not yet taken), or take the stream's samples as
    /// lines when it offers none; a ring that cannot be read is counted,
    /// and the stream asked for again without one.
    private func takeRingOffer(_ stream: StreamName, _ line: ArraySlice<UInt8>, _ s: inout State, _ c: AgentConnection) {
        if let i = s.rings.firstIndex(where: { $0.stream == stream }) { s.rings.remove(at: i).unmap() }
        guard let offer = ServerMessage.ringOffer(line: line) else {
            s.lineStreams.insert(stream)
            return
        }
        let failure: String
        if let fd = c.takeDescriptor() {
            if offer.isReadable {
                switch SampleRing.map(stream, fd: fd, start: offer.start) {
                case .success(let r):
                    s.rings.append(r)
                    s.lineStreams.remove(stream)
                    return
                case .failure(.refused(let e)):
                    failure = "the ring failed its checks: \(String(cString: strerror(e)))"
                }
            } else {
                close(fd)
                failure = "the ring's layout differs from this build's"
            }
        } else {
            failure = c.descriptorsTruncated ? "this process is out of descriptors" : "no descriptor came with the offer"
        }
        s.counts.fallbacks += 1
        s.counts.lastFailure = "\(stream.rawValue): \(failure)"
        s.ringRefused.insert(stream)
        s.lineStreams.insert(stream)
        if let sub = s.subscriptions.first(where: { $0.stream == stream }) { subscribe(sub, &s, c) }
    }

    /// Every record the rings got since the last pass, decimated to each
    /// subscription's interval, to the handler; the wake words first, for
    /// the wait that follows.
    private func readRings(_ s: inout State, _ handler: @Sendable (FeedEvent) -> Void, _ nowNs: UInt64) {
        var batch = s.batch
        s.batch = []
        batch.removeAll(keepingCapacity: true)
        var n = 0
        var i = 0
        var finished: [StreamName] = []
        while i < s.rings.count {
            var ring = s.rings[i]
            waitSeen[n] = ring.wakeWord
            waitBases[n] = ring.base
            n += 1
            let stream = ring.stream
            let before = batch.count
            let lost = ring.read(into: record) { batch.append($0) }
            s.counts.samples += batch.count - before
            if lost > 0 {
                s.counts.lost += lost
                handler(.lost(stream, count: lost))
            }
            if let w = wokenBy, w == ring.base { ring.relayWake(); wokenBy = nil }
            if ring.isFinished {
                // The agent let go of it (it is stopping): the socket's end follows.
                ring.unmap()
                s.rings.remove(at: i)
                finished.append(stream)
                n -= 1
                continue
            }
            s.rings[i] = ring
            i += 1
        }
        waitCount = n
        wokenBy = nil
        measureDeliveryGap(&s, nowNs)
        for sample in batch where s.decimators[sample.stream]?.admit(sample.timestampNs) ?? true {
            deliver(sample, &s, handler)
        }
        for stream in finished { s.lineStreams.insert(stream) }
        s.batch = batch
    }

    /// The agent's delivery interval: time over the most wake-word bumps any ring saw.
    private func measureDeliveryGap(_ s: inout State, _ nowNs: UInt64) {
        guard let mark = s.gapMarkNs, nowNs >= mark + 200_000_000 else {
            if s.gapMarkNs == nil { markGap(&s, nowNs) }
            return
        }
        var bumps: UInt32 = 0
        for r in s.rings { if let w0 = s.gapMarkWords[r.stream] { bumps = max(bumps, r.wakeWord &- w0) } }
        if bumps > 0 { s.deliveryGapNs = (nowNs - mark) / UInt64(bumps) }
        markGap(&s, nowNs)
    }

    private func markGap(_ s: inout State, _ nowNs: UInt64) {
        s.gapMarkNs = nowNs
        s.gapMarkWords = [:]
        for r in s.rings { s.gapMarkWords[r.stream] = r.wakeWord }
    }

    private func deliver(_ sample: Sample, _ s: inout State, _ handler: @Sendable (FeedEvent) -> Void) {
        let stream = sample.stream
        if s.flowing.insert(stream).inserted {
            let interval = s.subscriptions.first { $0.stream == stream }?.intervalNs ?? 0
            handler(.subscribed(stream, intervalS: Double(interval) / 1e9))
        }
        handler(.sample(sample))
    }

    public var readsRings: Bool { state.withLock { isRingMode($0) } }

    public var waitsOnRings: Bool {
        state.withLock { s in isRingMode(s) && ringTimerNs(s, nowNs: monotonicNowNs()) == nil }
    }

    private func isRingMode(_ s: State) -> Bool {
        guard case .connected = s.phase else { return false }
        return !s.rings.isEmpty && s.lineStreams.isEmpty
    }

    /// When every ring's stream is decimated (an interval, not every
    /// sample) and none can have a sample due before a time more than one
    /// delivery of the agent away (a stream at 10 Hz between deliveries
    /// every 20 ms): that time plus 1 ms. The thread sleeps in poll(2)
    /// until then instead of waking at each delivery in between only to
    /// drop what it reads; the agent writes a delivery's records as it
    /// signals them, so a sample due sooner is waited for on the rings.
    /// nil: wait on the rings.
    private func ringTimerNs(_ s: State, nowNs: UInt64) -> UInt64? {
        guard isRingMode(s) else { return nil }
        var earliest = UInt64.max
        for r in s.rings {
            guard let d = s.decimators[r.stream], d.intervalNs > 0, let due = d.nextDueNs else { return nil }
            earliest = min(earliest, due)
        }
        guard earliest > nowNs && earliest - nowNs > s.deliveryGapNs else { return nil }
        return earliest + 1_000_000
    }

    public func waitForRings(control: UnsafePointer<UInt32>, controlSeen: UInt32, timeoutMs: Int32) {
        let r = SampleRing.waitAny(waitBases, seen: waitSeen, count: waitCount, control: control,
                                   controlSeen: controlSeen, timeoutMs: timeoutMs)
        if r > 0 && Int(r) <= waitCount { wokenBy = waitBases[Int(r) - 1] }
    }

    public var ringCounts: RingCounts {
        state.withLock { s in
            var c = s.counts
            c.streams = s.rings.map(\.stream).sorted { $0.index < $1.index }
            return c
        }
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
            if case .subscribed(let stream, _, _) = message { takeRingOffer(stream, line.bytes, &s, c) }
            end = handle(message, &s, c, handler)
        }
        guard let end else { return }
        c.close()
        dropRings(&s)
        s.phase = .waiting(untilNs: nowNs + s.backoff.next())
        s.flowing = []
        handler(.disconnected(AgentClientError.disconnected(path: socketPath, reason: end).description))
    }

    /// One message; returns why the connection ends, when it does.
    private func handle(_ message: ServerMessage, _ s: inout State, _ c: AgentConnection,
                        _ handler: @Sendable (FeedEvent) -> Void) -> String? {
        switch message {
        case .sample(let sample):
            s.counts.lineSamples += 1
            deliver(sample, &s, handler)
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
