import Testing
import Foundation
import EdgeCommandLine
import EdgeBus
import EdgeConfig
import EdgeEngine
import EdgeFusion
import EdgeSim
@testable import EdgeAgentCLI
import EdgeRuntime

/// A calibration belongs to the chips it was measured on. The simulated
/// board's calibration scenarios calibrate the chips the agent then runs
/// with, so calibrating makes the agent better against the scenario's truth;
/// a calibration of other chips is never applied: the chip runs uncalibrated
/// saying what differs (or, when calibration is required, the agent refuses).
@Suite struct CalibrationTiedToChipsTests {
    @Test func theCheckedLoadAcceptsItsOwnBoard() throws {
        let path = temporaryCalibrationPath()
        try calibrateDefaultBoard(into: path)
        // loaded the way `run` loads it: checked against the default board's chips
        let session = try BoardSession.open(try defaultSelection(), clock: VirtualClock())
        var warnings: [String] = []
        let resolved = try CalibrationLoader.resolve(.init(configuration: path), for: session, warn: { warnings.append($0) })
        let calibration = resolved.engine
        #expect(resolved.sources == ["mpu6050@0x68": path, "qmc5883l@0x0d": path])
        #expect(resolved.uncalibrated.map(\.chip) == ["mpu6050@0x69"] && resolved.statusChips.isEmpty, "only the accessory IMU, never calibrated")
        #expect(warnings.isEmpty, "\(warnings)")
        let unchecked = try CalibrationLoader.load(path)
        #expect(calibration.imu == unchecked.imu && calibration.magnetometer == unchecked.magnetometer)
        #expect(calibration.imu["mpu6050@0x68"] != nil && calibration.magnetometer != nil)
    }

    @Test func theFileSaysWhichChipsItWasMeasuredOn() throws {
        let path = temporaryCalibrationPath()
        try calibrateDefaultBoard(into: path)
        let file = try CalibrationFile.load(from: path)
        let imu = try #require(file[chip: "mpu6050@0x68"]?.measuredOn)
        #expect(imu.board == "Simulated board (MPU-6050 + BMP280 + QMC5883L + accessory MPU-6050)")
        #expect(imu.bus == "simulated" && imu.chip == "mpu6050" && imu.address == 0x68)
        #expect(imu.identity == 0x68)                         // WHO_AM_I, data sheet
        #expect(imu.simulation?.seed == 16)                   // desk-idle's seed, not calibrate-*'s
        #expect(imu.simulation?.scenario == "../scenarios/desk-idle.json5")
        let mag = try #require(file[chip: "qmc5883l@0x0d"]?.measuredOn)
        #expect(mag.identity == 0xFF)                          // CHIP_ID 0x0D, data sheet
        #expect(mag.simulation?.imperfections == SimulatedBoardFactory.fingerprint(.qmc5883l(.realistic)))
    }

    /// On c7b77b9 the load threw, and `run` exited 2 (issue 16, item 9).
    @Test func aCalibrationOfOtherSimulatedChipsIsSkippedAndSaysWhy() throws {
        let path = temporaryCalibrationPath()
        try calibrateDefaultBoard(into: path)
        // the same board with another seed
        var reseeded = try defaultSelection()
        reseeded.profile.simulation?.seed = 99
        let s1 = try BoardSession.open(reseeded, clock: VirtualClock())
        let skipped = try CalibrationLoader.resolve(.init(configuration: path), for: s1)
        #expect(skipped.engine.imu.isEmpty && skipped.engine.magnetometer == nil, "nothing of other chips is applied")
        // the accessory IMU (0x69) was never calibrated: listed, not skipped
        #expect(skipped.uncalibrated.map(\.chip) == ["mpu6050@0x68", "mpu6050@0x69", "qmc5883l@0x0d"])
        #expect(skipped.uncalibrated.filter(\.skipped).map(\.chip) == ["mpu6050@0x68", "qmc5883l@0x0d"])
        for u in skipped.uncalibrated where u.skipped {
            #expect(u.reason.contains("\(path) was measured on other chips"), "\(u.reason)")
            #expect(u.reason.contains("simulation seed 16 when calibrated, 99 now"), "\(u.reason)")
            #expect(skipped.engine.uncalibrated[u.chip] == u.reason)
        }
        #expect(skipped.statusChips == ["mpu6050@0x68", "qmc5883l@0x0d"])
        // required: refused, saying which chips, why and what to do
        do {
            _ = try CalibrationLoader.resolve(.init(configuration: path), for: s1, required: true)
            Issue.record("expected a refusal")
        } catch let e as CalibrationRequired {
            let text = "\(e)"
            #expect(text.contains("simulation seed 16 when calibrated, 99 now"), "\(text)")
            #expect(text.contains("mpu6050@0x68") && text.contains("qmc5883l@0x0d"))
            #expect(text.contains("edge-agent calibrate") && text.contains("calibration_file"))
        }
        // the same board playing a scenario whose chips are ideal
        let dir = (path as NSString).deletingLastPathComponent
        try """
        { name: "ideal-desk", duration_s: 10, board: { segments: [ { name: "still", duration_s: 10 } ] },
          imperfections: { default: "ideal" } }
        """.write(toFile: dir + "/ideal.json5", atomically: true, encoding: .utf8)
        var ideal = try defaultSelection()
        ideal.profile.simulation = .init(scenario: dir + "/ideal.json5")
        let s2 = try BoardSession.open(ideal, clock: VirtualClock())
        let ideal2 = try CalibrationLoader.resolve(.init(configuration: path), for: s2)
        #expect(ideal2.uncalibrated.filter(\.skipped).count == 2)
        #expect(ideal2.uncalibrated.filter(\.skipped).allSatisfy { $0.reason.contains("imperfections") }, "\(ideal2.uncalibrated)")
    }

    @Test func aCalibrationOfOtherBoardsOrPartsIsRefused() throws {
        let path = temporaryCalibrationPath()
        try calibrateDefaultBoard(into: path)
        let file = try CalibrationFile.load(from: path)
        // a real board (no bus needed to tell)
        let pi = try ConfigLoader.load(BoardProfile.self, from: repositoryRoot + "/boards/raspberry-pi-4b.json5")
        let real = try BoardChips.of(profile: pi, profilePath: nil)
        do {
            _ = try CalibrationLoader.check(file, path: path, against: real, warn: { _ in })
            Issue.record("expected a mismatch")
        } catch {
            let text = "\(error)"
            #expect(text.contains("when calibrated, '\(pi.name)' now"), "\(text)")
            #expect(text.contains("simulated chips when calibrated, real chips now"))
        }
        // the same board, another part answering at 0x68 (an MPU-6500 clone)
        var chips = try BoardChips.of(profile: try defaultSelection().profile, profilePath: repositoryRoot + "/boards/simulated.json5")
        chips.origins["mpu6050@0x68"]?.identity = 0x70
        do {
            _ = try CalibrationLoader.check(file, path: path, against: chips, warn: { _ in })
            Issue.record("expected a mismatch")
        } catch {
            #expect("\(error)".contains("identity register 0x68"), "\(error)")
        }
        // and fuse, given that board, refuses the file too
        let (c, _, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "fuse", "--input", repositoryRoot + "/Tests/Fixtures/fusion/synthetic_turns.csv",
                                   "--output", path + ".fused.csv", "--mag-calibration", path,
                                   "--board", repositoryRoot + "/boards/raspberry-pi-4b.json5"], console: c)
        #expect(rc == 1 && err().contains("is the calibration of other chips"), "\(err())")
    }

    @Test func calibrateWillNotMergeIntoAnotherBoardsFile() throws {
        let path = temporaryCalibrationPath()
        try calibrateDefaultBoard(into: path)
        let before = try String(contentsOfFile: path, encoding: .utf8)
        var renamed = try defaultSelection()
        renamed.profile.name = "My bench board"
        let session = try CalibrateCommand.openSession(renamed, scenario: repositoryRoot + "/scenarios/calibrate-gyro.json5", clock: VirtualClock())
        let (console, _, _) = Console.capturing()
        do {
            _ = try CalibrateCommand.execute(.init(sensor: .gyro, chipID: nil, duration: 1, outputPath: path), session: session,
                                             settings: renamed.config.sensors, console: console, created: "now")
            Issue.record("expected a refusal")
        } catch let e as UsageError {
            #expect(e.message.contains("another board") && e.message.contains("--output"), "\(e)")
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == before)
    }

    @Test func calibratingAChipAgainReplacesAnEntryOfOtherChips() throws {
        let path = temporaryCalibrationPath()
        try calibrateDefaultBoard(into: path)
        // pretend the IMU entry came from other simulated chips (another seed)
        var file = try CalibrationFile.load(from: path)
        file.chips["mpu6050@0x68"]?.measuredOn?.simulation?.seed = 7
        try file.save(to: path)
        let selection = try defaultSelection()
        let session = try CalibrateCommand.openSession(selection, scenario: repositoryRoot + "/scenarios/calibrate-gyro.json5", clock: VirtualClock())
        let (console, _, err) = Console.capturing()
        #expect(try CalibrateCommand.execute(.init(sensor: .gyro, chipID: nil, duration: 2, outputPath: path), session: session,
                                             settings: selection.config.sensors, console: console, created: "now") == 0)
        #expect(err().contains("measured on other chips") && err().contains("accel calibration was dropped"), "\(err())")
        let after = try CalibrationFile.load(from: path)
        #expect(after[chip: "mpu6050@0x68"]?.accel == nil)
        #expect(after[chip: "mpu6050@0x68"]?.gyro?.history.isEmpty == true, "no history from other chips")
        #expect(after[chip: "mpu6050@0x68"]?.measuredOn?.simulation?.seed == 16)
        #expect(after[chip: "qmc5883l@0x0d"]?.mag != nil)
    }

    @Test func aFileWithoutOriginsIsUsedWithAWarning() throws {
        // version 1: no measured_on
        let path = temporaryCalibrationPath()
        try """
        { "version": 1, "frame": "chip", "chips": { "mpu6050@0x68": { "gyro": { "bias_radps": [0.02, -0.015, 0.01] } },
                                                    "mpu6050@0x6a": { "gyro": { "bias_radps": [0, 0, 0] } } } }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let session = try BoardSession.open(try defaultSelection(), clock: VirtualClock())
        var warnings: [String] = []
        let c = try CalibrationLoader.resolve(.init(configuration: path), for: session, warn: { warnings.append($0) }).engine
        #expect(c.imu["mpu6050@0x68"]?.gyroBias == SIMD3(0.02, -0.015, 0.01))
        #expect(c.imu["mpu6050@0x6a"] == nil)
        #expect(warnings.contains { $0.contains("mpu6050@0x68") && $0.contains("does not say which chip") }, "\(warnings)")
        #expect(warnings.contains { $0.contains("mpu6050@0x6a") && $0.contains("no such chip") }, "\(warnings)")
    }
}


