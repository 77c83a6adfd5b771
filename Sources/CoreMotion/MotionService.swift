import EdgeClient
import EdgeValues
import EdgeProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Where the process's Core Motion data comes from, and the one client
/// connection every manager shares (``AgentClient``: several managers cost
/// the agent one client).
///
/// The source is chosen once, at first use (and again after
/// ``EdgeMotionAgent`` settings change): the socket of
/// `EdgeMotionAgent.socketPath`, else that of `EdgeMotionAgent.configurationPath`,
/// else `$EDGE_AGENT_SOCKET`, else the socket of the configuration
/// `edge-agent run` reads. When nothing answers there
/// (no socket, nobody listening) and an in-process agent may be started, one
/// is started on a private socket and the same client talks to it: one code
/// path for both.
final class MotionService: @unchecked Sendable {
    static let shared = MotionService()

    private let lock = NSLock()
    private var socketOverride: String?
    private var configOverride: String?
    private var inProcessAllowed = true
    private var current: Source?

    /// One data source: a socket and its client.
    final class Source: @unchecked Sendable {
        let client: AgentClient
        let location: AgentSocketLocation
        /// The agent started in this process, if it is one.
        let embedded: EmbeddedAgentHandle?
        /// The agent's north frame and declination, as its version line says.
        var configuredFrame: ReferenceFrame? { client.version?.frame.flatMap(ReferenceFrame.init(rawValue:)) }
        var declinationDeg: Double? { client.version?.declinationDeg }
        let lock = NSLock()
        var devicesCache: (atNs: UInt64, list: [DeviceInfo])?

        init(client: AgentClient, location: AgentSocketLocation, embedded: EmbeddedAgentHandle?) {
            self.client = client; self.location = location; self.embedded = embedded
        }

        var description: String {
            if let e = embedded { return "an agent in this process (\(e.description)) on \(client.socketPath)" }
            return "the agent at \(client.socketPath) (\(location.source))"
        }
    }

    /// Why no source could be set up (a configuration that does not load).
    private var setupError: NSError?

    // MARK: configuration (EdgeMotionAgent)

    var socketPath: String? {
        get { lock.withLock { socketOverride } }
        set {
            lock.withLock { if socketOverride != newValue { socketOverride = newValue; resetLocked() } }
            cacheLock.withLock { socketIsSet = newValue != nil }
        }
    }

    var configurationPath: String? {
        get { lock.withLock { configOverride } }
        set { lock.withLock { if configOverride != newValue { configOverride = newValue; resetLocked() } } }
    }

    var allowsInProcessAgent: Bool {
        get { lock.withLock { inProcessAllowed } }
        set {
            lock.withLock { inProcessAllowed = newValue }
            cacheLock.withLock { inProcessIsAllowed = newValue }
        }
    }

    /// Forgets the source: the next use chooses again. Subscriptions of the
    /// old source end (their managers keep their state but get no data).
    private func resetLocked() {
        if let c = current {
            c.client.close()
            c.embedded?.stop()
        }
        current = nil
        setupError = nil
        cacheLock.withLock {
            cache = nil
            generation += 1
            refreshing = false
        }
    }

    func reset() { lock.withLock { resetLocked() } }

    // MARK: the source

    /// The source, connected when an agent answers (bounded wait). On
    /// failure: the error for the handlers (the source still exists when
    /// the socket is known: its client keeps trying while subscribed).
    func connectedSource(timeoutMs: Int = 3000) -> (Source?, NSError?) {
        lock.lock()
        defer { lock.unlock() }
        if let s = current, s.client.isConnected { return (s, nil) }
        if current == nil {
            let location: AgentSocketLocation
            if let p = socketOverride {
                location = AgentSocketLocation(path: p, source: "EdgeMotionAgent.socketPath")
            } else if let config = configOverride {
                do {
                    location = try AgentSocketLocator.fromConfig(config)
                } catch {
                    return (nil, .coreMotion(CMErrorNotAvailable, "Core Motion cannot read EdgeMotionAgent.configurationPath: \(error)"))
                }
            } else {
                do {
                    location = try AgentSocketLocator.locate(environment: ProcessInfo.processInfo.environment)
                } catch {
                    return (nil, .coreMotion(CMErrorNotAvailable, "Core Motion cannot find the agent: \(error)"))
                }
            }
            current = Source(client: AgentClient.shared(socketPath: location.path, configPath: location.configPath,
                                                        configuredGroup: location.configuredGroup),
                             location: location, embedded: nil)
        }
        let s = current!
        do {
            try s.client.connect(timeoutMs: timeoutMs)
            return (s, nil)
        } catch {
            if error.isNoAgent, s.embedded == nil, inProcessAllowed, socketOverride == nil,
               let starter = EmbeddedAgentHandle.starterLock.withLock({ EmbeddedAgentHandle.starter }) {
                let noAgent = error
                do {
                    let e = try starter(s.location.configPath)
                    let source = Source(client: AgentClient(socketPath: e.socketPath), location: s.location, embedded: e)
                    s.client.close()
                    current = source
                    do {
                        try source.client.connect(timeoutMs: timeoutMs)
                        return (source, nil)
                    } catch {
                        return (source, Self.error(error))
                    }
                } catch {
                    return (s, .coreMotion(CMErrorNotAvailable, "\(noAgent.description) No agent could be started in this process either: \(error)"))
                }
            }
            if error.isNoAgent, s.embedded == nil {
                return (s, .coreMotion(CMErrorNotAvailable, "\(error.description) The socket tried: \(s.location.path), \(s.location.source). Start one (`edge-agent run`), or let this app run its own: link the CoreMotionInProcessAgent product and call EdgeMotionInProcessAgent.install()."))
            }
            return (s, Self.error(error))
        }
    }

    /// The devices the agent reports (cached for a second); nil when it
    /// cannot be reached.
    func devices() -> [DeviceInfo]? {
        guard case (let s?, nil) = connectedSource() else { return nil }
        let now = monotonicNowNs()
        if let c = s.lock.withLock({ s.devicesCache }), now - c.atNs < 1_000_000_000 { return c.list }
        // An older agent (one that accepted clients while it started) lists
        // no devices yet: ask again (at most 3 s).
        let end = now + 3_000_000_000
        while true {
            guard case .devices(let list, _)? = try? s.client.request(.devices, timeoutMs: 3000) else { return nil }
            if !list.isEmpty {
                s.lock.withLock { s.devicesCache = (now, list) }
                return list
            }
            if monotonicNowNs() >= end { return list }
            var none = pollfd()
            _ = poll(&none, 0, 20)
        }
    }

    // MARK: what the agent has (never blocking the caller)

    /// What the agent said it has, asked for on ``worker`` (an app's
    /// availability and authorization calls never wait for the agent).
    struct Snapshot: Sendable {
        /// When it was taken, CLOCK_MONOTONIC ns.
        var atNs: UInt64
        /// The board's devices (nil: no agent answered).
        var devices: [DeviceInfo]?
        /// This user's entitlements (nil: no agent answered).
        var entitlements: Set<Entitlement>?
        /// Whether device motion has a north now (a current field backs it).
        var northServable: Bool
        /// The magnetic declination the agent applies, degrees east.
        var declinationDeg: Double?
        /// Whether the agent keeps a sensor recorder.
        var recorder = false
    }

    private let cacheLock = NSLock()
    private let cacheChanged = NSCondition()
    private var cache: Snapshot?
    private var refreshing = false
    /// Counts the source changes: a refresh that began before one does not
    /// publish what the old source said.
    private var generation = 0
    /// Mirrors of the settings, read without ``lock`` (which a connect holds).
    private var socketIsSet = false
    private var inProcessIsAllowed = true
    /// How long the first call of a process that opted in to an in-process
    /// agent waits for its first answer, ms: the agent may have to be
    /// started (the app asked for it with `EdgeMotionInProcessAgent.install()`).
    static let inProcessFirstAnswerWaitMs = 5000
    /// Where the agent is asked, so no caller thread waits for it.
    private let worker = DispatchQueue(label: "CoreMotion.MotionService")
    /// How long a snapshot answers before it is asked again (the stale one
    /// answers meanwhile), ns.
    static let snapshotLifetimeNs: UInt64 = 1_000_000_000
    /// How long a caller waits for the first snapshot of the process, ms.
    /// With no agent the answer is at once (nothing at the socket); with
    /// one it is one round trip (about a millisecond) - only a loaded agent
    /// makes the first call wait, at most this long. Later calls never wait.
    static let firstAnswerWaitMs = 2000

    /// The latest snapshot; asks for a new one when it is old. Waits at
    /// most ``firstAnswerWaitMs`` and only when there has never been one.
    func snapshot(waitMs: Int = firstAnswerWaitMs) -> Snapshot? {
        let now = monotonicNowNs()
        let (current, ask, inProcessMayStart): (Snapshot?, Bool, Bool) = cacheLock.withLock {
            let stale = cache.map { now &- $0.atNs >= Self.snapshotLifetimeNs } ?? true
            let ask = stale && !refreshing
            if ask { refreshing = true }
            return (cache, ask, !socketIsSet && inProcessIsAllowed)
        }
        if ask { worker.async { self.refresh() } }
        if let current { return current }
        var wait = waitMs
        if inProcessMayStart, EmbeddedAgentHandle.starterLock.withLock({ EmbeddedAgentHandle.starter != nil }) {
            wait = max(wait, Self.inProcessFirstAnswerWaitMs)
        }
        let deadline = Date(timeIntervalSinceNow: Double(wait) / 1000)
        cacheChanged.lock()
        defer { cacheChanged.unlock() }
        while true {
            if let c = cacheLock.withLock({ cache }) { return c }
            if !cacheChanged.wait(until: deadline) { return cacheLock.withLock { cache } }
        }
    }

    /// Asks the agent (on ``worker``: may take seconds) and keeps the answer.
    private func refresh() {
        let began = cacheLock.withLock { generation }
        var snap = Snapshot(atNs: monotonicNowNs(), devices: nil, entitlements: nil, northServable: false, declinationDeg: nil)
        var source: Source?
        if case (let s?, nil) = connectedSource(), let v = s.client.version {
            source = s
            snap.entitlements = Set(v.entitlements)
            snap.declinationDeg = v.declinationDeg
            snap.recorder = v.recorder
            snap.devices = devices()
            // Until device motion says: a north is servable when the
            // magnetometer is delivering or waiting to be asked.
            snap.northServable = snap.devices?.contains {
                $0.streams.contains(.magnetometer) && ($0.state == .present || $0.state == .idle)
            } ?? false
        }
        // What the callers waiting for the first answer need, first.
        publish(snap, done: source == nil, generation: began)
        guard let s = source else { return }
        if case .sample(.deviceMotion(let m))? = try? s.client.request(.poll(.deviceMotion), timeoutMs: 2000) {
            snap.northServable = m.northYawState == .live
        }
        publish(snap, done: true, generation: began)
    }

    private func publish(_ snap: Snapshot, done: Bool, generation began: Int) {
        var s = snap
        s.atNs = monotonicNowNs()
        cacheLock.withLock {
            // The source changed meanwhile: what it said is not kept, and
            // the next call asks the new one (reset cleared `refreshing`).
            guard generation == began else { return }
            cache = s
            if done { refreshing = false }
        }
        cacheChanged.lock()
        cacheChanged.broadcast()
        cacheChanged.unlock()
    }

    /// Whether a device of the board feeds `stream` (in any state: the
    /// board profile has it). Never blocks: see ``snapshot()``.
    func isAvailable(_ stream: StreamName, waitMs: Int = firstAnswerWaitMs) -> Bool {
        snapshot(waitMs: waitMs)?.devices?.contains { $0.streams.contains(stream) } ?? false
    }

    /// The authorization for `stream` from the agent's entitlements for this
    /// process's user: held → authorized; not held → denied; no agent →
    /// notDetermined. Never blocks.
    func authorization(_ stream: StreamName) -> CMAuthorizationStatus {
        guard let held = snapshot()?.entitlements else { return .notDetermined }
        return stream.isPermitted(by: held) ? .authorized : .denied
    }

    /// The device motion frames an app may ask for now: the arbitrary frame
    /// with an IMU; the corrected one with a magnetometer; magnetic north
    /// while a current field gives a north, and true north then too when the
    /// agent knows the declination. Never blocks.
    func availableFrames(waitMs: Int = firstAnswerWaitMs) -> CMAttitudeReferenceFrame {
        guard let snap = snapshot(waitMs: waitMs), let list = snap.devices else { return [] }
        guard list.contains(where: { $0.streams.contains(.deviceMotion) }) else { return [] }
        var frames: CMAttitudeReferenceFrame = .xArbitraryZVertical
        guard list.contains(where: { $0.streams.contains(.magnetometer) }) else { return frames }
        frames.insert(.xArbitraryCorrectedZVertical)
        if snap.northServable {
            frames.insert(.xMagneticNorthZVertical)
            if snap.declinationDeg != nil { frames.insert(.xTrueNorthZVertical) }
        }
        return frames
    }

    /// The magnetic declination the agent applies, degrees east (nil:
    /// none, or not known yet). Never blocks.
    var declinationDeg: Double? { cacheLock.withLock { cache?.declinationDeg } }

    /// The rate of `stream`'s samples, Hz, rounded. Never blocks: answered
    /// from what is known (``snapshot()``, asked again in the background
    /// when old), as the availability calls are. A rate measured from
    /// delivered samples in the last ``measuredRateLifetimeNs`` wins (the
    /// samples say what they came at); else the device's rate in the
    /// agent's devices report, when it is not idle (it follows demand);
    /// else the last rate known, from either; 0 when none was.
    func rate(of stream: StreamName) -> Int {
        let reported = Int((snapshot()?.devices?.first { $0.streams.contains(stream) }?.rateHz ?? 0).rounded())
        let now = monotonicNowNs()
        return ratesLock.withLock {
            if let k = knownRates[stream], k.measured, now &- k.atNs < Self.measuredRateLifetimeNs { return k.hz }
            if reported > 0 {
                knownRates[stream] = KnownRate(hz: reported, atNs: now, measured: false)
                return reported
            }
            return knownRates[stream]?.hz ?? 0
        }
    }

    /// A rate measured from delivered samples, Hz. Within
    /// ``nominalRateTolerance`` of the device's rate in the agent's report
    /// it is that nominal rate: the samples' capture stamps jitter by a few
    /// ms (FIFO reads), so 200 samples over a second measure 199 or 201 Hz
    /// while the chip runs at 200 (a loaded CI run read 199 here).
    func noteRate(_ hz: Int, of stream: StreamName) {
        guard hz > 0 else { return }
        let reported = Int((snapshot()?.devices?.first { $0.streams.contains(stream) }?.rateHz ?? 0).rounded())
        let known = Self.nominal(measured: hz, reported: reported)
        let now = monotonicNowNs()
        ratesLock.withLock { knownRates[stream] = KnownRate(hz: known, atNs: now, measured: true) }
    }

    /// The rate to report for a measured one: the agent's `reported` rate
    /// when the two agree within ``nominalRateTolerance``, else the measured.
    static func nominal(measured: Int, reported: Int) -> Int {
        guard reported > 0, abs(Double(measured - reported)) <= nominalRateTolerance * Double(reported) else { return measured }
        return reported
    }

    /// How far, as a fraction, a measured rate may sit from the reported
    /// one and still be that rate (a sample lost or a few ms of stamp
    /// jitter over a one-second batch).
    static let nominalRateTolerance = 0.03

    /// How long a rate measured from samples outranks the agent's report,
    /// ns (batches come once a second while they run).
    static let measuredRateLifetimeNs: UInt64 = 2_500_000_000

    /// A rate and where it came from.
    struct KnownRate {
        var hz: Int
        /// When it was learnt, CLOCK_MONOTONIC ns.
        var atNs: UInt64
        /// Measured from delivered samples (else: the agent's report).
        var measured: Bool
    }
    private let ratesLock = NSLock()
    private var knownRates: [StreamName: KnownRate] = [:]

    /// The submersion depth limit of this user's entitlement, m: 40 with
    /// `submersion.full`, 6 with `submersion.shallow`, nil with neither or
    /// while no agent has answered. Never blocks (``snapshot()``).
    var maximumDepthMeters: Double? {
        guard let held = snapshot()?.entitlements else { return nil }
        if held.contains(.submersionFull) { return SubmersionSample.fullMaximumDepth }
        if held.contains(.submersionShallow) { return SubmersionSample.shallowMaximumDepth }
        return nil
    }

    /// A client error as the `NSError` a handler gets.
    static func error(_ e: AgentClientError) -> NSError {
        switch e {
        case .notEntitled: return .coreMotion(CMErrorNotEntitled, e.description)
        case .permissionDenied: return .coreMotion(CMErrorNotAuthorized, e.description)
        case .refused(.unknownStream?, _, _, _): return .coreMotion(CMErrorNotAvailable, "this agent does not serve the stream (an older agent?): \(e.description)")
        case .refused(.unknownRequest?, _, _, _): return .coreMotion(CMErrorNotAvailable, "this agent does not know the request (an agent older than this library: update edge-agent): \(e.description)")
        default: return .coreMotion(CMErrorNotAvailable, e.description)
        }
    }
}

/// An agent running inside this process (the fallback when none answers).
/// The `CoreMotionInProcessAgent` product sets ``starter`` when an app opts
/// in (`EdgeMotionInProcessAgent.install()`); until then nothing is started
/// and the handlers say that no agent answers, and how to opt in.
package final class EmbeddedAgentHandle: @unchecked Sendable {
    package let socketPath: String
    package let description: String
    private let stopAgent: @Sendable () -> Void

    package init(socketPath: String, description: String, stop: @escaping @Sendable () -> Void) {
        self.socketPath = socketPath; self.description = description; self.stopAgent = stop
    }

    func stop() { stopAgent() }

    /// Starts an agent for the configuration at the given path (nil: the
    /// default lookup) on a private socket; nil: no in-process agent linked.
    nonisolated(unsafe) package static var starter: (@Sendable (String?) throws -> EmbeddedAgentHandle)?
    package static let starterLock = NSLock()
}

/// Carries a non-Sendable value (a handler, an app's sample object) to the
/// queue that runs the handler. Core Motion's objects are immutable once
/// made, and a handler runs on the queue the app chose, as on iOS.
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A weak reference that crosses to the threads that deliver (the object
/// is only used on the queue the app gave, or for its own locked state).
final class WeakBox<T: AnyObject>: @unchecked Sendable {
    weak var value: T?
    init(_ value: T) { self.value = value }
}
