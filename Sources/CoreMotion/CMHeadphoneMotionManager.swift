import EdgeClient
import EdgeProtocol

/// Receives the accessory IMU's connection changes.
///
/// Apple's protocol declares both methods optional (an Objective-C
/// feature); here they have empty default implementations, so a delegate
/// implements only what it needs, as on iOS.
public protocol CMHeadphoneMotionManagerDelegate: NSObjectProtocol {
    func headphoneMotionManagerDidConnect(_ manager: CMHeadphoneMotionManager)
    func headphoneMotionManagerDidDisconnect(_ manager: CMHeadphoneMotionManager)
}

extension CMHeadphoneMotionManagerDelegate {
    public func headphoneMotionManagerDidConnect(_ manager: CMHeadphoneMotionManager) {}
    public func headphoneMotionManagerDidDisconnect(_ manager: CMHeadphoneMotionManager) {}
}

/// Device motion of the accessory IMU (the board's second MPU-6050, worn on
/// the head or a limb), and its connection changes.
///
/// The delegate is called on the main queue (`OperationQueue.main`: a
/// command-line program runs the main run loop), with
/// `headphoneMotionManagerDidConnect(_:)` once at
/// ``startConnectionStatusUpdates()`` when the accessory already delivers,
/// then at every change the agent reports (a `connection` event of the
/// accessory IMU), and `…DidDisconnect(_:)` also when the agent itself goes away.
open class CMHeadphoneMotionManager: NSObject {
    public typealias DeviceMotionHandler = CMHeadphoneDeviceMotionHandler

    let motion = UpdateChannel<CMDeviceMotion>(stream: .accessoryMotion, interval: 0.01)
    private let lock = NSLock()
    private weak var _delegate: (any CMHeadphoneMotionManagerDelegate)?
    private var status: ConnectionStatus?

    public override init() { super.init() }

    deinit {
        motion.stop()
        status?.stop()
    }

    /// `.authorized` when this user holds the agent's `motion` entitlement.
    open class func authorizationStatus() -> CMAuthorizationStatus { MotionService.shared.authorization(.accessoryMotion) }

    open weak var delegate: (any CMHeadphoneMotionManagerDelegate)? {
        get { lock.withLock { _delegate } }
        set { lock.withLock { _delegate = newValue } }
    }

    /// Whether the board has an accessory IMU (its profile lists one).
    open var isDeviceMotionAvailable: Bool { MotionService.shared.isAvailable(.accessoryMotion) }
    open var isDeviceMotionActive: Bool { motion.isActive }
    open var deviceMotion: CMDeviceMotion? { motion.data }
    open var isConnectionStatusActive: Bool { lock.withLock { status != nil } }

    open func startDeviceMotionUpdates() { motion.start(queue: nil, handler: nil, convert: Self.conversion().convert) }

    open func startDeviceMotionUpdates(to queue: OperationQueue,
                                       withHandler handler: @escaping CMHeadphoneMotionManager.DeviceMotionHandler) {
        motion.start(queue: queue, handler: handler, convert: Self.conversion().convert)
    }

    open func stopDeviceMotionUpdates() { motion.stop() }

    /// Attitude in an arbitrary frame fixed at the first sample (yaw 0 there).
    static func conversion() -> MotionConversion {
        MotionConversion(FrameConverter(requested: .xArbitraryZVertical),
                         stream: .accessoryMotion, location: .default)
    }

    open func startConnectionStatusUpdates() {
        stopConnectionStatusUpdates()
        let manager = WeakBox(self)
        let s = ConnectionStatus { connected in
            OperationQueue.main.addOperation {
                guard let m = manager.value, let d = m.delegate else { return }
                if connected { d.headphoneMotionManagerDidConnect(m) } else { d.headphoneMotionManagerDidDisconnect(m) }
            }
        }
        lock.withLock { status = s }
        s.start()
    }

    open func stopConnectionStatusUpdates() {
        let s: ConnectionStatus? = lock.withLock {
            defer { status = nil }
            return status
        }
        s?.stop()
    }
}

/// Follows the accessory IMU's connection: its state in `devices` at start,
/// then its `connection` events; the agent going away is a disconnection.
final class ConnectionStatus: @unchecked Sendable {
    private let changed: @Sendable (Bool) -> Void
    private let lock = NSLock()
    private var connected: Bool?
    private var observation: Observation?
    private var keepProbed: StreamSource?
    private var stopped = false
    private var accessoryIDs: Set<String> = []
    /// Runs what must not run on the client's reader thread (a request).
    private let work = OperationQueue.coreMotionInternal()

    init(_ changed: @escaping @Sendable (Bool) -> Void) { self.changed = changed }

    func start() {
        // Subscribing keeps the accessory probed while nobody wants its data.
        let probe = StreamSource(stream: .accessoryConnection, interval: 1, onSample: { _ in }, onError: { _ in })
        lock.withLock { keepProbed = probe }
        probe.start()
        // Connecting may take a while: not on the app's thread.
        work.addOperation { [weak self] in
            let (source, _) = MotionService.shared.connectedSource()
            guard let self, let client = source?.client else { return }
            let o = client.observe { [weak self] e in self?.handle(e) }
            let keep: Bool = self.lock.withLock {
                guard !self.stopped else { return false }
                self.observation = o
                return true
            }
            guard keep else { o.cancel(); return }
            self.refresh()
        }
    }

    func stop() {
        let (o, p): (Observation?, StreamSource?) = lock.withLock {
            stopped = true
            defer { observation = nil; keepProbed = nil }
            return (observation, keepProbed)
        }
        o?.cancel()
        p?.stop()
    }

    /// Takes the accessory's state from `devices`.
    private func refresh() {
        work.addOperation { [weak self] in
            guard let self, let list = MotionService.shared.devices() else { return }
            let accessories = list.filter { $0.streams.contains(.accessoryMotion) }
            self.lock.withLock { self.accessoryIDs = Set(accessories.map(\.id)) }
            self.set(accessories.contains { $0.state.isHealthy })
        }
    }

    private func handle(_ e: AgentEvent) {
        switch e {
        case .device(let event):
            let mine = lock.withLock { accessoryIDs.contains(event.deviceID) }
            if mine { set(event.connected) }
        case .disconnected:
            set(false)
        case .connected:
            refresh()
        default:
            break
        }
    }

    private func set(_ now: Bool) {
        let report: Bool = lock.withLock {
            guard !stopped, connected != now else { return false }
            // Nothing to say when it was never connected and still is not.
            let first = connected == nil
            connected = now
            return !(first && !now)
        }
        if report { changed(now) }
    }
}
