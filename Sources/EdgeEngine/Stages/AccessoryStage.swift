import EdgeFusion
import EdgeProtocol
import EdgeValues

/// The accessory IMU's own attitude (6D: it has no magnetometer), for
/// Core Motion's headphone-motion API.
struct AccessoryStage: EngineStage {
    static let name = "accessory"
    static let produces = [StageProduct(.accessoryMotion, needs: .accessoryMotion),
                           StageProduct(.accessoryConnection, needs: .accessoryMotion)]
    var consumes: StageInputs { .accessoryMotion }
    var filter: AttitudeFilter
    /// The accessory's first moments (``StartupRest``): nothing is published
    /// until they are over; at rest they give the filter its gyroscope bias
    /// and the accelerometer's offset along gravity, so the first sample
    /// published rests at about 0 (Apple's headphone motion does).
    var startup = StartupRest()
    /// Taken from every specific force once the start was at rest, m/s², sensor frame.
    var accelOffset = Vector3.zero

    init(settings: AttitudeFilter.Settings, sampleInterval: Double) {
        var s = settings
        s.magnetometerCalibration = nil
        filter = AttitudeFilter(settings: s, sampleInterval: sampleInterval)
    }

    func runs(_ p: Publisher) -> Bool { true }

    @inline(__always)
    mutating func accessoryMotion(_ m: inout MotionInput, publisher p: inout Publisher) {
        if startup.outcome == .collecting {
            switch startup.update(gyro: m.gyro, accel: m.accel, dt: m.dt) {
            case .collecting:
                return
            case .atRest(let bias, let offset):
                // The filter starts now, with the bias known (it would have
                // integrated the bias as a turn over the start).
                filter.state.bias = bias
                accelOffset = offset
            case .moving:
                break
            }
        }
        filter.update(gyro: m.gyro, accel: m.accel - accelOffset, mag: nil, dt: m.dt)
        if p.wants(.accessoryMotion) {
            p.publish(.accessoryMotion(deviceMotionSample(filter, at: m.t, frame: .xArbitraryZVertical, liveField: false)))
        }
    }

    /// The accessory went away: its next start is learned again.
    mutating func inputLost(_ input: StageInputs, at t: UInt64, publisher p: inout Publisher) {
        guard input.contains(.accessoryMotion) else { return }
        startup.restart()
        accelOffset = .zero
    }
}
