import EdgeProtocol

/// Altitude from the barometer: relative altitude and pressure, and
/// absolute altitude above sea level.
///
/// Updates come once a second (Apple does not document its rate; an
/// iPhone's is about that): relative altitude starts at 0 m with the first
/// update after a start, pressure is in kPa.
open class CMAltimeter: NSObject {
    /// Seconds between updates (chosen: Apple's altimeter has no interval property).
    static let updateInterval: TimeInterval = 1.0

    let relative = UpdateChannel<CMAltitudeData>(stream: .altitude, interval: updateInterval)
    let absolute = UpdateChannel<CMAbsoluteAltitudeData>(stream: .absoluteAltitude, interval: updateInterval)

    public override init() { super.init() }

    deinit { relative.stop(); absolute.stop() }

    /// Whether the board has a barometer (a device feeds `altitude`).
    open class func isRelativeAltitudeAvailable() -> Bool { MotionService.shared.isAvailable(.altitude) }

    /// Whether the board has a barometer for absolute altitude.
    open class func isAbsoluteAltitudeAvailable() -> Bool { MotionService.shared.isAvailable(.absoluteAltitude) }

    /// `.authorized` when this user holds the agent's `altitude`
    /// entitlement, `.denied` when not, `.notDetermined` while no agent answers.
    open class func authorizationStatus() -> CMAuthorizationStatus { MotionService.shared.authorization(.altitude) }

    open func startRelativeAltitudeUpdates(to queue: OperationQueue, withHandler handler: @escaping CMAltitudeHandler) {
        let zero = AltitudeZero()
        relative.start(queue: queue, handler: handler) { s in
            guard case .altitude(let a) = s else { return nil }
            return Wire.altitudeData(a, zero: zero.value(a.relativeAltitude))
        }
    }

    open func stopRelativeAltitudeUpdates() { relative.stop() }

    open func startAbsoluteAltitudeUpdates(to queue: OperationQueue, withHandler handler: @escaping CMAbsoluteAltitudeHandler) {
        absolute.start(queue: queue, handler: handler) { s in
            guard case .absoluteAltitude(let a) = s else { return nil }
            return Wire.absoluteAltitudeData(a)
        }
    }

    open func stopAbsoluteAltitudeUpdates() { absolute.stop() }
}

/// The wire's relative altitude at the first sample of one start.
final class AltitudeZero: @unchecked Sendable {
    private let lock = NSLock()
    private var zero: Double?
    func value(_ first: Double) -> Double {
        lock.withLock {
            if zero == nil && first.isFinite { zero = first }
            return zero ?? first
        }
    }
}
