// Compile-only, as Surface.swift: the fitness half of Apple's Core Motion
// (CMPedometer, CMMotionActivityManager and their data), restated from the
// iOS 17 SDK's declarations as an app's protocols; the module's classes
// conform with empty extensions. Nothing here runs.
import CoreMotion

protocol ApplePedometer: AnyObject {
    static func isStepCountingAvailable() -> Bool
    static func isDistanceAvailable() -> Bool
    static func isFloorCountingAvailable() -> Bool
    static func isPaceAvailable() -> Bool
    static func isCadenceAvailable() -> Bool
    static func isPedometerEventTrackingAvailable() -> Bool
    static func authorizationStatus() -> CMAuthorizationStatus
    func queryPedometerData(from start: Date, to end: Date, withHandler handler: @escaping CMPedometerHandler)
    func startUpdates(from start: Date, withHandler handler: @escaping CMPedometerHandler)
    func stopUpdates()
    func startEventUpdates(handler: @escaping CMPedometerEventHandler)
    func stopEventUpdates()
}
extension CMPedometer: ApplePedometer {}

protocol ApplePedometerData: AnyObject {
    var startDate: Date { get }
    var endDate: Date { get }
    var numberOfSteps: NSNumber { get }
    var distance: NSNumber? { get }
    var floorsAscended: NSNumber? { get }
    var floorsDescended: NSNumber? { get }
    var currentPace: NSNumber? { get }
    var currentCadence: NSNumber? { get }
    var averageActivePace: NSNumber? { get }
}
extension CMPedometerData: ApplePedometerData {}

protocol ApplePedometerEvent: AnyObject {
    var date: Date { get }
    var type: CMPedometerEventType { get }
}
extension CMPedometerEvent: ApplePedometerEvent {}

protocol AppleMotionActivityManager: AnyObject {
    static func isActivityAvailable() -> Bool
    static func authorizationStatus() -> CMAuthorizationStatus
    func queryActivityStarting(from start: Date, to end: Date, to queue: OperationQueue,
                               withHandler handler: @escaping CMMotionActivityQueryHandler)
    func startActivityUpdates(to queue: OperationQueue, withHandler handler: @escaping CMMotionActivityHandler)
    func stopActivityUpdates()
}
extension CMMotionActivityManager: AppleMotionActivityManager {}

protocol AppleMotionActivity: AnyObject {
    var confidence: CMMotionActivityConfidence { get }
    var startDate: Date { get }
    var unknown: Bool { get }
    var stationary: Bool { get }
    var walking: Bool { get }
    var running: Bool { get }
    var automotive: Bool { get }
    var cycling: Bool { get }
}
extension CMMotionActivity: AppleMotionActivity {}

/// The SDK's handler types, spelled out.
func fitnessHandlerTypes() {
    let _: CMPedometerHandler = { (data: CMPedometerData?, error: (any Error)?) in _ = (data, error) }
    let _: CMPedometerEventHandler = { (event: CMPedometerEvent?, error: (any Error)?) in _ = (event, error) }
    let _: CMMotionActivityHandler = { (activity: CMMotionActivity?) in _ = activity }
    let _: CMMotionActivityQueryHandler = { (activities: [CMMotionActivity]?, error: (any Error)?) in _ = (activities, error) }
    // Apple's raw values (the SDK's headers)
    let _: [CMPedometerEventType] = [CMPedometerEventType(rawValue: 0)!, .pause, .resume]
    let _: [CMMotionActivityConfidence] = [CMMotionActivityConfidence(rawValue: 2)!, .low, .medium, .high]
    let _: CMLogItem = CMMotionActivity?.none ?? CMLogItem()
}

/// An app's conveniences on Apple's fitness types: none may clash with a member.
extension CMPedometer { nonisolated(unsafe) static let shared = CMPedometer() }
extension CMPedometerData { var steps: Int { numberOfSteps.intValue } }
extension CMMotionActivity { var isMoving: Bool { walking || running || cycling || automotive } }
extension CMMotionActivityManager { nonisolated(unsafe) static let shared = CMMotionActivityManager() }
