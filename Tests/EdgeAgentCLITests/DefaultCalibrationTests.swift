import Testing
import Foundation
import EdgeBus
import EdgeConfig
import EdgeEngine
@testable import EdgeAgentCLI
import EdgeRuntime

/// The repository's default configuration runs the simulated board
/// calibrated: config/calibration.json is what `edge-agent calibrate
/// gyro|accel|mag --scenario scenarios/calibrate-*.json5 --fast` writes on the
/// default board (docs/calibration.md, "The default simulated board comes
/// calibrated").
///
/// The regeneration check is a golden the code produced itself, so it only
/// detects change (regenerate with the commands in docs/calibration.md and
/// say why in the commit). What says the file is right are the independent
/// checks: it is tied to the simulated chips (and refused for a real board),
/// and with it the engine's user acceleration at rest is zero and its yaw
/// right against desk-idle's truth (CalibrationRegressionTests).
@Suite struct DefaultCalibrationTests {
    static let committed = repositoryRoot + "/config/calibration.json"

    /// The file with the `created` times (wall clock) taken out.
    func numbers(_ f: CalibrationFile) -> CalibrationFile {
        var out = f
        for id in out.chips.keys {
            out.chips[id]?.gyro?.created = ""; out.chips[id]?.accel?.created = ""; out.chips[id]?.mag?.created = ""
        }
        return out
    }

    @Test func theDefaultConfigurationPointsAtTheCommittedCalibration() throws {
        let selection = try defaultSelection()
        let path = try #require(selection.config.calibrationFile.map { EngineSetup.path($0, config: selection.configPath) })
        #expect(URL(fileURLWithPath: path).standardized.path == URL(fileURLWithPath: Self.committed).standardized.path)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func regeneratingItReproducesIt() throws {
        let path = temporaryCalibrationPath()
        try calibrateDefaultBoard(into: path)   // the documented commands, through the command line
        let again = try CalibrationFile.load(from: path), committed = try CalibrationFile.load(from: Self.committed)
        #expect(numbers(again) == numbers(committed),
                "config/calibration.json is not what the calibration scenarios give today: regenerate it (docs/calibration.md)")
        #expect(Set(committed.chips.keys) == ["mpu6050@0x68", "qmc5883l@0x0d"])
        #expect(committed[chip: "mpu6050@0x68"]?.sections == ["gyro", "accel"])
    }

    @Test func itIsTiedToTheSimulatedChips() throws {
        let session = try BoardSession.open(try defaultSelection(), clock: VirtualClock())
        var warnings: [String] = []
        let c = try CalibrationLoader.resolve(.init(configuration: Self.committed), for: session, warn: { warnings.append($0) }).engine
        #expect(warnings.isEmpty, "\(warnings)")
        #expect(c.imu["mpu6050@0x68"] != nil && c.magnetometer != nil)
        let pi = try ConfigLoader.load(BoardProfile.self, from: repositoryRoot + "/boards/raspberry-pi-4b.json5")
        #expect(throws: CalibrationMismatch.self) {
            try CalibrationLoader.check(try CalibrationFile.load(from: Self.committed), path: Self.committed,
                                        against: try BoardChips.of(profile: pi, profilePath: nil), warn: { _ in })
        }
    }

    @Test func theDefaultConfigurationRunsCalibratedAtRest() throws {
        // what `run` loads with config/edge-agent.json5
        let selection = try defaultSelection()
        let path = selection.config.calibrationFile.map { EngineSetup.path($0, config: selection.configPath) }
        let calibration = try CalibrationLoader.load(path)
        let outcome = try runDefaultBoard(calibration: calibration, seconds: 20)
        // still on the desk: no user acceleration (uncalibrated: the accelerometer's bias, ≈ −0.05 g on Z)
        #expect(abs(outcome.userAccelerationZ) < 0.003, "\(outcome.userAccelerationZ) g at rest")
        #expect(outcome.yawErrorDeg < 2, "yaw \(outcome.yawDeg)°, truth 20°")
    }

    @Test func aRealBoardWithoutCalibrationIsToldSoInOneLine() throws {
        let pi = try ConfigLoader.load(BoardProfile.self, from: repositoryRoot + "/boards/raspberry-pi-4b.json5")
        let line = try #require(CalibrationLoader.uncalibratedWarning(profile: pi, file: CalibrationFile(), path: "/var/lib/edge-agent/calibration.json"))
        #expect(line.contains("accelerometer not calibrated — run `edge-agent calibrate accel`"))
        #expect(line.contains("magnetometer not calibrated — run `edge-agent calibrate mag`"))
        #expect(!line.contains("\n"))
        // calibrated: nothing to say
        var file = CalibrationFile()
        for chip in pi.chips {
            switch chip.kind {
            case .mpu6050: file.set(accel: .identity, for: chip.id, created: "")
            case .qmc5883l, .hmc5883l: file.set(mag: .identity, for: chip.id, created: "")
            case .bmp280, .ms5837, .bme280: break
            }
        }
        #expect(CalibrationLoader.uncalibratedWarning(profile: pi, file: file, path: nil) == nil)
        // the simulated board comes calibrated, and run does not warn about it
        let session = try BoardSession.open(try defaultSelection(), clock: VirtualClock())
        var warnings: [String] = []
        _ = try CalibrationLoader.resolve(.init(), for: session, warn: { warnings.append($0) })
        #expect(warnings.isEmpty)
    }
}
