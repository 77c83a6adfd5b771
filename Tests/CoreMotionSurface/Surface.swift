// Compile-only: every type, property and method of Apple's Core Motion that
// this module provides, used with Apple's exact signatures (iOS 17 /
// watchOS 10 SDK). Nothing here runs; if the module's surface drifts from
// Apple's, this target stops compiling. Built in the Swift 6 mode
// (CoreMotionSurface) and the Swift 5 mode (CoreMotionSurfaceSwift5, the
// same file through a symbolic link).
import CoreMotion

/// An app's protocol restating Apple's `CMMotionManager` declarations: the
/// module's class conforms with an empty extension, so its methods take
/// exactly the SDK's handler types and labels.
protocol AppleMotionManager: AnyObject {
    var accelerometerUpdateInterval: TimeInterval { get set }
    var isAccelerometerAvailable: Bool { get }
    var isAccelerometerActive: Bool { get }
    var accelerometerData: CMAccelerometerData? { get }
    func startAccelerometerUpdates()
    func startAccelerometerUpdates(to queue: OperationQueue, withHandler handler: @escaping CMAccelerometerHandler)
    func stopAccelerometerUpdates()

    var gyroUpdateInterval: TimeInterval { get set }
    var isGyroAvailable: Bool { get }
    var isGyroActive: Bool { get }
    var gyroData: CMGyroData? { get }
    func startGyroUpdates()
    func startGyroUpdates(to queue: OperationQueue, withHandler handler: @escaping CMGyroHandler)
    func stopGyroUpdates()

    var magnetometerUpdateInterval: TimeInterval { get set }
    var isMagnetometerAvailable: Bool { get }
    var isMagnetometerActive: Bool { get }
    var magnetometerData: CMMagnetometerData? { get }
    func startMagnetometerUpdates()
    func startMagnetometerUpdates(to queue: OperationQueue, withHandler handler: @escaping CMMagnetometerHandler)
    func stopMagnetometerUpdates()

    var deviceMotionUpdateInterval: TimeInterval { get set }
    static func availableAttitudeReferenceFrames() -> CMAttitudeReferenceFrame
    var attitudeReferenceFrame: CMAttitudeReferenceFrame { get }
    var isDeviceMotionAvailable: Bool { get }
    var isDeviceMotionActive: Bool { get }
    var deviceMotion: CMDeviceMotion? { get }
    func startDeviceMotionUpdates()
    func startDeviceMotionUpdates(to queue: OperationQueue, withHandler handler: @escaping CMDeviceMotionHandler)
    func startDeviceMotionUpdates(using referenceFrame: CMAttitudeReferenceFrame)
    func startDeviceMotionUpdates(using referenceFrame: CMAttitudeReferenceFrame, to queue: OperationQueue,
                                  withHandler handler: @escaping CMDeviceMotionHandler)
    func stopDeviceMotionUpdates()
    var showsDeviceMovementDisplay: Bool { get set }
}

extension CMMotionManager: AppleMotionManager {}

protocol AppleAltimeter: AnyObject {
    static func isRelativeAltitudeAvailable() -> Bool
    static func isAbsoluteAltitudeAvailable() -> Bool
    static func authorizationStatus() -> CMAuthorizationStatus
    func startRelativeAltitudeUpdates(to queue: OperationQueue, withHandler handler: @escaping CMAltitudeHandler)
    func stopRelativeAltitudeUpdates()
    func startAbsoluteAltitudeUpdates(to queue: OperationQueue, withHandler handler: @escaping CMAbsoluteAltitudeHandler)
    func stopAbsoluteAltitudeUpdates()
}

extension CMAltimeter: AppleAltimeter {}

protocol AppleBatchedSensorManager: AnyObject {
    static var isAccelerometerSupported: Bool { get }
    static var isDeviceMotionSupported: Bool { get }
    static var authorizationStatus: CMAuthorizationStatus { get }
    var accelerometerDataFrequency: Int { get }
    var deviceMotionDataFrequency: Int { get }
    var isAccelerometerActive: Bool { get }
    var isDeviceMotionActive: Bool { get }
    var accelerometerBatch: [CMAccelerometerData]? { get }
    var deviceMotionBatch: [CMDeviceMotion]? { get }
    func startAccelerometerUpdates()
    func startAccelerometerUpdates(handler: @escaping ([CMAccelerometerData]?, (any Error)?) -> Void)
    func stopAccelerometerUpdates()
    func startDeviceMotionUpdates()
    func startDeviceMotionUpdates(handler: @escaping ([CMDeviceMotion]?, (any Error)?) -> Void)
    func stopDeviceMotionUpdates()
    func accelerometerUpdates() -> CMBatchedSensorManager.AccelerometerUpdates
    func deviceMotionUpdates() -> CMBatchedSensorManager.DeviceMotionUpdates
}

extension CMBatchedSensorManager: AppleBatchedSensorManager {}

protocol AppleHeadphoneMotionManager: AnyObject {
    static func authorizationStatus() -> CMAuthorizationStatus
    var delegate: (any CMHeadphoneMotionManagerDelegate)? { get set }
    var isDeviceMotionAvailable: Bool { get }
    var isDeviceMotionActive: Bool { get }
    var isConnectionStatusActive: Bool { get }
    var deviceMotion: CMDeviceMotion? { get }
    func startDeviceMotionUpdates()
    func startDeviceMotionUpdates(to queue: OperationQueue, withHandler handler: @escaping CMHeadphoneMotionManager.DeviceMotionHandler)
    func stopDeviceMotionUpdates()
    func startConnectionStatusUpdates()
    func stopConnectionStatusUpdates()
}

extension CMHeadphoneMotionManager: AppleHeadphoneMotionManager {}

/// A delegate that implements one of the two (optional) methods.
final class HalfDelegate: NSObject, CMHeadphoneMotionManagerDelegate {
    func headphoneMotionManagerDidConnect(_ manager: CMHeadphoneMotionManager) {}
}

/// Apps add their own conveniences to Apple's types; none of these names
/// may clash with a member of the module.
extension CMMotionManager { nonisolated(unsafe) static let shared = CMMotionManager() }
extension CMQuaternion {
    var inverse: CMQuaternion { CMQuaternion(x: -x, y: -y, z: -z, w: w) }
}
extension CMAcceleration { var magnitude: Double { (x * x + y * y + z * z).squareRoot() } }
extension CMAttitude { var degrees: (Double, Double, Double) { (roll * 180 / .pi, pitch * 180 / .pi, yaw * 180 / .pi) } }
extension CMDeviceMotion { var isFlat: Bool { abs(gravity.z) > 0.9 } }

/// An app's mock, as iOS test code writes them: the classes are open.
/// Apple's four water-submersion delegate methods are optional: one is enough.
final class DepthOnlyDelegate: NSObject, CMWaterSubmersionManagerDelegate {
    func manager(_ manager: CMWaterSubmersionManager, didUpdate measurement: CMWaterSubmersionMeasurement) {
        _ = (measurement.depth, measurement.surfacePressure, measurement.submersionState)
    }
}

/// CMLogItem and CMAttitude are NSCopying and NSSecureCoding, as Apple's.
func archiveAndCopy(_ motion: CMDeviceMotion, _ acc: CMAccelerometerData) throws {
    let data = try NSKeyedArchiver.archivedData(withRootObject: motion, requiringSecureCoding: true)
    _ = try NSKeyedUnarchiver.unarchivedObject(ofClass: CMDeviceMotion.self, from: data)
    _ = try NSKeyedUnarchiver.unarchivedObject(ofClass: CMAttitude.self,
                                               from: try NSKeyedArchiver.archivedData(withRootObject: motion.attitude, requiringSecureCoding: true))
    _ = CMLogItem.supportsSecureCoding && CMAttitude.supportsSecureCoding
    let item: any NSSecureCoding & NSCopying = acc
    _ = item.copy(with: nil)
    let water = CMWaterSubmersionManager()
    let depthOnly = DepthOnlyDelegate()
    water.delegate = depthOnly
    withExtendedLifetime(depthOnly) {}
}

/// The pedometer's and the submersion's data classes are NSCopying and
/// NSSecureCoding, as Apple's.
func codedDataClasses(_ p: CMPedometerData, _ e: CMPedometerEvent, _ w: CMWaterSubmersionEvent,
                      _ m: CMWaterSubmersionMeasurement, _ t: CMWaterTemperature) throws {
    let items: [any NSSecureCoding & NSCopying] = [p, e, w, m, t]
    for item in items { _ = try NSKeyedArchiver.archivedData(withRootObject: item, requiringSecureCoding: true) }
    _ = CMPedometerData.supportsSecureCoding && CMPedometerEvent.supportsSecureCoding
        && CMWaterSubmersionEvent.supportsSecureCoding && CMWaterSubmersionMeasurement.supportsSecureCoding
        && CMWaterTemperature.supportsSecureCoding
    _ = try NSKeyedUnarchiver.unarchivedObject(ofClass: CMPedometerData.self,
                                               from: try NSKeyedArchiver.archivedData(withRootObject: p, requiringSecureCoding: true))
}

final class MockAccelerometerData: CMAccelerometerData {
    override var acceleration: CMAcceleration { CMAcceleration(x: 0, y: 0, z: -1) }
    override var timestamp: TimeInterval { 1 }
}

final class MockMotionManager: CMMotionManager {
    override var isDeviceMotionAvailable: Bool { true }
    override func startDeviceMotionUpdates(to queue: OperationQueue, withHandler handler: @escaping CMDeviceMotionHandler) {}
}

/// Every value type, enum, constant and data property.
func useEverything(_ motion: CMDeviceMotion, _ acc: CMAccelerometerData, _ gyro: CMGyroData,
                   _ mag: CMMagnetometerData, _ alt: CMAltitudeData, _ abs: CMAbsoluteAltitudeData) {
    var a = CMAcceleration(); a.x = 1; a.y = 2; a.z = 3
    _ = CMAcceleration(x: 0, y: 0, z: -1)
    var r = CMRotationRate(); r.x = r.y + r.z
    _ = CMRotationRate(x: 0, y: 0, z: 0)
    var f = CMMagneticField(); f.z = -40
    _ = CMMagneticField(x: 1, y: 2, z: 3)
    var q = CMQuaternion(); q.w = 1
    _ = CMQuaternion(x: 0, y: 0, z: 0, w: 1)
    var m = CMRotationMatrix(); m.m11 = 1; m.m22 = 1; m.m33 = 1
    _ = CMRotationMatrix(m11: 1, m12: 0, m13: 0, m21: 0, m22: 1, m23: 0, m31: 0, m32: 0, m33: 1)
    var c = CMCalibratedMagneticField(); c.field = f; c.accuracy = .high
    _ = CMCalibratedMagneticField(field: f, accuracy: .medium)
    let accuracies: [CMMagneticFieldCalibrationAccuracy] = [.uncalibrated, .low, .medium, .high]
    let _: Int32 = accuracies[0].rawValue
    let statuses: [CMAuthorizationStatus] = [.notDetermined, .restricted, .denied, .authorized]
    let _: Int = statuses[3].rawValue
    var frames: CMAttitudeReferenceFrame = [.xArbitraryZVertical, .xArbitraryCorrectedZVertical]
    frames.insert(.xMagneticNorthZVertical)
    frames.formUnion(.xTrueNorthZVertical)
    let _: UInt = frames.rawValue
    let locations: [CMDeviceMotion.SensorLocation] = [.default, .headphoneLeft, .headphoneRight]
    let _: Int = locations[0].rawValue

    let _: TimeInterval = acc.timestamp
    let _: CMAcceleration = acc.acceleration
    let _: CMRotationRate = gyro.rotationRate
    let _: CMMagneticField = mag.magneticField
    let _: NSNumber = alt.relativeAltitude
    let _: NSNumber = alt.pressure
    let _: Double = abs.altitude + abs.accuracy + abs.precision
    let attitude: CMAttitude = motion.attitude
    let _: Double = attitude.roll + attitude.pitch + attitude.yaw
    let _: CMRotationMatrix = attitude.rotationMatrix
    let _: CMQuaternion = attitude.quaternion
    attitude.multiply(byInverseOf: attitude.copy() as! CMAttitude)
    let _: CMRotationRate = motion.rotationRate
    let _: CMAcceleration = motion.gravity
    let _: CMAcceleration = motion.userAcceleration
    let _: CMCalibratedMagneticField = motion.magneticField
    let _: Double = motion.heading
    let _: CMDeviceMotion.SensorLocation = motion.sensorLocation
    let _: CMLogItem = motion
    let _: NSObject = acc

    // Errors as the SDK imports them, and as guides write them.
    let _: String = CMErrorDomain
    let codes: [CMError] = [CMErrorNULL, CMErrorDeviceRequiresMovement, CMErrorTrueNorthNotAvailable, CMErrorUnknown,
                            CMErrorMotionActivityNotAvailable, CMErrorMotionActivityNotAuthorized,
                            CMErrorMotionActivityNotEntitled, CMErrorInvalidParameter, CMErrorInvalidAction,
                            CMErrorNotAvailable, CMErrorNotEntitled, CMErrorNotAuthorized, CMErrorNilData, CMErrorSize]
    let _: UInt32 = codes[0].rawValue
    _ = CMError(110) == CMError(rawValue: 110)
    _ = CMError(rawValue: 110) == CMErrorNotEntitled
    _ = (a, r, c, q, m)
}

/// The managers as apps start them.
func startEverything(_ queue: OperationQueue) async throws {
    let manager = CMMotionManager()
    manager.startAccelerometerUpdates(to: .main) { data, error in _ = (data?.acceleration.z, error) }
    manager.startDeviceMotionUpdates(using: .xMagneticNorthZVertical, to: queue) { motion, error in
        guard let motion else { _ = error; return }
        _ = motion.attitude.pitch
    }
    manager.showsDeviceMovementDisplay = true

    let altimeter = CMAltimeter()
    altimeter.startRelativeAltitudeUpdates(to: queue) { data, _ in _ = data?.relativeAltitude.doubleValue }
    altimeter.startAbsoluteAltitudeUpdates(to: queue) { data, _ in _ = data?.altitude }

    let batched = CMBatchedSensorManager()
    for try await batch in batched.accelerometerUpdates() { _ = batch.first?.acceleration }
    for try await batch in batched.deviceMotionUpdates() { _ = batch.last?.userAcceleration }

    let headphones = CMHeadphoneMotionManager()
    let delegate = HalfDelegate()
    headphones.delegate = delegate
    headphones.startConnectionStatusUpdates()
    headphones.startDeviceMotionUpdates(to: queue) { motion, error in _ = (motion?.sensorLocation, error) }
    let _: CMHeadphoneDeviceMotionHandler = { _, _ in }
}
