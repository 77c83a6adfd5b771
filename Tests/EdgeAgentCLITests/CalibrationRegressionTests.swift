import Testing
import Foundation
import EdgeBus
import EdgeConfig
import EdgeEngine
import EdgeFusion
import EdgeSim
@testable import EdgeAgentCLI
import EdgeRuntime

/// What the engine makes of the default board after `seconds` of desk-idle:
/// errors against the scenario's truth.
struct EngineOutcome {
    var angleErrorDeg: Double
    var yawErrorDeg: Double
    var yawDeg: Double
    /// Mean over the last 5 s, g (still on the desk: the truth is 0).
    var userAccelerationZ: Double
}

/// Runs the engine (the agent's SensorHub and loop) on the default simulated
/// board on a virtual clock, with `calibration`, and compares its attitude with
/// desk-idle's truth.
func runDefaultBoard(calibration: EngineCalibration, seconds: Double) throws -> EngineOutcome {
    let selection = try defaultSelection()
    let clock = VirtualClock()
    let session = try BoardSession.open(selection, clock: clock)
    let scenario = try SimulatedBoardFactory.loadScenario(repositoryRoot + "/scenarios/desk-idle.json5")
    let world = try ScenarioWorld(scenario, startNanoseconds: clock.nowNanoseconds)   // the board's world, again
    let settings = EngineSetup.settings(selection.config)
    let hub = SensorHub(bus: session.bus, clock: clock, devices: EngineSetup.devices(session.profile),
                        settings: settings, calibration: calibration, sink: DiscardingSink())
    hub.start()
    let loop = EngineLoop(hub: hub, clock: clock)
    let ticks = Int(seconds * 1e9 / Double(loop.periodNanoseconds)), last = Int(5e9 / Double(loop.periodNanoseconds))
    loop.run(maxTicks: ticks - last)
    var userZ = 0.0
    for _ in 0..<last {
        loop.run(maxTicks: 1)
        userZ += try #require(hub.primaryFilter).deviceMotion(in: .xMagneticNorthZVertical).userAcceleration.z / Double(last)
    }
    let motion = try #require(hub.primaryFilter).deviceMotion(in: .xMagneticNorthZVertical)
    let truth = Attitude(quaternion: world.sample(atNanoseconds: clock.nowNanoseconds).attitude, referenceFrame: .xMagneticNorthZVertical)
    var dyaw = (motion.attitude.yaw - truth.yaw) * 180 / .pi
    while dyaw > 180 { dyaw -= 360 }
    while dyaw < -180 { dyaw += 360 }
    return EngineOutcome(angleErrorDeg: motion.attitude.quaternion.angle(to: truth.quaternion) * 180 / .pi,
                         yawErrorDeg: abs(dyaw), yawDeg: motion.attitude.yaw * 180 / .pi,
                         userAccelerationZ: userZ)
}

/// Runs `edge-agent calibrate gyro`, `accel` and `mag` with their
/// scenarios on the default configuration, as docs/calibration.md says, into `output`.
func calibrateDefaultBoard(into output: String) throws {
    for sensor in ["gyro", "accel", "mag"] {
        let (c, _, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "calibrate", sensor, "--scenario", repositoryRoot + "/scenarios/calibrate-\(sensor).json5",
                                   "--fast", "--output", output, "--config", repositoryRoot + "/config/edge-agent.json5"], console: c)
        #expect(rc == 0, "calibrate \(sensor): \(err())")
    }
}

func temporaryCalibrationPath() -> String {
    let d = NSTemporaryDirectory() + "edge-tied-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d + "/calibration.json"
}

/// The calibration regressions, end to end through the command line and the
/// engine (only what `edge-agent` users do): calibrating the default
/// simulated board on its calibration scenarios must make the running agent
/// better against the scenario's truth; `fuse` must read the file
/// `calibrate` writes. (That the default configuration runs calibrated is in
/// DefaultCalibrationTests.)
@Suite struct CalibrationRegressionTests {
    @Test func calibratingOnTheScenariosImprovesTheRunningAgent() throws {
        let path = temporaryCalibrationPath()
        try calibrateDefaultBoard(into: path)
        let calibration = try CalibrationLoader.load(path)
        #expect(calibration.imu["mpu6050@0x68"] != nil && calibration.magnetometer != nil)

        let without = try runDefaultBoard(calibration: EngineCalibration(), seconds: 40)
        let with = try runDefaultBoard(calibration: calibration, seconds: 40)
        // desk-idle: still, yaw 20° (X axis 20° west of north)
        #expect(with.yawErrorDeg < without.yawErrorDeg, "yaw \(with.yawDeg)° calibrated, \(without.yawDeg)° not, truth 20°")
        #expect(with.yawErrorDeg < 2, "yaw \(with.yawDeg)°, truth 20°")
        #expect(with.angleErrorDeg < without.angleErrorDeg && with.angleErrorDeg < 2)
        // at rest the user acceleration is zero: the accelerometer bias is gone
        #expect(abs(without.userAccelerationZ) > 0.02, "uncalibrated: \(without.userAccelerationZ) g")
        #expect(abs(with.userAccelerationZ) < 0.003, "calibrated: \(with.userAccelerationZ) g")
    }

    @Test func fuseReadsTheFileCalibrateWrites() throws {
        let path = temporaryCalibrationPath()
        let (c1, _, e1) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "calibrate", "mag", "--scenario", repositoryRoot + "/scenarios/calibrate-mag.json5",
                                  "--fast", "--output", path, "--config", repositoryRoot + "/config/edge-agent.json5"], console: c1) == 0, "\(e1())")
        let (c2, _, e2) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "fuse", "--input", repositoryRoot + "/Tests/Fixtures/fusion/synthetic_turns.csv",
                                   "--output", path + ".fused.csv", "--mag-calibration", path,
                                   "--config", repositoryRoot + "/config/edge-agent.json5"], console: c2)
        #expect(rc == 0, "\(e2())")
        // and a type error in it is said in words, with the key path and line
        try """
        {
          "version": 2,
          "chips": { "qmc5883l@0x0d": { "mag": { "hard_iron_ut": ["3.2", 0, 0] } } }
        }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let (c3, _, e3) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "fuse", "--input", repositoryRoot + "/Tests/Fixtures/fusion/synthetic_turns.csv",
                                  "--output", path + ".fused.csv", "--mag-calibration", path,
                                  "--config", repositoryRoot + "/config/edge-agent.json5"], console: c3) == 1)
        let err = e3()
        #expect(err.contains("\(path):3:") && err.contains("hard_iron_ut[0]") && err.contains("expected a number, got a string"), "\(err)")
        #expect(!err.contains("DecodingError") && !err.contains("Expected to decode") && !err.contains("keyNotFound"), "\(err)")
    }
}
