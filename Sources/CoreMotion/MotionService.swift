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
        set { lock.withLock { if socketOverride != newValue { socketOverride = newValue; resetLocked() } } }
    }

    var configurationPath: String? {
        get { lock.withLock { configOverride } }
        set { lock.withLock { if configOverride != newValue { configOverride = newValue; resetLocked() } } }
    }

    var allowsInProcessAgent: Bool {
        get { lock.withLock { inProcessAllowed } }
        set { lock.withLock { inProcessAllowed = newValue } }
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
                return (s, .coreMotion(CMErrorNotAvailable, "\(error.description) Start one (`edge-agent run`), or let this app run its own: link the CoreMotionInProcessAgent product and call EdgeMotionInProcessAgent.install()."))
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
        // An agent that is starting lists no devices yet: ask again (at most 3 s).
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

    /// Whether a device of the board feeds `stream` (in any state: the
    /// board profile has it).
    func isAvailable(_ stream: StreamName) -> Bool {
        devices()?.contains { $0.streams.contains(stream) } ?? false
    }

    /// The authorization for `stream` from the agent's entitlements for this
    /// process's user: held → authorized; not held → denied; no agent →
    /// notDetermined.
    func authorization(_ stream: StreamName) -> CMAuthorizationStatus {
        guard case (let s?, nil) = connectedSource(), let v = s.client.version else { return .notDetermined }
        return stream.isPermitted(by: Set(v.entitlements)) ? .authorized : .denied
    }

    /// The device motion frames an app may ask for.
    func availableFrames() -> CMAttitudeReferenceFrame {
        guard let list = devices() else { return [] }
        guard list.contains(where: { $0.streams.contains(.deviceMotion) }) else { return [] }
        var frames: CMAttitudeReferenceFrame = .xArbitraryZVertical
        guard list.contains(where: { $0.streams.contains(.magnetometer) }) else { return frames }
        frames.insert(.xArbitraryCorrectedZVertical)
        let (source, _) = connectedSource()
        var north: ReferenceFrame? = source?.configuredFrame
        if case .sample(.deviceMotion(let s))? = try? source?.client.request(.poll(.deviceMotion), timeoutMs: 2000),
           s.referenceFrame.hasNorth {
            north = s.referenceFrame
        }
        switch north {
        case .xTrueNorthZVertical?: frames.insert(.xTrueNorthZVertical)
        case .xMagneticNorthZVertical?, nil: frames.insert(.xMagneticNorthZVertical)
        default: break
        }
        if source?.declinationDeg != nil { frames.formUnion([.xMagneticNorthZVertical, .xTrueNorthZVertical]) }
        return frames
    }

    /// The IMU rate now, Hz (the device feeding `stream`), rounded.
    func rate(of stream: StreamName) -> Int {
        Int((devices()?.first { $0.streams.contains(stream) }?.rateHz ?? 0).rounded())
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
