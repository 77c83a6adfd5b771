import EdgeProtocol
import EdgeValues

public typealias CMMotionActivityHandler = (CMMotionActivity?) -> Void
public typealias CMMotionActivityQueryHandler = ([CMMotionActivity]?, (any Error)?) -> Void

/// CMMotionActivityConfidence.
public enum CMMotionActivityConfidence: Int, @unchecked Sendable {
    case low = 0
    case medium = 1
    case high = 2
}

/// What the wearer is doing; several flags may be true at once
/// (stationary and automotive: a vehicle at a stop).
open class CMMotionActivity: CMLogItem {
    let _startDate: Date
    let _flags: ActivityFlags
    let _confidence: CMMotionActivityConfidence
    open var startDate: Date { _startDate }
    open var confidence: CMMotionActivityConfidence { _confidence }
    open var stationary: Bool { _flags.contains(.stationary) }
    open var walking: Bool { _flags.contains(.walking) }
    open var running: Bool { _flags.contains(.running) }
    open var automotive: Bool { _flags.contains(.automotive) }
    open var cycling: Bool { _flags.contains(.cycling) }
    open var unknown: Bool { _flags.contains(.unknown) }

    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(date: _startDate, forKey: "startDate")
        coder.encode(Int(_flags.rawValue), forKey: "flags")
        coder.encode(_confidence.rawValue, forKey: "confidence")
    }

    public required init?(coder: NSCoder) {
        _startDate = coder.decodeDate(forKey: "startDate")
        _flags = ActivityFlags(rawValue: UInt8(truncatingIfNeeded: coder.decodeInteger(forKey: "flags")))
        _confidence = CMMotionActivityConfidence(rawValue: coder.decodeInteger(forKey: "confidence")) ?? .low
        super.init(coder: coder)
    }

    public override init() { _startDate = Date(); _flags = .unknown; _confidence = .low; super.init() }
    init(timestamp: TimeInterval, startDate: Date, flags: ActivityFlags, confidence: ActivityConfidence) {
        _startDate = startDate; _flags = flags
        _confidence = CMMotionActivityConfidence(rawValue: Int(confidence.rawValue)) ?? .low
        super.init(timestamp: timestamp)
    }
}

/// The agent's activity classifier (its `activity` stream, `fitness`
/// entitlement), live and from its history.
open class CMMotionActivityManager: NSObject {
    let updates = UpdateChannel<CMMotionActivity>(stream: .activity, interval: 0)

    public override init() { super.init() }
    deinit { updates.stop() }

    open class func isActivityAvailable() -> Bool { MotionService.shared.isAvailable(.activity) }
    /// `.authorized` with the agent's `fitness` entitlement, `.denied`
    /// without, `.notDetermined` while no agent answers.
    open class func authorizationStatus() -> CMAuthorizationStatus { MotionService.shared.authorization(.activity) }

    /// Each change of activity, on `queue`. (Apple's handler has no error:
    /// a missing entitlement or agent ends the updates silently there; here
    /// the handler is not called and
    /// ``EdgeMotionAgent/lastActivityError(of:)`` says why.)
    ///
    /// As Apple's, the current activity comes first, when the updates
    /// start (asked of the agent before subscribing), then each change.
    open func startActivityUpdates(to queue: OperationQueue, withHandler handler: @escaping CMMotionActivityHandler) {
        let box = ErrorBox()
        errorBox = box
        let call = UncheckedSendable(handler)
        let precheck: @Sendable () -> NSError? = {
            if case (let s?, nil) = MotionService.shared.connectedSource(),
               case .sample(.activity(let a))? = try? s.client.request(.poll(.activity), timeoutMs: 2000) {
                let current = UncheckedSendable(Self.activity(a))
                queue.addOperation { call.value(current.value) }
            }
            return nil
        }
        updates.start(queue: queue, handler: { activity, error in
            if let error { box.set((error as NSError).asMotionActivityError) }
            if let activity { handler(activity) }
        }, precheck: precheck) { sample in
            guard case .activity(let a) = sample else { return nil }
            return Self.activity(a)
        }
    }

    static func activity(_ a: ActivitySample) -> CMMotionActivity {
        CMMotionActivity(timestamp: Wire.timestamp(a.timestampNs), startDate: FitnessTime.date(monotonicNs: a.startNs),
                         flags: a.flags, confidence: a.confidence)
    }

    open func stopActivityUpdates() { updates.stop() }

    /// Why the live updates gave nothing (no agent, no entitlement), if
    /// so; public as ``EdgeMotionAgent/lastActivityError(of:)``, since
    /// nothing beyond Apple's surface goes on Apple's types.
    var lastError: NSError? { errorBox?.value }
    private var errorBox: ErrorBox?

    /// The activities between two dates from the agent's history: the one
    /// going on at `start`, then each change, oldest first.
    open func queryActivityStarting(from start: Date, to end: Date, to queue: OperationQueue,
                                    withHandler handler: @escaping CMMotionActivityQueryHandler) {
        let call = UncheckedSendable(handler)
        Thread.detachNewThread {
            let result: ([CMMotionActivity]?, NSError?)
            switch FitnessHistoryAccess.open() {
            case .failure(let e):
                result = (nil, e)
            case .success(let h):
                defer { h.close() }
                do {
                    let rows = try h.activities(fromUnixNs: FitnessTime.unixNs(start), toUnixNs: FitnessTime.unixNs(end))
                    result = (rows.map { r in
                        let d = Date(timeIntervalSince1970: r.startS)
                        let mono = ProcessInfo.processInfo.systemUptime - Date().timeIntervalSince(d)
                        return CMMotionActivity(timestamp: mono, startDate: d, flags: r.flags, confidence: r.confidence)
                    }, nil)
                } catch let e as NSError where e.domain == CMErrorDomain {
                    result = (nil, e)
                } catch {
                    result = (nil, .coreMotion(CMErrorNotAvailable, "fitness history: \(error)"))
                }
            }
            let r = UncheckedSendable((result.0, result.1?.asMotionActivityError))
            queue.addOperation { call.value(r.value.0, r.value.1) }
        }
    }
}

final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var e: NSError?
    func set(_ e: NSError) { lock.withLock { self.e = e } }
    var value: NSError? { lock.withLock { e } }
}
