// Compile-only, as Surface.swift: CMSensorRecorder and its data, restated
// from Apple's declarations (developer.apple.com/documentation/coremotion/
// cmsensorrecorder, cmsensordatalist, cmrecordedaccelerometerdata) as an
// app's protocols, and the loop Apple's CMSensorDataList documentation
// shows. Nothing here runs.
import CoreMotion

protocol AppleSensorRecorder: AnyObject {
    static func isAccelerometerRecordingAvailable() -> Bool
    static func authorizationStatus() -> CMAuthorizationStatus
    func recordAccelerometer(forDuration duration: TimeInterval)
    func accelerometerData(from fromDate: Date, to toDate: Date) -> CMSensorDataList?
}
extension CMSensorRecorder: AppleSensorRecorder {}

protocol AppleRecordedAccelerometerData: AnyObject {
    var identifier: UInt64 { get }
    var startDate: Date { get }
    var acceleration: CMAcceleration { get }
    var timestamp: TimeInterval { get }
}
extension CMRecordedAccelerometerData: AppleRecordedAccelerometerData {}

func processSamples(from start: Date, to end: Date) -> Double {
    let recorder = CMSensorRecorder()
    var sum = 0.0
    if let list = recorder.accelerometerData(from: start, to: end) {
        for data in list { sum += data.acceleration.z }
    }
    let _: CMAccelerometerData = CMRecordedAccelerometerData()
    return sum
}
