import EdgeProtocol

/// Whether the device is in water (Apple's `CMWaterSubmersionEvent`).
///
/// The three submersion classes are `NSCopying` and `NSSecureCoding`, as
/// Apple's: `copy()` is a new object with the same values, and
/// `NSKeyedArchiver` / `NSKeyedUnarchiver` round trips give the same values.
open class CMWaterSubmersionEvent: NSObject, NSCopying, NSSecureCoding, @unchecked Sendable {
    /// Apple's `CMWaterSubmersionEvent.State`.
    @objc public enum State: Int, @unchecked Sendable {
        case unknown = 0
        case notSubmerged = 1
        case submerged = 2
    }
    let _date: Date
    let _state: State
    open var date: Date { _date }
    open var state: State { _state }
    public override init() { _date = Date(); _state = .unknown; super.init() }
    init(date: Date, state: State) { _date = date; _state = state; super.init() }

    public class var supportsSecureCoding: Bool { true }
    open func encode(with coder: NSCoder) {
        coder.encode(date: _date, forKey: "date")
        coder.encode(_state.rawValue, forKey: "state")
    }
    public required init?(coder: NSCoder) {
        guard let state = State(rawValue: coder.decodeInteger(forKey: "state")) else { return nil }
        _date = coder.decodeDate(forKey: "date")
        _state = state
        super.init()
    }
    open func copy(with zone: NSZone? = nil) -> Any { codedCopy(self) }
    open override var description: String { "CMWaterSubmersionEvent state \(state.rawValue) @ \(date)" }
}

/// Depth and pressure under water (Apple's `CMWaterSubmersionMeasurement`).
open class CMWaterSubmersionMeasurement: NSObject, NSCopying, NSSecureCoding, @unchecked Sendable {
    /// Apple's `CMWaterSubmersionMeasurement.DepthState` (raw values as in the SDK).
    @objc public enum DepthState: Int, @unchecked Sendable {
        case unknown = 0
        case notSubmerged = 100
        case submergedShallow = 200
        case submergedDeep = 300
        case approachingMaxDepth = 400
        case pastMaxDepth = 500
        case sensorDepthError = 600
    }
    let _date: Date
    let _depth: Measurement<UnitLength>?
    let _pressure: Measurement<UnitPressure>?
    let _surfacePressure: Measurement<UnitPressure>
    let _state: DepthState
    open var date: Date { _date }
    /// Metres below the surface, positive down; nil past the maximum depth
    /// or on a sensor error (the state says which).
    open var depth: Measurement<UnitLength>? { _depth }
    /// Absolute pressure, kPa; nil when the depth is withheld.
    open var pressure: Measurement<UnitPressure>? { _pressure }
    /// The surface (air) pressure the depth is measured from, kPa.
    open var surfacePressure: Measurement<UnitPressure> { _surfacePressure }
    open var submersionState: DepthState { _state }
    public override init() {
        _date = Date(); _depth = nil; _pressure = nil
        _surfacePressure = Measurement(value: 101.325, unit: .kilopascals); _state = .unknown
        super.init()
    }
    init(date: Date, depth: Measurement<UnitLength>?, pressure: Measurement<UnitPressure>?,
         surfacePressure: Measurement<UnitPressure>, state: DepthState) {
        _date = date; _depth = depth; _pressure = pressure; _surfacePressure = surfacePressure; _state = state
        super.init()
    }

    public class var supportsSecureCoding: Bool { true }
    /// Depth in m, pressures in kPa; an absent depth or pressure has no key.
    open func encode(with coder: NSCoder) {
        coder.encode(date: _date, forKey: "date")
        if let d = _depth { coder.encode(d.converted(to: .meters).value, forKey: "depthMeters") }
        if let p = _pressure { coder.encode(p.converted(to: .kilopascals).value, forKey: "pressureKPa") }
        coder.encode(_surfacePressure.converted(to: .kilopascals).value, forKey: "surfacePressureKPa")
        coder.encode(_state.rawValue, forKey: "submersionState")
    }
    public required init?(coder: NSCoder) {
        guard let state = DepthState(rawValue: coder.decodeInteger(forKey: "submersionState")) else { return nil }
        _date = coder.decodeDate(forKey: "date")
        _depth = coder.containsValue(forKey: "depthMeters")
            ? Measurement(value: coder.decodeDouble(forKey: "depthMeters"), unit: .meters) : nil
        _pressure = coder.containsValue(forKey: "pressureKPa")
            ? Measurement(value: coder.decodeDouble(forKey: "pressureKPa"), unit: .kilopascals) : nil
        _surfacePressure = Measurement(value: coder.decodeDouble(forKey: "surfacePressureKPa"), unit: .kilopascals)
        _state = state
        super.init()
    }
    open func copy(with zone: NSZone? = nil) -> Any { codedCopy(self) }
}

/// Water temperature with its uncertainty (Apple's `CMWaterTemperature`).
open class CMWaterTemperature: NSObject, NSCopying, NSSecureCoding, @unchecked Sendable {
    let _date: Date
    let _temperature: Measurement<UnitTemperature>
    let _uncertainty: Measurement<UnitTemperature>
    open var date: Date { _date }
    /// °C.
    open var temperature: Measurement<UnitTemperature> { _temperature }
    /// ± °C.
    open var temperatureUncertainty: Measurement<UnitTemperature> { _uncertainty }
    public override init() {
        _date = Date(); _temperature = Measurement(value: 0, unit: .celsius); _uncertainty = Measurement(value: 0, unit: .celsius)
        super.init()
    }
    init(date: Date, temperature: Double, uncertainty: Double) {
        _date = date
        _temperature = Measurement(value: temperature, unit: .celsius)
        _uncertainty = Measurement(value: uncertainty, unit: .celsius)
        super.init()
    }

    public class var supportsSecureCoding: Bool { true }
    /// °C.
    open func encode(with coder: NSCoder) {
        coder.encode(date: _date, forKey: "date")
        coder.encode(_temperature.converted(to: .celsius).value, forKey: "temperatureCelsius")
        coder.encode(_uncertainty.converted(to: .celsius).value, forKey: "temperatureUncertaintyCelsius")
    }
    public required init?(coder: NSCoder) {
        _date = coder.decodeDate(forKey: "date")
        _temperature = Measurement(value: coder.decodeDouble(forKey: "temperatureCelsius"), unit: .celsius)
        _uncertainty = Measurement(value: coder.decodeDouble(forKey: "temperatureUncertaintyCelsius"), unit: .celsius)
        super.init()
    }
    open func copy(with zone: NSZone? = nil) -> Any { codedCopy(self) }
}

/// Apple's `CMWaterSubmersionManagerDelegate`. All four methods are
/// `optional` at Apple: here each has an empty default, so a delegate
/// implements only the ones it wants.
public protocol CMWaterSubmersionManagerDelegate: NSObjectProtocol {
    func manager(_ manager: CMWaterSubmersionManager, didUpdate event: CMWaterSubmersionEvent)
    func manager(_ manager: CMWaterSubmersionManager, didUpdate measurement: CMWaterSubmersionMeasurement)
    func manager(_ manager: CMWaterSubmersionManager, didUpdate measurement: CMWaterTemperature)
    func manager(_ manager: CMWaterSubmersionManager, errorOccurred error: any Error)
}

extension CMWaterSubmersionManagerDelegate {
    public func manager(_ manager: CMWaterSubmersionManager, didUpdate event: CMWaterSubmersionEvent) {}
    public func manager(_ manager: CMWaterSubmersionManager, didUpdate measurement: CMWaterSubmersionMeasurement) {}
    public func manager(_ manager: CMWaterSubmersionManager, didUpdate measurement: CMWaterTemperature) {}
    public func manager(_ manager: CMWaterSubmersionManager, errorOccurred error: any Error) {}
}

/// Water submersion, as on the Watch: setting ``delegate`` starts the
/// updates (clearing it stops them). The agent's `submersion` stream needs
/// the `submersion.shallow` (6 m) or `submersion.full` (40 m) entitlement;
/// without one the delegate gets one `CMErrorNotEntitled` error and no data.
///
/// Delivery (Apple: "on an anonymous background queue"): the delegate is
/// called on a private serial queue, in order. An event when the state
/// changes (the first sample included); a measurement and a temperature
/// with every sample while submerged (about 3 Hz with an MS5837) and with
/// each event; at the surface, as Apple's, a measurement with the surface
/// pressure and the state only (no depth, no water pressure), at most once
/// a second, and no temperature.
open class CMWaterSubmersionManager: NSObject, @unchecked Sendable {
    let queue = OperationQueue.coreMotionInternal("CMWaterSubmersionManager")
    private let lock = NSLock()
    private var source: StreamSource?
    private var lastState: SubmersionState?
    /// Capture time of the last measurement delivered at the surface, ns.
    private var lastSurfaceNs: UInt64?
    private weak var _delegate: (any CMWaterSubmersionManagerDelegate)?

    public override init() { super.init() }
    deinit { source?.stop() }

    /// True when the board has a pressure sensor feeding the submersion
    /// stream (an MS5837, or a BMP280 to its 110 kPa).
    open class var waterSubmersionAvailable: Bool { MotionService.shared.isAvailable(.submersion) }

    /// `.authorized` with either submersion entitlement, `.denied` without,
    /// `.notDetermined` while no agent answers.
    open class var authorizationStatus: CMAuthorizationStatus { MotionService.shared.authorization(.submersion) }

    /// 40 m with `submersion.full`, 6 m with `submersion.shallow`, nil with
    /// neither (or while no agent has answered). Answered from what the
    /// agent last said (as ``authorizationStatus``): never waits for it.
    open var maximumDepth: Measurement<UnitLength>? {
        MotionService.shared.maximumDepthMeters.map { Measurement(value: $0, unit: .meters) }
    }

    open weak var delegate: (any CMWaterSubmersionManagerDelegate)? {
        get { lock.withLock { _delegate } }
        set {
            let old: StreamSource? = lock.withLock {
                _delegate = newValue
                lastState = nil
                lastSurfaceNs = nil
                let s = source
                source = nil
                return s
            }
            old?.stop()
            guard newValue != nil else { return }
            let s = StreamSource(stream: .submersion, interval: 0, onSample: { [weak self] sample in
                guard let self, case .submersion(let m) = sample else { return }
                self.received(m)
            }, onError: { [weak self] e in
                guard let self else { return }
                self.queue.addOperation { [weak self] in
                    guard let self, let d = self.delegate else { return }
                    d.manager(self, errorOccurred: e)
                }
            })
            lock.withLock { source = s }
            s.start()
        }
    }

    static func date(_ timestampNs: UInt64) -> Date {
        Date(timeIntervalSinceNow: Double(timestampNs) / 1e9 - ProcessInfo.processInfo.systemUptime)
    }

    /// The surface measurements' spacing, ns (Apple: "at a slower rate" than submerged).
    static let surfaceIntervalNs: UInt64 = 1_000_000_000

    func received(_ m: SubmersionSample) {
        let submerged = m.state == .submerged
        let (changed, surfaceDue): (Bool, Bool) = lock.withLock {
            defer { lastState = m.state }
            var due = false
            if !submerged {
                due = lastSurfaceNs.map { m.timestampNs < $0 || m.timestampNs - $0 >= Self.surfaceIntervalNs } ?? true
                if due { lastSurfaceNs = m.timestampNs }
            }
            return (lastState != m.state, due)
        }
        guard changed || submerged || surfaceDue else { return }
        let date = Self.date(m.timestampNs)
        let event = CMWaterSubmersionEvent(date: date, state: CMWaterSubmersionEvent.State(rawValue: Int(m.state.rawValue)) ?? .unknown)
        let state: CMWaterSubmersionMeasurement.DepthState
        switch m.depthState {
        case .unknown: state = .unknown
        case .notSubmerged: state = .notSubmerged
        case .submergedShallow: state = .submergedShallow
        case .submergedDeep: state = .submergedDeep
        case .approachingMaxDepth: state = .approachingMaxDepth
        case .pastMaxDepth: state = .pastMaxDepth
        case .sensorDepthError: state = .sensorDepthError
        }
        // At the surface, Apple's measurements carry "only surface pressure
        // and submersion state data".
        let measurement = CMWaterSubmersionMeasurement(
            date: date, depth: submerged && m.depth.isFinite ? Measurement(value: m.depth, unit: .meters) : nil,
            pressure: submerged && m.pressure.isFinite ? Measurement(value: m.pressure / 1000, unit: .kilopascals) : nil,
            surfacePressure: Measurement(value: m.surfacePressure / 1000, unit: .kilopascals), state: state)
        // no temperature update without a reading (the sensor's outage
        // sample), nor at the surface (Apple: water temperature after submersion)
        let temperature = submerged && m.temperature.isFinite
            ? CMWaterTemperature(date: date, temperature: m.temperature, uncertainty: m.temperatureUncertainty) : nil
        queue.addOperation { [weak self] in
            guard let self, let d = self.delegate else { return }
            if changed { d.manager(self, didUpdate: event) }
            d.manager(self, didUpdate: measurement)
            if let temperature { d.manager(self, didUpdate: temperature) }
        }
    }
}
