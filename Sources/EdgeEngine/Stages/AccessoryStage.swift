import EdgeFusion
import EdgeProtocol

/// The accessory IMU's own attitude (6D: it has no magnetometer), for
/// Core Motion's headphone-motion API.
struct AccessoryStage: EngineStage {
    static let name = "accessory"
    static let produces = [StageProduct(.accessoryMotion, needs: .accessoryMotion),
                           StageProduct(.accessoryConnection, needs: .accessoryMotion)]
    var consumes: StageInputs { .accessoryMotion }
    var filter: AttitudeFilter

    init(settings: AttitudeFilter.Settings, sampleInterval: Double) {
        var s = settings
        s.magnetometerCalibration = nil
        filter = AttitudeFilter(settings: s, sampleInterval: sampleInterval)
    }

    func runs(_ p: Publisher) -> Bool { true }

    @inline(__always)
    mutating func accessoryMotion(_ m: inout MotionInput, publisher p: inout Publisher) {
        filter.update(gyro: m.gyro, accel: m.accel, mag: nil, dt: m.dt)
        if p.wants(.accessoryMotion) {
            p.publish(.accessoryMotion(deviceMotionSample(filter, at: m.t, frame: .xArbitraryZVertical, liveField: false)))
        }
    }
}
