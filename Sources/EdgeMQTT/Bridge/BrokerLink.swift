#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CMosquitto
import EdgeProtocol
import Synchronization
import EdgeValues

/// The broker side of the bridge: one thread that owns the libmosquitto
/// session and does everything MQTT — connect, reconnect with capped
/// exponential backoff, publish the retained state and the queued messages,
/// answer Home Assistant's birth, serve the status socket, publish
/// `offline` on a clean stop. It only ever takes from the bounded queue,
/// so nothing it waits for reaches the agent's socket.
public final class BrokerLink: @unchecked Sendable {
    public let settings: BrokerSettings
    let bridge: Bridge
    let log: BridgeLog
    let backoffInitialNs: UInt64
    let backoffMaximumNs: UInt64
    let maxInflight: Int
    let statusServer: StatusServer?
    /// How often the `bridge` counters are published, ns.
    let countersIntervalNs: UInt64
    /// Restarts of the bridge process by its supervisor (nil: unsupervised).
    let workerRestarts: WorkerRestarts?
    /// The agent's side, driven by this link's thread (nil: a feed with a
    /// thread of its own pushes on the queue).
    let feed: (any PolledFeed)?

    private let stopRequested = Atomic<Bool>(false)
    private let beats = Atomic<UInt64>(0)
    private let summaryBox = Locked(Summary())
    private var thread: BridgeThread?
    private let startedNs = monotonicNowNs()

    /// What other threads may read about the link.
    public struct Summary: Sendable {
        public var connected = false
        public var connections = 0
        public var lastError: String?
        public var published = 0
        public var acknowledged = 0
        public var refused = 0
        public var homeAssistantBirths = 0
    }

    public init(settings: BrokerSettings, bridge: Bridge, log: BridgeLog, reconnectInitialS: Double, reconnectMaxS: Double,
                maxInflight: Int, statusServer: StatusServer?, countersIntervalS: Double = 60,
                workerRestarts: WorkerRestarts? = nil, feed: (any PolledFeed)? = nil) {
        self.workerRestarts = workerRestarts
        self.feed = feed
        self.settings = settings; self.bridge = bridge; self.log = log
        backoffInitialNs = UInt64(reconnectInitialS * 1e9)
        backoffMaximumNs = UInt64(reconnectMaxS * 1e9)
        self.maxInflight = maxInflight
        self.statusServer = statusServer
        countersIntervalNs = UInt64(countersIntervalS * 1e9)
    }

    public var heartbeat: UInt64 { beats.load(ordering: .relaxed) }
    public var summary: Summary { summaryBox.withLock { $0 } }

    /// Creates the session (so set-up errors — an unreadable CA file —
    /// surface before anything starts) and starts the broker thread.
    public func start() throws(MQTTError) {
        let session = try MosquittoSession(settings, will: (bridge.plan.status, BridgeStatusWord.offline,
                                                            Int32(bridge.config.qos.state), true))
        let box = SessionBox(session)
        thread = BridgeThread.start(name: "edge-mqtt broker") { [self] in
            Runner(link: self, session: box.session).run()
        }
    }

    /// Publishes `offline` (retained) if connected, waits at most
    /// `timeoutS` for the broker to acknowledge it, disconnects cleanly
    /// (so the broker does not send the Last Will as well) and joins.
    public func stop(timeoutS: Double = 3) {
        stopTimeoutNs = UInt64(timeoutS * 1e9)
        stopRequested.store(true, ordering: .sequentiallyConsistent)
        bridge.queue.wakeup.signal()
        thread?.join()
        thread = nil
    }
    private var stopTimeoutNs: UInt64 = 3_000_000_000

    fileprivate var isStopRequested: Bool { stopRequested.load(ordering: .sequentiallyConsistent) }
    fileprivate func beat() { beats.add(1, ordering: .relaxed) }
    fileprivate func store(_ summary: Summary) { summaryBox.withLock { $0 = summary } }
    fileprivate var uptimeNs: UInt64 { monotonicNowNs() - startedNs }
    fileprivate var stopTimeout: UInt64 { stopTimeoutNs }
}

/// Hands the session to the broker thread (created on the caller's thread,
/// used only on the broker thread from then on).
private final class SessionBox: @unchecked Sendable {
    let session: MosquittoSession
    init(_ s: MosquittoSession) { session = s }
}

/// Per-stream publishing counts, for the status report's rates.
struct StreamCounts: Sendable, Hashable {
    var json = 0
    var scalars = 0
}

/// The broker thread's own state: touched by nothing else.
private final class Runner {
    enum Phase: Equatable {
        case waiting(untilNs: UInt64)
        case connecting(deadlineNs: UInt64)
        case connected(sinceNs: UInt64)
        case stopped
    }

    struct Inflight {
        var topic: String
        var group: TopicGroup
        var stream: StreamName?
    }

    let link: BrokerLink
    let session: MosquittoSession
    let bridge: Bridge
    let log: BridgeLog
    var phase = Phase.waiting(untilNs: 0)
    var backoff: Backoff
    var publishedGeneration: [String: UInt64] = [:] { didSet { flushedGeneration = nil } }
    /// The retained store's generation when everything in it was last
    /// published (nil: check again).
    var flushedGeneration: UInt64?
    var inflight: [Int32: Inflight] = [:]
    var connections = 0
    var attemptsSinceConnected = 0
    var lastError: MQTTError?
    var lastLoggedError: String?
    var disconnectedAtNs: UInt64?
    var droppedLastOutage = 0
    var pendingDisconnect: Int32?
    var refusal: Int32?
    var homeAssistantBirths = 0
    var sent: [TopicGroup: Int] = [:]
    /// The sum of `sent`.
    var totalSent = 0
    /// Published since the summary last said how many (it is updated
    /// once per flush, not per message).
    var sentSinceSummary = false
    var acknowledged = 0
    var refusedCount = 0
    var refusals: [String: Int32] = [:]
    var byStream: [StreamName: StreamCounts] = [:]
    /// One snapshot of `byStream` per second, the last 11 (rates over 10 s).
    var history: [(ns: UInt64, counts: [StreamName: StreamCounts])] = []
    var lastHistoryNs: UInt64 = 0
    var lastCountersNs: UInt64 = 0
    /// The counters went out since this connection began (they are due at
    /// once after connecting, and again every interval).
    var countersSinceConnect = false
    var lastDelayNs: UInt64 = 0
    var stopping = false
    var stopDeadlineNs: UInt64 = 0
    var offlineMid: Int32?
    var offlineAcked = false

    var summary = BrokerLink.Summary()
    func updateSummary(_ body: (inout BrokerLink.Summary) -> Void) {
        body(&summary)
        link.store(summary)
    }

    init(link: BrokerLink, session: MosquittoSession) {
        self.link = link; self.session = session; bridge = link.bridge; log = link.log
        backoff = Backoff(initialNs: link.backoffInitialNs, maximumNs: link.backoffMaximumNs)
        installCallbacks()
    }

    var qos: QoSSection { bridge.config.qos }
    var plan: TopicPlan { bridge.plan }

    func installCallbacks() {
        session.callbacks.connected = { [unowned self] reason in
            if reason == 0 { connected() } else { refusal = reason }
        }
        session.callbacks.disconnected = { [unowned self] rc in pendingDisconnect = rc }
        session.callbacks.published = { [unowned self] mid, reason in published(mid, reason) }
        session.callbacks.message = { [unowned self] m in received(m) }
        session.callbacks.subscribed = { [unowned self] _, granted in
            if let g = granted.first, g >= 0x80 {
                log.info("the broker refused the subscription to \(plan.homeAssistantStatus) (code 0x\(String(g, radix: 16))): discovery is not re-sent when Home Assistant restarts; allow this user to read that topic")
            }
        }
        session.callbacks.log = { [unowned self] level, text in
            if level == Int32(MOSQ_LOG_ERR) || level == Int32(MOSQ_LOG_WARNING) { log.debug("libmosquitto: \(text)") }
        }
    }

    // MARK: - the loop

    func run() {
        // Messages this thread pushes need no wake-up of its own.
        bridge.queue.setConsumerThread()
        let feed = link.feed
        var extras = [bridge.queue.wakeup.fd, link.statusServer?.fd ?? -1, -1]
        let wakeup = bridge.queue.wakeup
        var controlSeen = wakeup.controlValue
        while phase != .stopped {
            link.beat()
            let now = monotonicNowNs()
            if link.isStopRequested && !stopping { beginStop(now) }
            if stopping && (now >= stopDeadlineNs || stopFinished) { break }
            switch phase {
            case .waiting(let at) where now >= at && !stopping:
                attempt(now)
            case .connecting(let deadline) where now >= deadline:
                session.disconnect()
                pendingDisconnect = nil
                failed(MQTTError(.timedOut(seconds: bridge.config.broker.connectTimeoutS), broker: session.settings.address), now)
            default:
                break
            }
            if case .connected = phase { flush(now) }
            extras[2] = feed?.pollDescriptor ?? -1
            var timeout = timeoutMs(now)
            if let at = feed?.wakeAtNs {
                timeout = min(timeout, Int32(clamping: (at > now ? at - now : 0) / 1_000_000 + 1))
            }
            // The agent's batches on shared-memory rings: sleep until it
            // signals one (once per delivery), then look at every socket
            // without waiting. A socket's news (a broker's reply, the
            // agent's events, a status request) waits for the next
            // delivery, at most `ringSocketCheckMs`; a signal of `wakeup`
            // (another thread queued something, stop) ends the wait.
            var ringTurn = false
            if let feed, timeout > 0, !session.wantsWrite, feed.waitsOnRings {
                feed.waitForRings(control: wakeup.control, controlSeen: controlSeen,
                                  timeoutMs: min(timeout, Self.ringSocketCheckMs))
                timeout = 0
                ringTurn = true
            }
            let signalled = wakeup.controlValue != controlSeen
            controlSeen = wakeup.controlValue
            // Woken by a delivery with nothing awaited from the broker (no
            // acknowledgement in flight, nothing unwritten) and the sockets
            // looked at less than `ringPollEveryNs` ago: the turn publishes
            // the batch without polling them (one poll(2) per
            // `ringPollEveryNs`, not one per delivery). Their news (a
            // status request, the agent's events, a broken connection)
            // waits at most that long; a signal (stop, a request from
            // another thread) polls at once.
            let result: MosquittoSession.ServiceResult
            let turnNs = monotonicNowNs()
            if ringTurn && !signalled && inflight.isEmpty && !session.wantsWrite
                && turnNs &- lastPollNs < Self.ringPollEveryNs, case .connected = phase {
                result = session.serviceWithoutPolling()
            } else {
                lastPollNs = turnNs
                result = session.service(timeoutMs: timeout, extraFD: extras)
            }
            if result.readable[0] { bridge.queue.wakeup.drain() }
            if result.readable[1] { link.statusServer?.serve(statusJSON()) }
            afterService(result.failure)
            let after = monotonicNowNs()
            if let feed, ringTurn || result.readable[2] || feed.wakeAtNs.map({ after >= $0 }) == true || result.readable[0] {
                // The agent's batch, published in this same turn.
                feed.service(readable: result.readable[2], nowNs: after)
                if case .connected = phase { flush(after) }
            }
            periodic(after)
        }
        if case .connected = phase {
            session.disconnect()
            // Let the DISCONNECT go out before the process ends.
            let end = monotonicNowNs() + 500_000_000
            while session.socket >= 0 && pendingDisconnect == nil && monotonicNowNs() < end {
                _ = session.service(timeoutMs: 50)
            }
        }
        updateSummary { s in s.connected = false }
    }

    /// The longest a thread sleeping on the agent's rings leaves its sockets
    /// unread when no delivery comes (a stalled agent, streams at 1 Hz).
    static let ringSocketCheckMs: Int32 = 200
    /// On the agent's rings, how often the sockets are polled while
    /// deliveries come (more often when the broker owes an answer), ns.
    static let ringPollEveryNs: UInt64 = 50_000_000
    /// When the sockets were last polled (CLOCK_MONOTONIC ns).
    var lastPollNs: UInt64 = 0

    func timeoutMs(_ now: UInt64) -> Int32 {
        var until = now + 1_000_000_000
        switch phase {
        case .waiting(let at): until = min(until, at)
        case .connecting(let d): until = min(until, d)
        default: break
        }
        if stopping { until = min(until, now + 20_000_000) }
        return Int32(clamping: (until > now ? until - now : 0) / 1_000_000 + 1)
    }

    var stopFinished: Bool {
        switch phase {
        case .connected: return offlineAcked || offlineMid == nil && !wantsOffline
        default: return true
        }
    }
    var wantsOffline = false

    func attempt(_ now: UInt64) {
        attemptsSinceConnected += 1
        refusal = nil
        pendingDisconnect = nil
        // libmosquitto's log says why a connection fails (TLS above all).
        session.forwardsLog = true
        do {
            try session.startConnect()
            phase = .connecting(deadlineNs: now + UInt64(bridge.config.broker.connectTimeoutS * 1e9))
            log.debug("connecting to \(session.settings.address) (attempt \(attemptsSinceConnected))")
        } catch {
            failed(error, now)
        }
    }

    /// A connection attempt failed or a connection ended: wait, then try again.
    func failed(_ error: MQTTError, _ now: UInt64) {
        lastError = error
        let delay = backoff.next()
        phase = .waiting(untilNs: now + delay)
        let text = error.description
        if text != lastLoggedError {
            log.info("\(text); trying again in \(seconds(delay)) s (at most every \(seconds(link.backoffMaximumNs)) s)")
            lastLoggedError = text
        } else {
            log.debug("\(text); next attempt in \(seconds(delay)) s")
        }
        updateSummary { s in s.connected = false; s.lastError = text }
    }

    func afterService(_ failure: MQTTError?) {
        let now = monotonicNowNs()
        if let r = refusal {
            // CONNACK said no; libmosquitto has closed the socket.
            refusal = nil
            pendingDisconnect = nil
            if stopping { phase = .stopped; return }
            failed(MQTTError(.refused(reason: r, protocolVersion: session.settings.protocolVersion),
                             broker: session.settings.address), now)
            return
        }
        guard pendingDisconnect != nil || failure != nil else { return }
        let rc = pendingDisconnect ?? 0
        pendingDisconnect = nil
        switch phase {
        case .connected:
            disconnectedAtNs = now
            inflight = [:]
            if stopping { phase = .stopped; return }
            failed(failure ?? MQTTError(.lost(rc: rc), broker: session.settings.address), now)
        case .connecting:
            if stopping { phase = .stopped; return }
            failed(failure ?? session.error(for: rc, errno: 0), now)
        case .waiting, .stopped:
            break
        }
    }

    // MARK: - connection events

    func connected() {
        let now = monotonicNowNs()
        let reconnect = connections > 0
        connections += 1
        phase = .connected(sinceNs: now)
        // Connected without TLS, libmosquitto's log would only cost a
        // formatted line per packet (MosquittoSession.forwardsLog); with TLS
        // it says why a connection ends (OpenSSL's errors), and --verbose
        // wants it.
        if session.settings.tls == nil && !log.isVerbose { session.forwardsLog = false }
        backoff.reset()
        publishedGeneration = [:]
        inflight = [:]
        lastError = nil
        lastLoggedError = nil
        droppedLastOutage = bridge.queue.markBrokerConnected()
        let what = "MQTT \(session.settings.protocolVersion.rawValue)\(session.settings.tls == nil ? "" : ", TLS")"
        if reconnect {
            let away = disconnectedAtNs.map { seconds(now - $0) } ?? "?"
            log.info("reconnected to the broker at \(session.settings.address) (\(what)) after \(away) s, attempt \(attemptsSinceConnected); \(droppedLastOutage) message(s) dropped while it was away (queue capacity \(bridge.queue.capacity)); re-publishing the retained state and discovery")
        } else {
            log.info("connected to the broker at \(session.settings.address) (\(what)) as client \(session.settings.clientID)")
        }
        attemptsSinceConnected = 0
        if bridge.config.topics.discovery {
            _ = session.subscribe(plan.homeAssistantStatus, qos: Int32(qos.discovery))
        }
        countersSinceConnect = false
        publishCounters(now)
        updateSummary { s in s.connected = true; s.connections = connections; s.lastError = nil }
    }

    func published(_ mid: Int32, _ reason: Int32) {
        if mid == offlineMid { offlineAcked = true }
        guard let f = inflight.removeValue(forKey: mid) else { return }
        if reason >= 0x80 {
            refusedCount += 1
            if refusals[f.topic] == nil {
                if refusals.count < 64 { refusals[f.topic] = reason }
                log.info("the broker refused a publish to \(f.topic): \(String(cString: mosquitto_reason_string(reason))) (MQTT 5 reason code 0x\(String(reason, radix: 16))); check the broker's ACL for this user")
            }
        } else {
            acknowledged += 1
        }
        updateSummary { s in s.acknowledged = acknowledged; s.refused = refusedCount }
    }

    func received(_ m: ReceivedMQTTMessage) {
        guard m.topic == plan.homeAssistantStatus else { return }
        let text = String(decoding: m.payload, as: UTF8.self)
        guard text == "online" else { return }
        homeAssistantBirths += 1
        // Everything discovery-related is published again.
        for (topic, entry) in bridge.retained.entries where entry.group == .discovery || topic == plan.status {
            publishedGeneration[topic] = nil
        }
        log.limited("ha-birth", "Home Assistant announced itself (\(plan.homeAssistantStatus) = online\(m.retained ? ", retained" : "")): re-sending discovery")
        updateSummary { s in s.homeAssistantBirths = homeAssistantBirths }
    }

    // MARK: - publishing

    func flush(_ now: UInt64) {
        guard !stopping else { return }
        let storeGeneration = bridge.retained.generation
        // A batch (an agent delivery's samples, a sample's scalar topics,
        // the retained state) leaves in one TCP segment, not one per
        // message: one trip through the kernel's TCP and one wake-up of the
        // broker for it.
        let corked = (bridge.queue.queued >= 2 || flushedGeneration != storeGeneration) && session.cork()
        defer {
            if corked { session.uncork() }
            if sentSinceSummary { sentSinceSummary = false; updateSummary { s in s.published = totalSent } }
        }
        if flushedGeneration != storeGeneration {
            for (entry, generation) in bridge.retained.pending(published: publishedGeneration, statusTopic: plan.status) {
                if inflight.count >= link.maxInflight || session.wantsWrite { return }
                let q = qos[entry.group]
                switch session.publish(topic: entry.topic, payload: entry.payload, qos: Int32(q), retain: true) {
                case .success(let mid):
                    publishedGeneration[entry.topic] = generation
                    count(entry.group, nil, mid: mid, qos: q, topic: entry.topic)
                case .failure(let e):
                    log.debug("publish \(entry.topic) failed: \(e)")
                    return
                }
            }
            // Everything retained is out at this generation.
            flushedGeneration = storeGeneration
        }
        while inflight.count < link.maxInflight && !session.wantsWrite, let m = bridge.queue.pop() {
            switch session.publish(topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain) {
            case .success(let mid):
                count(m.group, m.stream, mid: mid, qos: Int(m.qos), topic: m.topic)
                if m.captureNs > 0 && now > m.captureNs { lastDelayNs = now - m.captureNs }
            case .failure(let e):
                bridge.queue.pushFront(m)
                log.debug("publish \(m.topic) failed: \(e)")
                return
            }
        }
    }

    func count(_ group: TopicGroup, _ stream: StreamName?, mid: Int32, qos: Int, topic: String) {
        sent[group, default: 0] += 1
        if qos > 0 { inflight[mid] = Inflight(topic: topic, group: group, stream: stream) }
        if let stream {
            if group == .data { byStream[stream, default: StreamCounts()].json += 1 }
            if group == .scalars { byStream[stream, default: StreamCounts()].scalars += 1 }
        }
        totalSent += 1
        sentSinceSummary = true
    }

    func periodic(_ now: UInt64) {
        if now - lastHistoryNs >= 1_000_000_000 {
            lastHistoryNs = now
            history.append((now, byStream))
            if history.count > 11 { history.removeFirst(history.count - 11) }
        }
        // Until the agent grants a stream (often just after the broker
        // connects) nothing may go out: tried every turn until then.
        if case .connected = phase, !countersSinceConnect || now - lastCountersNs >= link.countersIntervalNs { publishCounters(now) }
    }

    /// `<prefix>/<node>/bridge`: retained counters, only while the agent
    /// grants the bridge something (an unentitled bridge publishes nothing
    /// but its offline status).
    func publishCounters(_ now: UInt64) {
        guard bridge.grantsAnything else { return }
        lastCountersNs = now
        countersSinceConnect = true
        let q = bridge.queue.counts
        var w = JSONWriter(capacity: 512)
        w.beginObject()
        w.key("bridge"); w.string(EdgeMQTTInfo.name)
        w.key("version"); w.string(EdgeMQTTInfo.version)
        w.key("uptime_s"); w.int(link.uptimeNs / 1_000_000_000)
        w.key("broker_connections"); w.int(connections)
        w.key("published"); w.int(totalSent)
        w.key("acknowledged"); w.int(acknowledged)
        w.key("refused"); w.int(refusedCount)
        w.key("dropped"); w.int(q.dropped)
        w.key("dropped_last_outage"); w.int(droppedLastOutage)
        w.key("queue_capacity"); w.int(bridge.queue.capacity)
        w.key("process_restarts"); w.int(link.workerRestarts?.restarts ?? 0)
        w.key("last_process_exit"); if let e = link.workerRestarts?.lastExit { w.string(e) } else { w.null() }
        w.endObject()
        bridge.retained.set(RetainedEntry(topic: plan.bridge, payload: w.bytes, group: .state))
    }

    // MARK: - stopping

    func beginStop(_ now: UInt64) {
        stopping = true
        stopDeadlineNs = now + link.stopTimeout
        guard case .connected = phase else { phase = .stopped; return }
        wantsOffline = true
        // The explicit `offline`: a clean DISCONNECT suppresses the Last Will.
        switch session.publish(topic: plan.status, payload: Array(BridgeStatusWord.offline.utf8),
                               qos: Int32(qos.state), retain: true) {
        case .success(let mid):
            if qos.state == 0 { offlineAcked = true } else { offlineMid = mid }
            log.info("stopping: published \(plan.status) = offline")
        case .failure:
            offlineAcked = true
        }
    }

    // MARK: - status

    func statusJSON() -> [UInt8] {
        let now = monotonicNowNs()
        let wallNow = realtimeNowNs()
        let snap = bridge.snapshot()
        let q = bridge.queue.counts
        var w = JSONWriter(capacity: 4096)
        w.beginObject()
        w.key("class"); w.name("status")
        w.key("bridge"); w.string(EdgeMQTTInfo.name)
        w.key("version"); w.string(EdgeMQTTInfo.version)
        w.key("node"); w.string(plan.node)
        w.key("pid"); w.int(Int(getpid()))
        w.key("uptime_s"); w.double(Double(link.uptimeNs) / 1e9)
        // The supervisor's restarts of the bridge process (docs/mqtt.md).
        w.key("process"); w.beginObject()
        w.key("supervised"); w.bool(link.workerRestarts != nil)
        w.key("restarts"); w.int(link.workerRestarts?.restarts ?? 0)
        w.key("last_exit"); if let e = link.workerRestarts?.lastExit { w.string(e) } else { w.null() }
        w.endObject()
        // What the retained status topic says (the broker may not have it yet).
        w.key("status"); w.string(snap.online ? BridgeStatusWord.online : BridgeStatusWord.offline)
        w.key("broker"); w.beginObject()
        w.key("address"); w.string(session.settings.address)
        w.key("protocol"); w.string(session.settings.protocolVersion.rawValue)
        w.key("tls"); w.bool(session.settings.tls != nil)
        w.key("client_id"); w.string(session.settings.clientID)
        w.key("user"); if let u = session.settings.username { w.string(u) } else { w.null() }
        switch phase {
        case .connected(let since):
            w.key("state"); w.name("connected")
            w.key("connected_for_s"); w.double(Double(now - since) / 1e9)
        case .connecting:
            w.key("state"); w.name("connecting")
        case .waiting(let at):
            w.key("state"); w.name(connections == 0 ? "not connected" : "reconnecting")
            w.key("next_attempt_in_s"); w.double(at > now ? Double(at - now) / 1e9 : 0)
        case .stopped:
            w.key("state"); w.name("stopped")
        }
        w.key("connections"); w.int(connections)
        w.key("reconnects"); w.int(max(0, connections - 1))
        w.key("failed_attempts"); w.int(attemptsSinceConnected)
        w.key("backoff_max_s"); w.double(Double(link.backoffMaximumNs) / 1e9)
        w.key("last_error"); if let e = lastError { w.string(e.description) } else { w.null() }
        w.endObject()
        w.key("agent"); w.beginObject()
        w.key("socket"); w.string(snap.agentSocket)
        w.key("connected"); w.bool(snap.agentConnected)
        if let v = snap.version {
            w.key("uid"); w.int(Int(v.uid))
            w.key("agent_version"); w.string(v.agentVersion)
            w.key("entitlements"); w.beginArray(); for e in v.entitlements { w.string(e.rawValue) }; w.endArray()
        }
        w.key("connections"); w.int(snap.agentConnections)
        w.key("last_problem"); if let p = snap.lastAgentProblem { w.string(p) } else { w.null() }
        // Every watched stream stalled: connected, but nothing arrives.
        w.key("stalled"); w.bool(snap.silent)
        // A probe (devices request) into its silence went unanswered.
        w.key("unresponsive"); w.bool(snap.agentUnresponsive)
        // How the samples come: shared-memory rings or JSON lines (docs/mqtt.md).
        if let feed = link.feed {
            let rc = feed.ringCounts
            w.key("ring_streams"); w.beginArray(); for st in rc.streams { w.name(MessageEncoder.streamName(st)) }; w.endArray()
            w.key("ring_samples"); w.int(rc.samples)
            w.key("line_samples"); w.int(rc.lineSamples)
            w.key("ring_lost"); w.int(rc.lost)
            w.key("ring_fallbacks"); w.int(rc.fallbacks)
            w.key("last_ring_failure"); if let f = rc.lastFailure { w.string(f) } else { w.null() }
        }
        w.endObject()
        w.key("queue"); w.beginObject()
        w.key("queued"); w.int(q.queued)
        w.key("capacity"); w.int(bridge.queue.capacity)
        w.key("pushed"); w.int(q.pushed)
        w.key("dropped"); w.int(q.dropped)
        w.key("dropped_since_connected"); w.int(q.droppedSinceMark)
        w.key("dropped_last_outage"); w.int(droppedLastOutage)
        w.key("high_water"); w.int(q.highWater)
        w.key("inflight"); w.int(inflight.count)
        w.key("max_inflight"); w.int(link.maxInflight)
        w.endObject()
        w.key("published"); w.beginObject()
        for g in TopicGroup.allCases {
            switch g {
            case .data: w.key("data")
            case .scalars: w.key("scalars")
            case .state: w.key("state")
            case .discovery: w.key("discovery")
            }
            w.int(sent[g] ?? 0)
        }
        w.key("acknowledged"); w.int(acknowledged)
        w.key("refused"); w.int(refusedCount)
        w.key("last_delay_s"); w.double(Double(lastDelayNs) / 1e9)
        w.endObject()
        let oldest = history.first
        w.key("streams"); w.beginArray()
        for s in snap.streams {
            w.beginObject()
            w.key("stream"); w.name(MessageEncoder.streamName(s.stream))
            switch s.grant {
            case .granted: w.key("grant"); w.name("granted")
            case .unknown: w.key("grant"); w.name("unknown")
            case .refused(let why): w.key("grant"); w.name("refused"); w.key("reason"); w.string(why)
            }
            w.key("subscribed"); w.bool(s.active)
            w.key("received"); w.int(s.received)
            w.key("lost"); w.int(s.lost)
            w.key("stalled"); w.bool(s.stalledSinceNs != nil)
            w.key("stall_after_s"); w.double(s.stallAfterNs.map { Double($0) / 1e9 })
            w.key("last_sample_age_s"); w.double(s.lastArrivalNs.map { Double(now - min(now, $0)) / 1e9 })
            if let since = s.stalledSinceNs {
                w.key("stalled_since"); w.string(UTCTime.format(unixNanoseconds: Int64(wallNow - (now - min(now, since)))))
            }
            w.key("json"); w.bool(s.settings.json)
            w.key("json_interval_s"); w.double(s.settings.jsonIntervalS)
            w.key("scalars"); w.bool(s.settings.scalars)
            w.key("scalars_interval_s"); w.double(s.settings.scalarsIntervalS)
            let c = byStream[s.stream] ?? StreamCounts()
            w.key("json_published"); w.int(c.json)
            w.key("scalar_messages_published"); w.int(c.scalars)
            if let o = oldest, now > o.ns + 500_000_000 {
                let dt = Double(now - o.ns) / 1e9
                let before = o.counts[s.stream] ?? StreamCounts()
                w.key("json_rate_hz"); w.double(Double(c.json - before.json) / dt)
                let perTopic = max(1, ScalarCatalog.entities(of: s.stream).count)
                w.key("scalars_rate_hz"); w.double(Double(c.scalars - before.scalars) / dt / Double(perTopic))
            } else {
                w.key("json_rate_hz"); w.null()
                w.key("scalars_rate_hz"); w.null()
            }
            w.endObject()
        }
        w.endArray()
        w.key("refusals"); w.beginArray()
        for (topic, reason) in refusals.sorted(by: { $0.key < $1.key }) {
            w.beginObject()
            w.key("topic"); w.string(topic)
            w.key("reason"); w.string(String(cString: mosquitto_reason_string(reason)))
            w.key("code"); w.int(Int(reason))
            w.endObject()
        }
        w.endArray()
        w.key("home_assistant_births"); w.int(homeAssistantBirths)
        w.key("log_lines_suppressed"); w.int(Int(log.suppressedLines))
        w.endObject()
        w.endLine()
        return w.bytes
    }
}

/// Seconds with one decimal, for log lines.
func seconds(_ ns: UInt64) -> String { ScalarCatalog.format(Double(ns) / 1e9, decimals: 1) }

/// CLOCK_REALTIME, ns.

