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
        var lastCaptureNs: UInt64 = 0
        init(_ s: StreamSettings) {
            settings = s
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
    }
    private let state: Locked<State>
    /// Set once by ``attach(_:)``; used to ask for the device list again.
    private let feedBox = Locked<(any SampleFeed)?>(nil)

    public init(config: BridgeConfig, node: String, queue: OutboundQueue, retained: RetainedStore, log: BridgeLog) {
        self.config = config
        plan = TopicPlan(prefix: config.topics.prefix, node: node, discoveryPrefix: config.topics.discoveryPrefix)
        self.queue = queue
        self.retained = retained
        self.log = log
        var streams: [StreamName: StreamState] = [:]
        for s in config.enabledStreams { streams[s.stream] = StreamState(s) }
        state = Locked(State(streams: streams))
        updateRetained()
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

    public func handle(_ event: FeedEvent) {
        switch event {
        case .sample(let sample):
            publish(sample)
        case .connected(let v):
            let missing = state.withLock { s -> [(StreamName, Entitlement)] in
                s.agentConnected = true
                s.version = v
                s.agentConnections += 1
                s.lastAgentProblem = nil
                s.refusalsLogged = []
                s.answered = []
                var missing: [(StreamName, Entitlement)] = []
                for name in s.streams.keys.sorted(by: { $0.index < $1.index }) {
                    s.streams[name]!.active = false
                    s.streams[name]!.jsonGate.reset()
                    s.streams[name]!.scalarGate.reset()
                    if !v.entitlements.contains(name.entitlement) {
                        s.streams[name]!.grant = .refused("needs the \"\(name.entitlement)\" entitlement")
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
                return (s.refusalsLogged.insert(stream.rawValue).inserted, answered(stream, &s))
            }
            if first { log.info("the agent refused \(stream.rawValue): \(message)") }
            updateRetained()
            if all { requestDevices(refreshAfter: true) }
        case .devices(let list):
            state.withLock { s in
                s.devices = list
                if list.isEmpty && s.devicesRefreshNs == nil { s.devicesRefreshNs = monotonicNs() + 1_000_000_000 }
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
                return changed
            }
            if changed { log.info("agent: \(reason) (trying again)") } else { log.debug("agent: \(reason)") }
            updateRetained()
        case .disconnected(let reason):
            state.withLock { s in
                s.agentConnected = false
                s.lastAgentProblem = reason
                for k in s.streams.keys { s.streams[k]!.active = false }
            }
            log.info("agent connection ended: \(reason); status offline until it is back")
            updateRetained()
        case .shutdown(let reason):
            log.info("the agent is stopping (\(reason))")
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
        if refreshAfter { state.withLock { $0.devicesRefreshNs = monotonicNs() + 1_000_000_000 } }
        feedBox.withLock { $0 }?.requestDevices()
    }

    private func reportMissing(_ missing: [(StreamName, Entitlement)], uid: UInt32) {
        guard !missing.isEmpty else { return }
        let all = missing.count == state.withLock { $0.streams.count }
        let needs = missing.map { "\($0.0.rawValue) needs \"\($0.1)\"" }.joined(separator: ", ")
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

    private func publish(_ sample: Sample) {
        let t = sample.timestampNs
        let stream = sample.stream
        let due = state.withLock { s -> (json: Bool, scalars: Bool, calibrationChanged: Bool)? in
            guard var st = s.streams[stream], !s.stopping else { return nil }
            st.received += 1
            st.lastCaptureNs = t
            let json = st.settings.json && st.jsonGate.admit(t)
            let scalars = st.settings.scalars && st.scalarGate.admit(t)
            s.streams[stream] = st
            var changed = false
            if case .deviceMotion(let m) = sample {
                let c = Calibration(accuracy: m.magneticFieldAccuracy, frame: m.referenceFrame)
                if s.calibration != c { s.calibration = c; changed = true }
            }
            return (json, scalars, changed)
        }
        guard let due else { return }
        let refresh = state.withLock { s -> Bool in
            guard let at = s.devicesRefreshNs, monotonicNs() >= at else { return false }
            s.devicesRefreshNs = nil
            return true
        }
        if refresh { requestDevices() }
        if due.json {
            var w = JSONWriter(capacity: 512)
            MessageEncoder.sample(sample, into: &w)
            var payload = w.bytes
            if payload.last == UInt8(ascii: "\n") { payload.removeLast() }
            queue.push(OutboundMessage(topic: plan.data(stream), payload: payload, qos: config.qos.data, retain: false,
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
        public init(agentConnected: Bool, agentVersion: String?, grants: [StreamName: Grant], active: Set<StreamName>,
                    devices: [DeviceInfo]?, calibration: Calibration?, stopping: Bool) {
            self.agentConnected = agentConnected; self.agentVersion = agentVersion; self.grants = grants
            self.active = active; self.devices = devices; self.calibration = calibration; self.stopping = stopping
        }
    }

    private func updateRetained() {
        let input = state.withLock { s in
            PlanInput(agentConnected: s.agentConnected, agentVersion: s.version?.agentVersion,
                      grants: s.streams.mapValues(\.grant),
                      active: Set(s.streams.filter(\.value.active).keys),
                      devices: s.devices, calibration: s.calibration, stopping: s.stopping)
        }
        retained.replacePlan(Self.retainedPlan(config: config, plan: plan, input: input))
    }

    /// The retained messages for a state of the agent (pure; docs/mqtt.md,
    /// "Retained state" and "Home Assistant discovery"):
    ///
    /// * `status` is `online` while the agent is connected and at least one
    ///   stream is subscribed, else `offline`;
    /// * while the agent grants none of the configured streams (or has never
    ///   been reached) that is all: only `status` = `offline`;
    /// * else `devices` and `calibration` once known, and discovery: a
    ///   configuration for every scalar topic of a stream that is enabled
    ///   (with scalars) and granted, an empty payload (removal) for every
    ///   scalar topic of a stream that is disabled; nothing for a stream the
    ///   agent refuses (its entities, if any, show unavailable);
    ///   the calibration diagnostic follows `deviceMotion`.
    public static func retainedPlan(config: BridgeConfig, plan: TopicPlan, input: PlanInput) -> [RetainedEntry] {
        let online = input.agentConnected && !input.active.isEmpty && !input.stopping
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
        for stream in ScalarCatalog.streamsWithScalars {
            let settings = config.settings(of: stream)
            let publishing = settings.map { $0.enabled && $0.scalars } ?? false
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
            public var lastCaptureNs: UInt64
        }
        public var agentSocket: String
        public var agentConnected: Bool
        public var version: ServerMessage.VersionInfo?
        public var agentConnections: Int
        public var lastAgentProblem: String?
        public var streams: [Stream]
        public var devices: [DeviceInfo]?
        public var calibration: Calibration?
    }

    public func snapshot() -> Snapshot {
        state.withLock { s in
            Snapshot(agentSocket: config.agent.socketPath, agentConnected: s.agentConnected, version: s.version,
                     agentConnections: s.agentConnections, lastAgentProblem: s.lastAgentProblem,
                     streams: s.streams.values.sorted { $0.settings.stream.index < $1.settings.stream.index }.map {
                         Snapshot.Stream(stream: $0.settings.stream, settings: $0.settings, grant: $0.grant, active: $0.active,
                                         received: $0.received, lastCaptureNs: $0.lastCaptureNs)
                     },
                     devices: s.devices, calibration: s.calibration)
        }
    }

    /// Whether the agent grants at least one configured stream (the bridge's
    /// own counters are published only then).
    public var grantsAnything: Bool { state.withLock { $0.streams.values.contains { $0.grant == .granted } } }
}
