import Testing
import Foundation
import EdgeProtocol
import EdgeSim
import EdgeValues
@testable import EdgeEngine

// Issue 21, item 9: "The accessory's device motion at rest starts with
// userAcceleration z −0.046 g and a rotation rate of 0.02 rad/s decaying
// over 3 s, which a head-nod detector takes for a nod; Apple's start at
// about 0." (CMHeadphoneMotionManager's device motion, like CMDeviceMotion,
// reports rotationRate with the bias removed and userAcceleration without
// gravity: developer.apple.com/documentation/coremotion/cmdevicemotion.)
// The simulated accessory is an uncalibrated MPU-6050 with the realistic
// imperfections (a gyroscope bias of about 0.02 rad/s, an accelerometer
// offset): before this, VQF learnt the bias only after 1.5 s of rest.

func accessoryMotion(_ rig: Rig) -> [DeviceMotionSample] {
    rig.sink.samples.compactMap { if case .accessoryMotion(let m) = $0 { return m }; return nil }
}

@Suite struct AccessoryStartTests {
    @Test func atRestTheFirstSamplesRestAtAboutZero() throws {
        let rig = try Rig(accessory: true)
        rig.sink.setDemand([.accessoryMotion: 0])
        let startedNs = rig.clock.nowNanoseconds
        _ = rig.hub.start()
        rig.run(seconds: 3)
        let m = accessoryMotion(rig)
        #expect(m.count > 250, "\(m.count) samples in 3 s (100 Hz, less the start)")
        let g = 9.80665
        // From the very first sample: within the chip's noise, not its bias.
        let worstRate = m.map(\.rotationRate.norm).max() ?? .infinity
        let worstUser = m.map { $0.userAcceleration.norm / g }.max() ?? .infinity
        #expect(worstRate < 0.006, "rotation rate up to \(worstRate) rad/s")
        #expect(worstUser < 0.02, "user acceleration up to \(worstUser) g")
        // The start is a quarter of a second: the first sample comes then
        // (after the chip's own start-up, which the hub waits out).
        let first = try #require(m.first).timestampNs
        #expect(first > startedNs && first - startedNs < 600_000_000, "first sample \(Double(first - startedNs) / 1e9) s after the start")
    }

    @Test func turningAtTheStartLearnsNothingAndReportsTheTurn() throws {
        // Turning at 0.8 rad/s about z from the start: not at rest, so no
        // bias is taken from it (that would cancel the turn).
        var turning = PhysicalTruth.restingLevel
        turning.angularRate = Vector3(0, 0, 0.8)
        let rig = try Rig(truth: ConstantTruth(turning), accessory: true)
        rig.sink.setDemand([.accessoryMotion: 0])
        _ = rig.hub.start()
        rig.run(seconds: 1)
        let m = accessoryMotion(rig)
        #expect(!m.isEmpty)
        #expect(m.allSatisfy { abs($0.rotationRate.z - 0.8) < 0.05 }, "\(m.first.map(\.rotationRate) ?? .zero)")
        let stage = try #require(rig.hub.stage(AccessoryStage.self))
        #expect(stage.startup.outcome == .moving && stage.accelOffset == .zero)
    }

    @Test func theStartIsLearntAgainAfterTheAccessoryWentAway() throws {
        var s = AccessoryStage(settings: .init(), sampleInterval: 0.005)
        var p = Publisher(sink: nil)
        var m = MotionInput(accel: Vector3(0, 0, 9.9), gyro: Vector3(0.02, -0.01, 0.005), dt: 0.005, t: 0, last: true)
        for i in 0..<60 { m.t = UInt64(i) * 5_000_000; s.accessoryMotion(&m, publisher: &p) }
        guard case .atRest(let bias, let offset) = s.startup.outcome else { Issue.record("\(s.startup.outcome)"); return }
        #expect((bias - Vector3(0.02, -0.01, 0.005)).norm < 1e-12)
        #expect(abs(offset.z - (9.9 - 9.80665)) < 1e-9)
        #expect((s.filter.gyroBias - bias).norm < 1e-3, "the filter starts from it (and goes on estimating)")
        s.inputLost(.accessoryMotion, at: 1, publisher: &p)
        #expect(s.startup.outcome == .collecting && s.accelOffset == .zero)
    }

    @Test func restIsASmallSpreadAboutASmallRate() {
        var r = StartupRest()
        // A steady bias (1.5 °/s) with noise on it is rest.
        for i in 0..<50 {
            let wobble = i % 2 == 0 ? 0.001 : -0.001
            _ = r.update(gyro: Vector3(0.026 + wobble, 0, 0), accel: Vector3(0, 0, 9.8 + wobble), dt: 0.005)
        }
        #expect(r.outcome != .collecting && r.outcome != .moving)
        // A steady turn (3 °/s) is not, however still it is.
        var turn = StartupRest()
        for _ in 0..<50 { _ = turn.update(gyro: Vector3(0, 0, 0.052), accel: Vector3(0, 0, 9.8), dt: 0.005) }
        #expect(turn.outcome == .moving)
        // A nod (0.5 rad/s swings) is not.
        var nod = StartupRest()
        for i in 0..<50 { _ = nod.update(gyro: Vector3(0.5 * sin(Double(i) * 0.3), 0, 0), accel: Vector3(0, 0, 9.8), dt: 0.005) }
        #expect(nod.outcome == .moving)
        // Free fall or a bad reading is not rest either.
        var fall = StartupRest()
        for _ in 0..<50 { _ = fall.update(gyro: .zero, accel: Vector3(0, 0, 0.1), dt: 0.005) }
        #expect(fall.outcome == .moving)
    }
}
