import CMosquitto
import EdgeClient
import EdgeProtocol
import EdgeValues

/// `edge-mqtt check`: one pass through everything `run` does, reported per
/// topic.
enum CheckCommand {
    /// What the broker did with one published message.
    struct Outcome {
        var topic: String
        var group: TopicGroup
        var qos: Int32
        var retained: Bool
        var empty: Bool
        var acknowledged = false
        var refusedReason: Int32?
        var seenBack = false
        var error: String?
    }

    static func run(_ options: Options, log: BridgeLog) -> Int32 {
        var setup: ResolvedBridge
        do { setup = try BridgeSetup.resolve(config: options.config, overrides: options.overrides) } catch {
            printError("edge-mqtt check: \(error.description)")
            return 2
        }
        setup.broker.clientID += "-check"
        let timeoutNs = UInt64(options.timeoutS * 1e9)
        print("config   \(setup.configPath) (\(setup.configSource); node \(setup.node)\(setup.nodeFromHostName ? ", the host name" : ""))")
        print("agent    \(setup.agentSocket) (\(setup.agentSocketSource))")

        // --- the agent: one sample per enabled stream, through the run path.
        let verbose = options.verbose
        let sink: @Sendable (String) -> Void = { line in if verbose { BridgeLog.standardError(line) } }
        let quietLog = BridgeLog(verbose: options.verbose, keepLines: true, sink: sink)
        let wakeup = Wakeup()
        let queue = OutboundQueue(capacity: 10_000, wakeup: wakeup)
        let retained = RetainedStore(wakeup: wakeup)
        let bridge = Bridge(config: setup.config, node: setup.node, queue: queue, retained: retained, log: quietLog)
        let seen = Locked(AgentSeen())
        let feed = AgentClientFeed(socketPath: setup.agentSocket)
        let wanted = Set(setup.config.enabledStreams.map(\.stream))
        feed.start(subscriptions: bridge.subscriptions) { event in
            seen.withLock { s in
                switch event {
                case .connected(let v): s.version = v; s.connectedNs = monotonicNowNs()
                case .sample(let x): s.sampled.insert(x.stream)
                case .subscribed(let stream, _): s.subscribed.insert(stream)
                case .refused(let stream, _, let m): s.refused[stream] = m
                case .connectFailed(let r), .disconnected(let r): s.failure = r
                case .devices: s.devices = true
                default: break
                }
            }
            bridge.handle(event)
        }
        let agentDeadline = monotonicNowNs() + timeoutNs
        while monotonicNowNs() < agentDeadline {
            let done = seen.withLock { s in
                // A stream sent only on a change (steps, activity) may stay
                // silent for hours: it is done when it sent a sample, was
                // refused, or 1 s after the agent connected went by without
                // a refusal (the agent answers a subscription at once).
                let quietEnough = s.connectedNs.map { monotonicNowNs() >= $0 + 1_000_000_000 } ?? false
                return s.devices && wanted.allSatisfy {
                    s.sampled.contains($0) || s.refused[$0] != nil || (!StreamLiveness.isPeriodic($0) && quietEnough)
                }
            }
            if done { break }
            pause(ms: 20)
        }
        feed.stop()
        let agent = seen.withLock { $0 }
        var problems = 0
        if let v = agent.version {
            print("agent    \(setup.agentSocket): \(v.agent) \(v.agentVersion) as uid \(v.uid), entitlements \(v.entitlements.isEmpty ? "none" : v.entitlements.map(\.rawValue).joined(separator: ", "))")
            for s in setup.config.enabledStreams {
                if let why = agent.refused[s.stream] {
                    print("  \(pad(s.stream.rawValue, 18)) refused: \(why)")
                    problems += 1
                } else if agent.sampled.contains(s.stream) {
                    print("  \(pad(s.stream.rawValue, 18)) ok (a sample within \(ScalarCatalog.format(options.timeoutS, decimals: 1)) s)")
                } else if !StreamLiveness.isPeriodic(s.stream) {
                    print("  \(pad(s.stream.rawValue, 18)) ok (subscribed, not refused; sent only when it changes, so no sample is expected yet: its topics are published at the first change)")
                } else {
                    print("  \(pad(s.stream.rawValue, 18)) no sample within \(ScalarCatalog.format(options.timeoutS, decimals: 1)) s (is a device of it missing? edge-agent watch)")
                    problems += 1
                }
            }
        } else {
            print("agent    \(setup.agentSocket): \(agent.failure ?? "no answer") — publishing the discovery check without samples")
            problems += 1
        }

        // --- the broker.
        let session: MosquittoSession
        do {
            // No Last Will: check killed halfway (Ctrl-C) must not make the
            // broker publish `offline` for a node whose bridge is running.
            session = try MosquittoSession(setup.broker, will: nil)
        } catch {
            print("broker   \(setup.broker.address): \(error)")
            return 1
        }
        var connack: Int32?
        var disconnected: Int32?
        session.callbacks.connected = { connack = $0 }
        session.callbacks.disconnected = { disconnected = $0 }
        let brokerDeadline = monotonicNowNs() + min(timeoutNs, UInt64(setup.broker.connectTimeoutS * 1e9))
        var failure: MQTTError?
        do { try session.startConnect() } catch { failure = error }
        while failure == nil && connack == nil && monotonicNowNs() < brokerDeadline {
            let r = session.service(timeoutMs: 50)
            if let f = r.failure { failure = f }
            if disconnected != nil && connack == nil { failure = failure ?? session.error(for: disconnected!, errno: 0) }
        }
        let what = "MQTT \(setup.broker.protocolVersion.rawValue)\(setup.broker.tls == nil ? "" : ", TLS")\(setup.broker.username.map { ", user \($0)" } ?? "")"
        if let c = connack, c != 0 {
            print("broker   \(setup.broker.address) (\(what)): \(MQTTError(.refused(reason: c, protocolVersion: setup.broker.protocolVersion), broker: setup.broker.address).description)")
            return 1
        }
        guard connack == 0 else {
            let f = failure ?? MQTTError(.timedOut(seconds: options.timeoutS), broker: setup.broker.address)
            print("broker   \(setup.broker.address) (\(what)): \(f.description)")
            return 1
        }
        print("broker   \(setup.broker.address) (\(what)): connected as client \(setup.broker.clientID)")

        // --- publish what run would, and watch it come back.
        var outcomes: [Outcome] = []
        var byMid: [Int32: Int] = [:]
        let filters = [bridge.plan.base + "/#", setup.config.topics.discoveryPrefix + "/sensor/" + setup.node + "/#"]
        var subscribed = 0
        var subscribeRefused: [String] = []
        session.callbacks.subscribed = { _, granted in
            subscribed += 1
            if let g = granted.first, g >= 0x80 { subscribeRefused.append("code 0x\(String(g, radix: 16))") }
        }
        for f in filters { _ = session.subscribe(f, qos: 1) }
        let subDeadline = monotonicNowNs() + timeoutNs
        while subscribed < filters.count && monotonicNowNs() < subDeadline { _ = session.service(timeoutMs: 50) }
        session.callbacks.published = { mid, reason in
            guard let i = byMid[mid] else { return }
            if reason >= 0x80 { outcomes[i].refusedReason = reason } else { outcomes[i].acknowledged = true }
        }
        session.callbacks.message = { m in
            // The last message published on a topic is the one that comes back.
            if let i = outcomes.lastIndex(where: { $0.topic == m.topic }) { outcomes[i].seenBack = true }
        }
        var messages: [(RetainedEntry, Bool)] = retained.entries.values
            .filter { $0.topic != bridge.plan.status }
            .sorted { $0.topic < $1.topic }
            .map { ($0, true) }
        // One message per topic: the latest sample's.
        var latest: [String: OutboundMessage] = [:]
        var order: [String] = []
        while let m = queue.pop() {
            if latest[m.topic] == nil { order.append(m.topic) }
            latest[m.topic] = m
        }
        for t in order {
            let m = latest[t]!
            messages.append((RetainedEntry(topic: m.topic, payload: m.payload, group: m.group), m.retain))
        }
        for (entry, retain) in messages {
            let q = Int32(setup.config.qos[entry.group])
            var o = Outcome(topic: entry.topic, group: entry.group, qos: q, retained: retain, empty: entry.payload.isEmpty)
            switch session.publish(topic: entry.topic, payload: entry.payload, qos: q, retain: retain) {
            case .success(let mid):
                byMid[mid] = outcomes.count
            case .failure(let e):
                o.error = e.description
            }
            outcomes.append(o)
            _ = session.service(timeoutMs: 0)
        }
        let end = monotonicNowNs() + timeoutNs
        while monotonicNowNs() < end {
            let done = outcomes.allSatisfy { $0.error != nil || $0.refusedReason != nil || ($0.seenBack && ($0.qos == 0 || $0.acknowledged)) }
            if done { break }
            if session.service(timeoutMs: 50).failure != nil { break }
        }
        session.disconnect()
        _ = session.service(timeoutMs: 100)

        if !subscribeRefused.isEmpty {
            print("  the broker refused check's subscription to its own topics (\(subscribeRefused.joined(separator: ", "))): QoS 0 messages cannot be confirmed")
        }
        print("published \(outcomes.count) message(s):")
        for o in outcomes {
            let verdict: String
            if let e = o.error {
                verdict = "error    publish failed: \(e)"
            } else if let r = o.refusedReason {
                verdict = "refused  \(String(cString: mosquitto_reason_string(r))) (MQTT 5 reason code 0x\(String(r, radix: 16))); allow this user to publish it in the broker's ACL"
            } else if o.acknowledged || o.seenBack {
                verdict = "ok       " + (o.acknowledged ? "acknowledged" : "") + (o.acknowledged && o.seenBack ? ", " : "") + (o.seenBack ? "seen back" : "")
            } else {
                verdict = "unseen   not acknowledged nor seen back within \(ScalarCatalog.format(options.timeoutS, decimals: 1)) s"
                    + (setup.broker.protocolVersion == .v311 || o.qos == 0 ? " (MQTT 3.1.1 and QoS 0 cannot report a refusal: check the broker's ACL and log)" : "")
            }
            let what = "\(o.group.rawValue), qos \(o.qos)\(o.retained ? ", retained" : "")\(o.empty ? ", empty: removes an entity" : "")"
            print("  \(verdict.hasPrefix("ok") ? " " : "!") \(pad(o.topic, 52)) \(pad(what, 34)) \(verdict)")
            if !verdict.hasPrefix("ok") { problems += 1 }
        }
        print("not published by check: \(bridge.plan.status) (a running bridge owns it, and its Last Will)")
        print(problems == 0 ? "check: everything accepted" : "check: \(problems) problem(s)")
        return problems == 0 ? 0 : 1
    }

    struct AgentSeen: Sendable {
        var version: ServerMessage.VersionInfo?
        var sampled = Set<StreamName>()
        var subscribed = Set<StreamName>()
        var connectedNs: UInt64?
        var refused: [StreamName: String] = [:]
        var failure: String?
        var devices = false
    }

    static func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }

    static func pause(ms: Int32) {
        var none = pollfd()
        _ = poll(&none, 0, ms)
    }
}

#if canImport(Glibc)
import Glibc
#endif
