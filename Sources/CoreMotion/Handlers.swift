// The handler types, exactly as the SDK declares them, so an app's protocol
// restating Apple's method signatures is satisfied by these classes.

public typealias CMAccelerometerHandler = (CMAccelerometerData?, (any Error)?) -> Void
public typealias CMGyroHandler = (CMGyroData?, (any Error)?) -> Void
public typealias CMMagnetometerHandler = (CMMagnetometerData?, (any Error)?) -> Void
public typealias CMDeviceMotionHandler = (CMDeviceMotion?, (any Error)?) -> Void
public typealias CMAltitudeHandler = (CMAltitudeData?, (any Error)?) -> Void
public typealias CMAbsoluteAltitudeHandler = (CMAbsoluteAltitudeData?, (any Error)?) -> Void
/// The headphone manager's handler type under its Objective-C name
/// (`CMHeadphoneMotionManager.DeviceMotionHandler` in Swift).
public typealias CMHeadphoneDeviceMotionHandler = (CMDeviceMotion?, (any Error)?) -> Void
