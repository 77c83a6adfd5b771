import EdgeClient
import EdgeProtocol
import EdgeValues

/// The agent side of the bridge: turns the feed's events into MQTT messages
/// (pushed on the bounded ``OutboundQueue``, never waiting for the broker)
/// and into the retained state (``RetainedStore``). Runs on the feed's
/// thread; the broker thread only reads what it leaves.
public final class Bridge: Sendable {
    public let config: BridgeConfig
    public let plan: TopicPlan
    public let queue: OutboundQueue
    public let retained: RetainedStore
    /// When a silent stream counts as stalled.
    public let liveness: StreamLiveness.Settings
    let log: BridgeLog

    /// Whether the agent lets the bridge have a stream.
    public enum Grant: Sendable, Equatable {
        case unknown
        case granted
        case refused(String)
    }

    struct StreamState: Sendable {
        var settings: StreamSettings
        var grant: Grant = .unknown
        /// Subscribed on the current connection.
        var active = false
        var jsonGate: Decimator
        var scalarGate: Decimator
        var received = 0
        /// Samples the agent wrote that never reached the bridge (its
        /// shared-memory ring overwrote them first: ``FeedEvent/lost(_:count:)``).
        var lost = 0
        var lastCaptureNs: UInt64 = 0
        /// Arrival of samples (CLOCK_MONOTONIC), for the stall watchdog.
        var live = StreamLiveness.State()
        /// Silence after which the stream is stalled.
        let stallAfterNs: UInt64
        /// Periodic (watched); false for a stream sent on every change.
        let watched: Bool
        init(_ s: StreamSettings, _ liveness: StreamLiveness.Settings) {
            settings = s
            watched = StreamLiveness.isPeriodic(s.stream)
            stallAfterNs = liveness.thresholdNs(intervalNs: s.subscriptionIntervalNs)
            jsonGate = Decimator(intervalNs: UInt64((s.jsonIntervalS * 1e9).rounded()))
            scalarGate = Decimator(intervalNs: UInt64((s.scalarsIntervalS * 1e9).rounded()))
        }
    }

    /// The magnetometer's calibration as device motion reports it.
    public struct Calibration: Sendable, Equatable {
        public var accuracy: MagneticFieldCalibrationAccuracy
        public var frame: ReferenceFrame
    }

    struct State: Sendable {
        var streams: [StreamName: StreamState]
        var agentConnected = false
        var version: ServerMessage.VersionInfo?
        var devices: [DeviceInfo]?
        var calibration: Calibration?
        var agentConnections = 0
        var lastAgentProblem: String?
        var stopping = false
        var announcedNoGrant = false
        var refusalsLogged = Set<String>()
        /// Streams the agent answered (subscribed or refused) on this connection.
        var answered = Set<StreamName>()
        /// CLOCK_MONOTONIC ns after which the next sample asks for the
        /// device list again: a second after the subscriptions woke the
        /// devices, and while the agent lists none yet (its first list
        /// can predate the devices' start).
        var devicesRefreshNs: UInt64?
        /// "no subscribed stream delivers" was logged; the way back is logged once too.
        var silenceAnnounced = false
        /// The agent connection's own watchdog (probes into its silence).
        var agentLive = StreamLiveness.Agent()

        /// Streams subscribed and delivering on this connection that are stalled.
        var stalled: Set<StreamName> { Set(streams.filter { $0.value.active && $0.value.live.isStalled }.keys) }
        /// Every watched stream is stalled (the agent, or its loop, is hung):
        /// the node is not `online`.
        var silent: Bool {
            let watched = streams.values.filter { $0.active && $0.watched }
            return !watched.isEmpty && watched.allSatisfy(\.live.isStalled)
        }
        /// Nothing delivers, or the agent does not answer: not `online`.
        var notDelivering: Bool { silent || agentLive.unresponsive }
    }
    private let state: Locked<State>
    /// ``TopicPlan/data(_:)`` of every stream, by ``StreamName/index`` (made
    /// once, not per message).
    private let dataTopics: [String]
    /// Set once by ``attach(_:)``; used to ask for the device list again.
    private let feedBox = Locked<(any SampleFeed)?>(nil)

    public init(config: BridgeConfig, node: String, queue: OutboundQueue, retained: RetainedStore, log: BridgeLog,
                liveness: StreamLiveness.Settings = StreamLiveness.Settings()) {
        self.config = config
        self.liveness = liveness
        plan = TopicPlan(prefix: config.topics.prefix, node: node, discoveryPrefix: config.topics.discoveryPrefix)
        var topics = [String](repeating: "", count: StreamName.count)
        for stream in StreamName.allCases { topics[stream.index] = plan.data(stream) }
        dataTopics = topics
        self.queue = queue
        self.retained = retained
        self.log = log
        var streams: [StreamName: StreamState] = [:]
        for s in config.enabledStreams { streams[s.stream] = StreamState(s, liveness) }
        state = Locked(State(streams: streams))
        updateRetained()
    }

    /// Of `streams`, those no device in `devices` lists (none while the
    /// devices are not known, or while no device lists its streams yet):
    /// a BME280's humidity on a board with a BMP280. They have no Home
    /// Assistant entity. (The stall watchdog needs no exception for them:
    /// a stream is watched from its first sample on.)
    public static func unfed(_ streams: Set<StreamName>, devices: [DeviceInfo]?) -> Set<StreamName> {
        guard let d = devices, d.contains(where: { !$0.streams.isEmpty }) else { return [] }
        return streams.filter { name in !d.contains { $0.streams.contains(name) } }
    }

    /// The subscriptions the feed makes on every connection.
    public var subscriptions: [FeedSubscription] {
        config.enabledStreams.map { FeedSubscription(stream: $0.stream, intervalNs: $0.subscriptionIntervalNs) }
    }

    /// Connects the bridge to its feed and starts it.
    public func attach(_ feed: any SampleFeed) {
        feedBox.withLock { $0 = feed }
        feed.start(subscriptions: subscriptions) { [self] event in handle(event) }
    }

    /// From now on the status is `offline` (a clean stop).
    public func markStopping() {
        state.withLock { $0.stopping = true }
        updateRetained()
    }

    // MARK: - events

    /// `nowNs`: CLOCK_MONOTONIC of the event's arrival (tests pass their own).
    public func handle(_ event: FeedEvent, nowNs: UInt64 = monotonicNowNs()) {
        switch event {
        case .subscribed, .refused, .devices, .device, .shutdown:
            let was = state.withLock { StreamLiveness.heard(&$0.agentLive, nowNs: nowNs) }
            if was {
                log.info("the agent answers again")
                updateRetained()
            }
        default:
            break
        }
        switch event {
        case .sample(let sample):
            publish(sample, nowNs: nowNs)
        case .connected(let v):
            let missing = state.withLock { s -> [(StreamName, Entitlement)] in
                s.agentConnected = true
                s.agentLive = StreamLiveness.Agent()
                _ = StreamLiveness.heard(&s.agentLive, nowNs: nowNs)
                s.version = v
                s.agentConnections += 1
                s.lastAgentProblem = nil
                s.refusalsLogged = []
                s.answered = []
                var missing: [(StreamName, Entitlement)] = []
                for name in s.streams.keys.sorted(by: { $0.index < $1.index }) {
                    s.streams[name]!.active = false
                    StreamLiveness.reset(&s.streams[name]!.live)
                    s.streams[name]!.jsonGate.reset()
                    s.streams[name]!.scalarGate.reset()
                    // The agent's own rule (either submersion entitlement
                    // admits the submersion stream), not a second copy.
                    if !name.isPermitted(by: Set(v.entitlements)) {
                        s.streams[name]!.grant = .refused("needs the \(name.entitlementDescription) entitlement")
                        missing.append((name, name.entitlement))
                    }
                }
                return missing
            }
            log.info("connected to the agent (\(v.agent) \(v.agentVersion), protocol \(v.protocolVersion)) as uid \(v.uid): entitlements \(v.entitlements.isEmpty ? "none" : v.entitlements.map(\.rawValue).joined(separator: ", "))")
            reportMissing(missing, uid: v.uid)
            updateRetained()
        case .subscribed(let stream, let interval):
            let all = state.withLock { s -> Bool in
                s.streams[stream]?.grant = .granted
                s.streams[stream]?.active = true
                return answered(stream, &s)
            }
            log.debug("subscribed to \(stream.rawValue) every \(interval) s")
            updateRetained()
            if all { requestDevices(refreshAfter: true) }
        case .refused(let stream, let code, let message):
            let (first, all) = state.withLock { s -> (Bool, Bool) in
                if code == .notEntitled { s.streams[stream]?.grant = .refused(message) }
                s.streams[stream]?.active = false
                if s.streams[stream] != nil { StreamLiveness.reset(&s.streams[stream]!.live) }
                return (s.refusalsLogged.insert(stream.rawValue).inserted, answered(stream, &s))
            }
            if first { log.info("the agent refused \(stream.rawValue): \(message)") }
            updateRetained()
            if all { requestDevices(refreshAfter: true) }
        case .devices(let list):
            state.withLock { s in
                s.devices = list
                if list.isEmpty && s.devicesRefreshNs == nil { s.devicesRefreshNs = monotonicNowNs() + 1_000_000_000 }
            }
            updateRetained()
        case .device(let e):
            log.info("device \(e.deviceID) is \(e.state.rawValue)" + (e.reason.map { ": \($0)" } ?? ""))
            requestDevices()
        case .connectFailed(let reason):
            let changed = state.withLock { s -> Bool in
                let changed = s.lastAgentProblem != reason
                s.lastAgentProblem = reason
                s.agentConnected = false
                s.agentLive = StreamLiveness.Agent()
                return changed
            }
            if changed { log.info("agent: \(reason) (trying again)") } else { log.debug("agent: \(reason)") }
            updateRetained()
        case .disconnected(let reason):
            state.withLock { s in
                s.agentConnected = false
                s.agentLive = StreamLiveness.Agent()
                s.lastAgentProblem = reason
                for k in s.streams.keys {
                    s.streams[k]!.active = false
                    StreamLiveness.reset(&s.streams[k]!.live)
                }
            }
            log.info("agent connection ended: \(reason); status offline until it is back")
            updateRetained()
        case .shutdown(let reason):
            log.info("the agent is stopping (\(reason))")
        case .lost(let stream, let n):
            let total = state.withLock { s -> Int in
                s.streams[stream]?.lost += n
                return s.streams[stream]?.lost ?? n
            }
            log.info("\(stream.rawValue): \(n) sample(s) lost (\(total) in all): the bridge fell more than a shared-memory ring behind the agent (a stopped or starved process)")
        }
    }

    /// Notes the agent's answer for `stream`; true when every stream has
    /// one (the devices are then listed again: the subscriptions woke them).
    private func answered(_ stream: StreamName, _ s: inout State) -> Bool {
        let before = s.answered.count
        s.answered.insert(stream)
        return s.answered.count == s.streams.count && before < s.answered.count
    }

    /// Asks the agent for its devices; `refreshAfter`: once more a second later.
    private func requestDevices(refreshAfter: Bool = false) {
        if refreshAfter { state.withLock { $0.devicesRefreshNs = monotonicNowNs() + 1_000_000_000 } }
        feedBox.withLock { $0 }?.requestDevices()
    }

    private func reportMissing(_ missing: [(StreamName, Entitlement)], uid: UInt32) {
        guard !missing.isEmpty else { return }
        let all = missing.count == state.withLock { $0.streams.count }
        let needs = missing.map { "\($0.0.rawValue) needs \($0.0.entitlementDescription)" }.joined(separator: ", ")
        let grant = Set(missing.map(\.1.rawValue)).sorted().map { "\"\($0)\"" }.joined(separator: ", ")
        let advice = "grant them in the agent's configuration (clients: [ { uid: \(uid), entitlements: [\(grant)] } ], or by user name)"
        if all {
            state.withLock { $0.announcedNoGrant = true }
            log.info("not entitled: uid \(uid) holds none of the entitlements the configured streams need (\(needs)); \(advice). Publishing only the offline status until then.")
        } else {
            log.info("not entitled to every stream: \(needs); \(advice). Those streams are not published.")
        }
    }

    // MARK: - samples

    private func publish(_ sample: Sample, nowNs: UInt64) {
        var agentBack = false
        let t = sample.timestampNs
        let stream = sample.stream
        let due = state.withLock { s -> (json: Bool, scalars: Bool, calibrationChanged: Bool, resumedAfterNs: UInt64?)? in
            guard var st = s.streams[stream], !s.stopping else { return nil }
            agentBack = StreamLiveness.heard(&s.agentLive, nowNs: nowNs)
            st.received += 1
            st.lastCaptureNs = t
            var resumed: UInt64?
            if case .resumed(let silentNs)? = StreamLiveness.sample(&st.live, nowNs: nowNs) { resumed = silentNs }
            let json = st.settings.json && st.jsonGate.admit(t)
            let scalars = st.settings.scalars && st.scalarGate.admit(t)
            s.streams[stream] = st
            var changed = false
            if case .deviceMotion(let m) = sample {
                let c = Calibration(accuracy: m.magneticFieldAccuracy, frame: m.referenceFrame)
                if s.calibration != c { s.calibration = c; changed = true }
            }
            return (json, scalars, changed, resumed)
        }
        guard let due else { return }
        if agentBack { log.info("the agent answers again") }
        if let silentNs = due.resumedAfterNs {
            log.info("\(stream.rawValue) resumed after \(seconds(silentNs)) s without samples")
        }
        if agentBack || due.resumedAfterNs != nil { updateRetained() }
        let refresh = state.withLock { s -> Bool in
            guard let at = s.devicesRefreshNs, monotonicNowNs() >= at else { return false }
            s.devicesRefreshNs = nil
            return true
        }
        if refresh { requestDevices() }
        if due.json {
            var w = JSONWriter(capacity: 512)
            MessageEncoder.sample(sample, into: &w)
            var payload = w.bytes
            if payload.last == UInt8(ascii: "\n") { payload.removeLast() }
            queue.push(OutboundMessage(topic: dataTopics[stream.index], payload: payload, qos: config.qos.data, retain: false,
                                       group: .data, stream: stream, captureNs: t))
        }
        if due.scalars {
            let entities = ScalarCatalog.entities(of: stream)
            for (e, payload) in zip(entities, ScalarCatalog.payloads(of: sample)) {
                queue.push(OutboundMessage(topic: plan.scalar(e), payload: Array(payload.utf8),
                                           qos: config.qos.scalars, retain: config.topics.retainScalars,
                                           group: .scalars, stream: stream, captureNs: t))
            }
        }
        if due.calibrationChanged { updateRetained() }
    }

    // MARK: - stalls

    /// The stall watchdog's turn (the main thread calls it every 0.5 s): a
    /// watched stream silent beyond its threshold is stalled, logged once;
    /// when every watched stream is, the status stops saying `online`.
    /// Samples resume a stream (``handle(_:nowNs:)``).
    public func checkLiveness(nowNs: UInt64 = monotonicNowNs()) {
        let (changes, nodeSilent, streamsSilent, agentAction) = state.withLock {
            s -> ([(StreamName, UInt64, UInt64)], Bool, Bool, StreamLiveness.AgentAction?) in
            guard !s.stopping, s.agentConnected else { return ([], false, false, nil) }
            let before = s.notDelivering
            let agentAction = StreamLiveness.check(&s.agentLive, liveness, nowNs: nowNs)
            var out: [(StreamName, UInt64, UInt64)] = []
            for name in s.streams.keys.sorted(by: { $0.index < $1.index }) {
                let st = s.streams[name]!
                guard st.active, st.watched else { continue }
                if case .stalled(_, let silentNs)? = StreamLiveness.check(&s.streams[name]!.live, thresholdNs: st.stallAfterNs, nowNs: nowNs) {
                    out.append((name, silentNs, st.stallAfterNs))
                }
            }
            let now = !before && s.notDelivering
            if now { s.silenceAnnounced = true }
            return (out, now, s.silent, agentAction)
        }
        switch agentAction {
        case .probe?:
            log.debug("the agent has been silent for a while: asking for its devices")
            requestDevices()
        case .unresponsive(let silentNs)?:
            log.info("the agent has sent nothing for \(seconds(silentNs)) s and did not answer a devices request within \(seconds(liveness.answerWithinNs)) s: it is hung")
        case nil:
            break
        }
        guard !changes.isEmpty || agentAction != nil else { return }
        for (name, silentNs, thresholdNs) in changes {
            log.info("\(name.rawValue) stalled: no sample from the agent for \(seconds(silentNs)) s (stalled after \(seconds(thresholdNs)) s without one)")
        }
        if nodeSilent {
            log.info(streamsSilent
                ? "no subscribed stream delivers (the agent is hung or its devices stopped): status offline until samples return"
                : "status offline until the agent answers")
        }
        if case .probe? = agentAction, changes.isEmpty { return }
        updateRetained()
    }

    // MARK: - retained state

    /// What the retained plan is computed from.
    public struct PlanInput: Sendable {
        public var agentConnected: Bool
        public var agentVersion: String?
        public var grants: [StreamName: Grant]
        public var active: Set<StreamName>
        public var devices: [DeviceInfo]?
        public var calibration: Calibration?
        public var stopping: Bool
        /// Active streams the watchdog finds stalled (``StreamLiveness``).
        public var stalled: Set<StreamName>
        /// The agent left a probe unanswered (hung, its socket open).
        public var agentUnresponsive: Bool
        /// Configured streams no device of the agent feeds (``Bridge/unfed(_:devices:)``).
        public var unfed: Set<StreamName> { Bridge.unfed(Set(grants.keys), devices: devices) }
        public init(agentConnected: Bool, agentVersion: String?, grants: [StreamName: Grant], active: Set<StreamName>,
                    devices: [DeviceInfo]?, calibration: Calibration?, stopping: Bool, stalled: Set<StreamName> = [],
                    agentUnresponsive: Bool = false) {
            self.agentConnected = agentConnected; self.agentVersion = agentVersion; self.grants = grants
            self.active = active; self.devices = devices; self.calibration = calibration; self.stopping = stopping
            self.stalled = stalled; self.agentUnresponsive = agentUnresponsive
        }

        /// What the status topic says: the agent connected, a stream
        /// subscribed, and, when any periodic stream is, at least one of
        /// those delivering (not stalled).
        public var online: Bool {
            guard agentConnected, !active.isEmpty, !stopping, !agentUnresponsive else { return false }
            let watched = active.filter(StreamLiveness.isPeriodic)
            return watched.isEmpty || !watched.isSubset(of: stalled)
        }
    }

    private func updateRetained() {
        let (input, back) = state.withLock { s -> (PlanInput, Bool) in
            var back = false
            if s.silenceAnnounced && !s.notDelivering {
                s.silenceAnnounced = false
                back = s.agentConnected && !s.stopping
            }
            return (PlanInput(agentConnected: s.agentConnected, agentVersion: s.version?.agentVersion,
                      grants: s.streams.mapValues(\.grant),
                      active: Set(s.streams.filter(\.value.active).keys),
                      devices: s.devices, calibration: s.calibration, stopping: s.stopping, stalled: s.stalled,
                      agentUnresponsive: s.agentLive.unresponsive), back)
        }
        if back && input.online { log.info("the node resumed: status online again") }
        retained.replacePlan(Self.retainedPlan(config: config, plan: plan, input: input))
    }

    /// The retained messages for a state of the agent (pure; docs/mqtt.md,
    /// "Retained state" and "Home Assistant discovery"):
    ///
    /// * `status` is `online` while the agent is connected, at least one
    ///   stream is subscribed and, of the periodic ones, at least one is not
    ///   stalled (``PlanInput/online``), else `offline`;
    /// * while the agent grants none of the configured streams (or has never
    ///   been reached) that is all: only `status` = `offline`;
    /// * else `devices` and `calibration` once known, and discovery: a
    ///   configuration for every scalar topic of a stream that is enabled
    ///   (with scalars) and granted, an empty payload (removal) for every
    ///   scalar topic of a stream that is disabled or that no device of the
    ///   agent feeds; nothing for a stream the agent refuses (its entities,
    ///   if any, show unavailable);
    ///   the calibration diagnostic follows `deviceMotion`.
    public static func retainedPlan(config: BridgeConfig, plan: TopicPlan, input: PlanInput) -> [RetainedEntry] {
        let online = input.online
        let status = RetainedEntry(topic: plan.status, text: online ? BridgeStatusWord.online : BridgeStatusWord.offline,
                                   group: .state)
        guard input.grants.values.contains(.granted), let agentVersion = input.agentVersion else { return [status] }
        var out = [status]
        if let devices = input.devices {
            var w = JSONWriter(capacity: 2048)
            MessageEncoder.devices(devices, into: &w)
            var bytes = w.bytes
            if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
            out.append(RetainedEntry(topic: plan.devices, payload: bytes, group: .state))
        }
        if let c = input.calibration {
            var w = JSONWriter(capacity: 128)
            w.beginObject()
            w.key("magneticFieldAccuracy"); w.name(c.accuracy.wireName)
            w.key("frame"); w.name(c.frame.wireName)
            w.endObject()
            out.append(RetainedEntry(topic: plan.calibration, payload: w.bytes, group: .state))
        }
        guard config.topics.discovery else { return out }
        let builder = DiscoveryBuilder(plan: plan, stateQoS: config.qos.scalars, agentVersion: agentVersion)
        let unfed = input.unfed
        for stream in ScalarCatalog.streamsWithScalars {
            let settings = config.settings(of: stream)
            // A stream no device feeds (humidity without a BME280) has no entity.
            let publishing = (settings.map { $0.enabled && $0.scalars } ?? false) && !unfed.contains(stream)
            for e in ScalarCatalog.entities(of: stream) {
                if !publishing {
                    out.append(RetainedEntry(topic: plan.discovery(e.key), payload: [], group: .discovery))
                } else if input.grants[stream] == .granted {
                    out.append(RetainedEntry(topic: plan.discovery(e.key),
                                             payload: builder.config(for: e, intervalS: settings!.scalarsIntervalS),
                                             group: .discovery))
                }
            }
        }
        let motion = config.settings(of: .deviceMotion)
        if !(motion?.enabled ?? false) {
            out.append(RetainedEntry(topic: plan.discovery(CalibrationEntity.key), payload: [], group: .discovery))
        } else if input.grants[.deviceMotion] == .granted {
            out.append(RetainedEntry(topic: plan.discovery(CalibrationEntity.key), payload: builder.calibrationConfig(),
                                     group: .discovery))
        }
        return out
    }

    // MARK: - status

    /// The agent side, for `edge-mqtt status`.
    public struct Snapshot: Sendable {
        public struct Stream: Sendable {
            public var stream: StreamName
            public var settings: StreamSettings
            public var grant: Grant
            public var active: Bool
            public var received: Int
            /// Samples lost before the bridge read them (``FeedEvent/lost(_:count:)``).
            public var lost: Int
            public var lastCaptureNs: UInt64
            /// CLOCK_MONOTONIC arrival of the last sample on this connection.
            public var lastArrivalNs: UInt64?
            /// While stalled: the arrival of the last sample before the silence.
            public var stalledSinceNs: UInt64?
            /// The silence that makes it stalled; nil: not watched (sent on change).
            public var stallAfterNs: UInt64?
        }
        public var agentSocket: String
        public var agentConnected: Bool
        public var version: ServerMessage.VersionInfo?
        public var agentConnections: Int
        public var lastAgentProblem: String?
        public var streams: [Stream]
        public var devices: [DeviceInfo]?
        public var calibration: Calibration?
        /// Every watched stream is stalled: the status says `offline`.
        public var silent: Bool
        /// The agent left a probe unanswered: the status says `offline`.
        public var agentUnresponsive: Bool
        /// What the status topic says now.
        public var online: Bool
    }

    public func snapshot() -> Snapshot {
        state.withLock { s in
            Snapshot(agentSocket: config.agent.socketPath, agentConnected: s.agentConnected, version: s.version,
                     agentConnections: s.agentConnections, lastAgentProblem: s.lastAgentProblem,
                     streams: s.streams.values.sorted { $0.settings.stream.index < $1.settings.stream.index }.map {
                         Snapshot.Stream(stream: $0.settings.stream, settings: $0.settings, grant: $0.grant, active: $0.active,
                                         received: $0.received, lost: $0.lost, lastCaptureNs: $0.lastCaptureNs,
                                         lastArrivalNs: $0.live.lastArrivalNs, stalledSinceNs: $0.live.stalledSinceNs,
                                         stallAfterNs: $0.watched ? $0.stallAfterNs : nil)
                     },
                     devices: s.devices, calibration: s.calibration, silent: s.silent,
                     agentUnresponsive: s.agentLive.unresponsive,
                     online: PlanInput(agentConnected: s.agentConnected, agentVersion: nil, grants: [:],
                                       active: Set(s.streams.filter(\.value.active).keys), devices: nil, calibration: nil,
                                       stopping: s.stopping, stalled: s.stalled,
                                       agentUnresponsive: s.agentLive.unresponsive).online)
        }
    }

    /// Whether the agent grants at least one configured stream (the bridge's
    /// own counters are published only then).
    public var grantsAnything: Bool { state.withLock { $0.streams.values.contains { $0.grant == .granted } } }
}
