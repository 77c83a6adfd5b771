import EdgeFusion
import EdgeProtocol

/// The accessory IMU's own attitude (6D: it has no magnetometer), for
/// Core Motion's headphone-motion API.
struct AccessoryStage {
    var filter: AttitudeFilter

    init(settings: AttitudeFilter.Settings, sampleInterval: Double) {
        var s = settings
        s.magnetometerCalibration = nil
        filter = AttitudeFilter(settings: s, sampleInterval: sampleInterval)
    }

    @inline(__always)
    mutating func motion(accel: Vector3, gyro: Vector3, dt: Double, at t: UInt64, publisher p: inout Publisher) {
        filter.update(gyro: gyro, accel: accel, mag: nil, dt: dt)
        if p.wants(.accessoryMotion) {
            p.publish(.accessoryMotion(deviceMotionSample(filter, at: t, frame: .xArbitraryZVertical, liveField: false)))
        }
    }
}
