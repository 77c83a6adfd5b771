import EdgeProtocol
import EdgeValues

public typealias CMPedometerHandler = (CMPedometerData?, (any Error)?) -> Void
public typealias CMPedometerEventHandler = (CMPedometerEvent?, (any Error)?) -> Void

/// Steps, distance, floors, pace and cadence over a span of time.
///
/// As Apple's, `NSCopying` and `NSSecureCoding`: `copy()` is a new object
/// with the same values, and `NSKeyedArchiver` / `NSKeyedUnarchiver` round
/// trips give the same values.
open class CMPedometerData: NSObject, NSCopying, NSSecureCoding {
    let _startDate: Date, _endDate: Date
    let _steps: NSNumber
    let _distance: NSNumber?, _floorsAscended: NSNumber?, _floorsDescended: NSNumber?
    let _currentPace: NSNumber?, _currentCadence: NSNumber?, _averageActivePace: NSNumber?

    open var startDate: Date { _startDate }
    open var endDate: Date { _endDate }
    /// Steps taken.
    open var numberOfSteps: NSNumber { _steps }
    /// m, from the agent's stride model (`fitness.height_m`, `stride_scale`).
    open var distance: NSNumber? { _distance }
    /// Floors climbed on foot (an elevator counts nothing); nil without a barometer.
    open var floorsAscended: NSNumber? { _floorsAscended }
    open var floorsDescended: NSNumber? { _floorsDescended }
    /// s/m now (live updates only).
    open var currentPace: NSNumber? { _currentPace }
    /// steps/s now (live updates only).
    open var currentCadence: NSNumber? { _currentCadence }
    /// s/m over the time spent walking.
    open var averageActivePace: NSNumber? { _averageActivePace }

    public override init() {
        _startDate = Date(); _endDate = _startDate; _steps = 0
        _distance = nil; _floorsAscended = nil; _floorsDescended = nil
        _currentPace = nil; _currentCadence = nil; _averageActivePace = nil
        super.init()
    }

    init(start: Date, end: Date, totals: PedometerTotals, floors: Bool, currentPace: Double?, currentCadence: Double?) {
        _startDate = start; _endDate = end
        _steps = NSNumber(value: totals.steps)
        _distance = NSNumber(value: totals.distanceMeters)
        _floorsAscended = floors ? NSNumber(value: totals.floorsAscended) : nil
        _floorsDescended = floors ? NSNumber(value: totals.floorsDescended) : nil
        _currentPace = currentPace.map { NSNumber(value: $0) }
        _currentCadence = currentCadence.map { NSNumber(value: $0) }
        _averageActivePace = NSNumber(value: totals.averageActivePace)
        super.init()
    }

    public class var supportsSecureCoding: Bool { true }

    open func encode(with coder: NSCoder) {
        coder.encode(date: _startDate, forKey: "startDate")
        coder.encode(date: _endDate, forKey: "endDate")
        coder.encode(_steps, forKey: "numberOfSteps")
        coder.encode(_distance, forKey: "distance")
        coder.encode(_floorsAscended, forKey: "floorsAscended")
        coder.encode(_floorsDescended, forKey: "floorsDescended")
        coder.encode(_currentPace, forKey: "currentPace")
        coder.encode(_currentCadence, forKey: "currentCadence")
        coder.encode(_averageActivePace, forKey: "averageActivePace")
    }

    public required init?(coder: NSCoder) {
        _startDate = coder.decodeDate(forKey: "startDate")
        _endDate = coder.decodeDate(forKey: "endDate")
        guard let steps = coder.decodeObject(of: NSNumber.self, forKey: "numberOfSteps") else { return nil }
        _steps = steps
        _distance = coder.decodeObject(of: NSNumber.self, forKey: "distance")
        _floorsAscended = coder.decodeObject(of: NSNumber.self, forKey: "floorsAscended")
        _floorsDescended = coder.decodeObject(of: NSNumber.self, forKey: "floorsDescended")
        _currentPace = coder.decodeObject(of: NSNumber.self, forKey: "currentPace")
        _currentCadence = coder.decodeObject(of: NSNumber.self, forKey: "currentCadence")
        _averageActivePace = coder.decodeObject(of: NSNumber.self, forKey: "averageActivePace")
        super.init()
    }

    /// A new object with the same values (through the class's coding).
    open func copy(with zone: NSZone? = nil) -> Any { codedCopy(self) }
}

/// CMPedometerEventType.
public enum CMPedometerEventType: Int, @unchecked Sendable {
    case pause = 0
    case resume = 1
}

/// The wearer stopped or started walking. `NSCopying` and
/// `NSSecureCoding`, as Apple's.
open class CMPedometerEvent: NSObject, NSCopying, NSSecureCoding {
    let _date: Date, _type: CMPedometerEventType
    open var date: Date { _date }
    open var type: CMPedometerEventType { _type }
    public override init() { _date = Date(); _type = .pause; super.init() }
    init(date: Date, type: CMPedometerEventType) { _date = date; _type = type; super.init() }

    public class var supportsSecureCoding: Bool { true }

    open func encode(with coder: NSCoder) {
        coder.encode(date: _date, forKey: "date")
        coder.encode(_type.rawValue, forKey: "type")
    }

    public required init?(coder: NSCoder) {
        guard let type = CMPedometerEventType(rawValue: coder.decodeInteger(forKey: "type")) else { return nil }
        _date = coder.decodeDate(forKey: "date")
        _type = type
        super.init()
    }

    /// A new object with the same values (through the class's coding).
    open func copy(with zone: NSZone? = nil) -> Any { codedCopy(self) }
}

/// Steps, distance, floors, pace and cadence from the agent's pedometer
/// (its `pedometer` and `pedometerEvent` streams, `fitness` entitlement).
///
/// Live updates add to what the history holds between `start` and the
/// moment they begin (when this process may read the history: see
/// ``queryPedometerData(from:to:withHandler:)``); handlers run on an
/// internal queue, as Apple's do.
open class CMPedometer: NSObject {
    let updates = UpdateChannel<CMPedometerData>(stream: .pedometer, interval: 0)
    let eventChannel = UpdateChannel<CMPedometerEvent>(stream: .pedometerEvent, interval: 0)
    let handlerQueue = OperationQueue.coreMotionInternal("CMPedometer")

    public override init() { super.init() }
    deinit { updates.stop(); eventChannel.stop() }

    /// The board has an IMU feeding the pedometer.
    open class func isStepCountingAvailable() -> Bool { MotionService.shared.isAvailable(.pedometer) }
    /// Distance comes with the steps (the stride model).
    open class func isDistanceAvailable() -> Bool { isStepCountingAvailable() }
    /// The board has a barometer too.
    open class func isFloorCountingAvailable() -> Bool {
        isStepCountingAvailable() && MotionService.shared.isAvailable(.altitude)
    }
    open class func isPaceAvailable() -> Bool { isStepCountingAvailable() }
    open class func isCadenceAvailable() -> Bool { isStepCountingAvailable() }
    open class func isPedometerEventTrackingAvailable() -> Bool { MotionService.shared.isAvailable(.pedometerEvent) }
    /// `.authorized` with the agent's `fitness` entitlement, `.denied`
    /// without, `.notDetermined` while no agent answers.
    open class func authorizationStatus() -> CMAuthorizationStatus { MotionService.shared.authorization(.pedometer) }

    /// The totals between two dates, from the agent's history.
    open func queryPedometerData(from start: Date, to end: Date, withHandler handler: @escaping CMPedometerHandler) {
        let queue = handlerQueue
        let floors = Self.isFloorCountingAvailable()
        let box = UncheckedSendable(handler)
        Thread.detachNewThread {
            let handler = box.value
            switch FitnessHistoryAccess.open() {
            case .failure(let e):
                deliver(queue, handler, nil, e.asMotionActivityError)
            case .success(let h):
                defer { h.close() }
                do {
                    let t = try h.pedometer(fromUnixNs: FitnessTime.unixNs(start), toUnixNs: FitnessTime.unixNs(end))
                    deliver(queue, handler, CMPedometerData(start: start, end: end, totals: t, floors: floors,
                                                            currentPace: nil, currentCadence: nil), nil)
                } catch let e as NSError where e.domain == CMErrorDomain {
                    deliver(queue, handler, nil, e.asMotionActivityError)
                } catch {
                    deliver(queue, handler, nil, .coreMotion(CMErrorMotionActivityNotAvailable, "fitness history: \(error)"))
                }
            }
        }
    }

    /// Cumulative data since `start`, on every new step or floor. Returns
    /// at once (Apple's does): the history before now and the agent's
    /// totals are read on a thread of the library's before the
    /// subscription, so the first update already counts the past part.
    open func startUpdates(from start: Date, withHandler handler: @escaping CMPedometerHandler) {
        let floors = Self.isFloorCountingAvailable()
        let baseline = PedometerBaseline(history: PedometerTotals())
        let startedAt = Date()
        let precheck: @Sendable () -> NSError? = {
            // what the history holds before now (empty when it cannot be read)
            if start < startedAt, case .success(let h) = FitnessHistoryAccess.open() {
                if let before = try? h.pedometer(fromUnixNs: FitnessTime.unixNs(start), toUnixNs: FitnessTime.unixNs(startedAt)) {
                    baseline.setHistory(before)
                }
                h.close()
            }
            // the agent's totals when the updates begin (its totals count from its start)
            if case (let s?, nil) = MotionService.shared.connectedSource(),
               case .sample(.pedometer(let p))? = try? s.client.request(.poll(.pedometer), timeoutMs: 2000) {
                baseline.setLive(p)
            }
            return nil
        }
        updates.start(queue: handlerQueue, handler: { d, e in handler(d, e.map { ($0 as NSError).asMotionActivityError }) },
                      precheck: precheck) { sample in
            guard case .pedometer(let p) = sample else { return nil }
            let t = baseline.totals(p)
            return CMPedometerData(start: start, end: FitnessTime.date(monotonicNs: p.timestampNs), totals: t, floors: floors,
                                   currentPace: p.currentPace, currentCadence: p.currentCadence)
        }
    }

    open func stopUpdates() { updates.stop() }

    open func startEventUpdates(handler: @escaping CMPedometerEventHandler) {
        eventChannel.start(queue: handlerQueue, handler: { ev, e in handler(ev, e.map { ($0 as NSError).asMotionActivityError }) }) { sample in
            guard case .pedometerEvent(let e) = sample else { return nil }
            return CMPedometerEvent(date: FitnessTime.date(monotonicNs: e.timestampNs), type: e.type == .pause ? .pause : .resume)
        }
    }

    open func stopEventUpdates() { eventChannel.stop() }
}

/// The history before a start plus what the agent counted since: totals
/// that never go down, across agent restarts.
///
/// The agent's totals count from its own start (`startNs`). `base` is the
/// history before the start plus what earlier agent runs added since it;
/// `live` is the current run's totals when counting from it began (the
/// poll at the start; nil for a run that began after the start, which
/// counts from zero). On a restart (another `startNs`, or totals that went
/// down) what the old run added is banked into `base`. When the poll at
/// the start has no sample (the agent has counted nothing yet, or no agent
/// answered: a run that begins later), the agent's totals count from zero.
final class PedometerBaseline: @unchecked Sendable {
    private let lock = NSLock()
    private var base: PedometerTotals
    private var live: PedometerSample?
    private var last: PedometerSample?
    init(history: PedometerTotals) { base = history }

    func setLive(_ p: PedometerSample) { lock.withLock { live = p; last = p } }
    /// The history before the start (read before the first live sample).
    func setHistory(_ t: PedometerTotals) { lock.withLock { base = t } }

    func totals(_ p: PedometerSample) -> PedometerTotals {
        lock.withLock {
            if let l = last, PedometerTotals.isRestart(p, after: l) {
                // the agent restarted: keep what its last run added, count the new one from zero
                base.add(PedometerTotals(added: l, since: live))
                live = nil
            }
            last = p
            var t = base
            t.add(PedometerTotals(added: p, since: live))
            return t
        }
    }
}
