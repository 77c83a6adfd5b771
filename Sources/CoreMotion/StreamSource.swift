import EdgeClient
import EdgeProtocol

/// One running subscription of a Core Motion manager to one of the agent's
/// streams: the shared internal piece every manager (and the later ones:
/// pedometer, activity, submersion) is built on.
///
/// ``start()`` checks, before subscribing, that a device feeds the stream
/// (else one `CMErrorNotAvailable` error), then that this user holds its
/// entitlement (else one `CMErrorNotEntitled` error): an app without the
/// entitlement gets its error at once, never a silent wait. An agent that
/// does not answer is one `CMErrorNotAvailable` error, and the subscription
/// stays: data flows once an agent is there. Each error is reported once
/// per start.
///
/// While it runs, losing the agent is never silent: when the connection
/// ends (the agent stopped, crashed or restarted) the handler gets one
/// `CMErrorNotAvailable` error saying so, the update stays active, and the
/// samples resume on the same handler when the client has reconnected and
/// subscribed again; the next loss is reported again.
final class StreamSource: @unchecked Sendable {
    let stream: StreamName
    private let onSample: @Sendable (Sample) -> Void
    private let onError: @Sendable (NSError) -> Void
    private let lock = NSLock()
    private var intervalNs: UInt64
    private var subscription: Subscription?
    private var observation: Observation?
    private var stopped = false
    private var reported = false
    /// The connection was lost and has not come back (reported once).
    private var away = false
    /// Called once by ``stop()`` (an async sequence ends with it).
    var onStop: (@Sendable () -> Void)? {
        get { lock.withLock { _onStop } }
        set { lock.withLock { _onStop = newValue } }
    }
    private var _onStop: (@Sendable () -> Void)?

    /// `interval`: seconds between samples (0: every sample the agent makes).
    init(stream: StreamName, interval: TimeInterval,
         onSample: @escaping @Sendable (Sample) -> Void, onError: @escaping @Sendable (NSError) -> Void) {
        self.stream = stream
        self.intervalNs = Self.nanoseconds(interval)
        self.onSample = onSample; self.onError = onError
    }

    /// Seconds → ns, clamped to the protocol's 0...3600 s.
    static func nanoseconds(_ s: TimeInterval) -> UInt64 {
        guard s.isFinite, s > 0 else { return 0 }
        return UInt64((min(s, 3600) * 1e9).rounded())
    }

    /// A check of the manager's own, made after the agent answered and
    /// before subscribing (nil: go on; an error: reported, no subscription;
    /// `CMErrorDeviceRequiresMovement`: reported, and the subscription goes on).
    var precheck: (@Sendable () -> NSError?)? {
        get { lock.withLock { _precheck } }
        set { lock.withLock { _precheck = newValue } }
    }
    private var _precheck: (@Sendable () -> NSError?)?

    /// Starts in the background and returns at once (Apple's start calls
    /// never wait for the sensors): connecting, the checks and the
    /// subscription happen on a thread of the library's, and an error
    /// reaches the handler from there.
    func start() {
        DispatchQueue.global(qos: .userInitiated).async { [self] in startNow() }
    }

    private func startNow() {
        if lock.withLock({ stopped }) { return }
        let (source, error) = MotionService.shared.connectedSource()
        if let error { report(error) }
        guard let source else { return }
        if error == nil {
            if stream.carriesSamples, !MotionService.shared.isAvailable(stream, waitMs: 5000) {
                report(.coreMotion(CMErrorNotAvailable, "no device of this board feeds \(stream.rawValue) (see `edge-agent watch` for the board's devices)"))
                return
            }
            if let v = source.client.version, !stream.isPermitted(by: Set(v.entitlements)) {
                report(MotionService.error(.notEntitled(stream: stream, entitlement: stream.entitlement, uid: v.uid,
                                                        message: "")))
                return
            }
            if let e = precheck?() {
                // Apple reports CMErrorDeviceRequiresMovement once and keeps
                // the updates (CMMotionManager.showsDeviceMovementDisplay):
                // the samples come once the field allows
                if e.domain == CMErrorDomain, e.code == Int(CMErrorDeviceRequiresMovement.rawValue) {
                    onError(e)
                } else {
                    report(e)
                    return
                }
            }
        }
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        subscription = source.client.subscribe(stream, intervalNs: intervalNs, onSample: onSample,
                                               onError: { [weak self] e in self?.report(MotionService.error(e)) })
        observation = source.client.observe { [weak self] event in self?.connection(event) }
    }

    /// The client's connection events (on its reader thread).
    private func connection(_ event: AgentEvent) {
        let lost: String?
        switch event {
        case .disconnected(let e): lost = e.description
        case .shutdown(let reason): lost = "the agent is stopping (\(reason))"
        case .connected:
            lock.withLock { away = false }
            return
        default: return
        }
        let first = lock.withLock { () -> Bool in
            if away || stopped { return false }
            away = true
            return true
        }
        if first, let lost {
            onError(.coreMotion(CMErrorNotAvailable, "the connection to the agent was lost: \(lost); \(stream.rawValue) updates resume when it is back (the library reconnects)"))
        }
    }

    func setInterval(_ interval: TimeInterval) {
        lock.withLock {
            intervalNs = Self.nanoseconds(interval)
            subscription?.setInterval(intervalNs)
        }
    }

    func stop() {
        let done: (@Sendable () -> Void)? = lock.withLock {
            stopped = true
            subscription?.cancel()
            subscription = nil
            observation?.cancel()
            observation = nil
            defer { _onStop = nil }
            return _onStop
        }
        done?()
    }

    private func report(_ e: NSError) {
        let first = lock.withLock { () -> Bool in
            if reported || stopped { return false }
            reported = true
            return true
        }
        if first { onError(e) }
    }
}

/// Runs a handler with a value on an `OperationQueue` (as Core Motion does:
/// the handler runs on the queue the app passed).
@inline(__always)
func deliver<T>(_ queue: OperationQueue, _ handler: @escaping (T?, (any Error)?) -> Void, _ value: T?, _ error: NSError?) {
    let call = HandlerCall(handler, value, error)
    queue.addOperation { call.run() }
}

/// One handler call, carried to its queue.
final class HandlerCall<T>: @unchecked Sendable {
    let handler: (T?, (any Error)?) -> Void
    let value: T?
    let error: NSError?
    init(_ handler: @escaping (T?, (any Error)?) -> Void, _ value: T?, _ error: NSError?) {
        self.handler = handler; self.value = value; self.error = error
    }
    func run() { handler(value, error) }
}
