import Testing
import Foundation
import EdgeCommandLine
import EdgeBus
import EdgeConfig
import EdgeFusion
import EdgeSim
@testable import EdgeAgentCLI
import EdgeLinux
import EdgeRuntime

/// The calibrate command's core on the simulated board, on a virtual clock,
/// as `edge-agent calibrate SENSOR --scenario scenarios/calibrate-*.json5`
/// runs it on the default board: the calibration scenarios move the board's
/// own chips. What the calibration must recover is the simulator's model of
/// those chips (their imperfections, chip frame), taken from the board the
/// session built - an independent truth, transcribed from the data sheet in
/// EdgeSim, not from the calibration code.
@Suite struct CalibrateCommandTests {
    static func tempDir() -> String {
        let d = NSTemporaryDirectory() + "calibrate-tests-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    /// The default board's session playing `scenario` (a scenarios/ name) on a virtual clock.
    static func session(_ scenario: String) throws -> (BoardSession, BoardSession.Selection) {
        let selection = try defaultSelection()
        let path = repositoryRoot + "/scenarios/\(scenario).json5"
        return (try CalibrateCommand.openSession(selection, scenario: path, clock: VirtualClock()), selection)
    }

    /// Runs the command's core; returns the exit status (or throws) and the console output.
    static func calibrate(_ sensor: CalibrateCommand.Sensor, scenario: String, duration: Double? = nil,
                          output: String, chip: String? = nil) throws -> (Int32, String, String) {
        let (session, selection) = try Self.session(scenario)
        let (console, out, err) = Console.capturing()
        let rc = try CalibrateCommand.execute(
            .init(sensor: sensor, chipID: chip, duration: duration, outputPath: output),
            session: session, settings: selection.config.sensors, console: console, created: "2026-11-29T17:00:00Z")
        return (rc, out(), err())
    }

    /// The simulator's imperfections of the chip at `address` of the board `session` built.
    static func model(_ session: BoardSession, _ address: UInt8) throws -> ChipImperfections {
        let spec = try #require(session.simulated?.chips.first { $0.address == address })
        let kind = try #require(ChipSpec.Kind(rawValue: spec.kind))
        return SimulatedBoardFactory.resolved(spec.imperfections, kind: kind)
    }

    static func v(_ a: [Double]) -> Vector3 { Vector3(a[0], a[1], a[2]) }

    /// What the model adds at rest, `bias + biasTempco·(T − 25 °C)`, and its gain `1 + scaleError + scaleTempco·ΔT`.
    static func offset(_ a: AxisImperfections, at t: Double) -> (bias: Vector3, gain: Vector3) {
        (v(a.bias) + v(a.biasTempco) * (t - 25), Vector3(1, 1, 1) + v(a.scaleError) + Vector3(repeating: a.scaleTempco * (t - 25)))
    }

    @Test func gyroRecoversTheSimulatedBias() throws {
        let path = Self.tempDir() + "/calibration.json"
        let (rc, out, err) = try Self.calibrate(.gyro, scenario: "calibrate-gyro", duration: 5, output: path)
        #expect(rc == 0)
        #expect(err.contains("do not touch it"))
        #expect(out.contains("Quality: good"))
        let gyro = try #require(try CalibrationFile.load(from: path)[chip: "mpu6050@0x68"]?.gyro)
        guard case .mpu6050(let m) = try Self.model(try Self.session("calibrate-gyro").0, 0x68) else { Issue.record("not an MPU-6050"); return }
        // 22 °C room + the model's die offset
        let die = 22 + m.dieTemperatureOffset
        #expect(abs(gyro.calibration.temperatureCelsius - die) < 0.2)
        // noise 0.0007 rad/s over 1000 samples, quantisation 1/65.5 °/s = 0.00027 rad/s
        #expect((gyro.calibration.bias - Self.offset(m.gyro, at: die).bias).magnitudes.max() < 3e-4)
        #expect(gyro.calibration.sampleCount >= 990)
        #expect(gyro.created == "2026-11-29T17:00:00Z")
    }

    @Test func accelRecoversBiasAndScaleFromTheSixPoses() throws {
        let path = Self.tempDir() + "/calibration.json"
        let (rc, out, err) = try Self.calibrate(.accel, scenario: "calibrate-accel", output: path)
        #expect(rc == 0)
        #expect(err.contains("+X up: standing on its left edge"))
        #expect(err.contains("✓ -Y up recorded."))
        #expect(out.contains("Accelerometer mpu6050@0x68"))
        let accel = try #require(try CalibrationFile.load(from: path)[chip: "mpu6050@0x68"]?.accel).calibration
        guard case .mpu6050(let m) = try Self.model(try Self.session("calibrate-accel").0, 0x68) else { Issue.record("not an MPU-6050"); return }
        let truth = Self.offset(m.accel, at: accel.temperatureCelsius)
        #expect((accel.bias - truth.bias).magnitudes.max() < 0.01)
        #expect((accel.scale * truth.gain - Vector3(1, 1, 1)).magnitudes.max() < 0.001)
        #expect(accel.verdict.level == .good)
    }

    /// Issue 17: a GY-271 carries a QMC5883L or an HMC5883L; `calibrate mag`
    /// calibrates whichever the board has. On the HMC5883L board
    /// (boards/simulated-hmc5883l-bme280.json5) playing the calibration
    /// scenario: the chip's hard iron as the simulator's model has it (its
    /// offset, in the chip's frame), and the file names the chip.
    @Test func magCalibratesTheHMC5883LOfAGY271() throws {
        let path = Self.tempDir() + "/calibration.json"
        let board = repositoryRoot + "/boards/simulated-hmc5883l-bme280.json5"
        let config = try ConfigLoader.load(AgentConfig.self, from: repositoryRoot + "/config/edge-agent.json5")
        let selection = BoardSession.Selection(profile: try ConfigLoader.load(BoardProfile.self, from: board), profilePath: board,
                                               config: config, configPath: repositoryRoot + "/config/edge-agent.json5")
        let scenario = repositoryRoot + "/scenarios/calibrate-mag.json5"
        let session = try CalibrateCommand.openSession(selection, scenario: scenario, clock: VirtualClock())
        let (console, out, err) = Console.capturing()
        let rc = try CalibrateCommand.execute(.init(sensor: .mag, chipID: nil, duration: nil, outputPath: path),
                                              session: session, settings: config.sensors, console: console,
                                              created: "2026-12-05T05:00:00Z")
        #expect(rc == 0, "\(out())\(err())")
        #expect(err().contains("hmc5883l@0x1e"), "\(err())")
        let file = try CalibrationFile.load(from: path)
        let mag = try #require(file[chip: "hmc5883l@0x1e"]?.mag)
        #expect(file[chip: "hmc5883l@0x1e"]?.measuredOn?.chip == "hmc5883l")
        let spec = try #require(session.simulated?.chips.first { $0.address == 0x1E })
        guard case .hmc5883l(let h) = SimulatedBoardFactory.resolved(spec.imperfections, kind: .hmc5883l) else {
            Issue.record("not an HMC5883L"); return
        }
        let (bias, _) = Self.offset(h.field, at: 22)
        #expect((mag.calibration.hardIron - bias).norm < 0.5, "\(mag.calibration.hardIron) vs the model's \(bias)")
        // A gyroscope calibration of it is refused, naming what it needs.
        let (c2, _, _) = Console.capturing()
        #expect { try CalibrateCommand.execute(.init(sensor: .gyro, chipID: "hmc5883l@0x1e", duration: 1, outputPath: path),
                                               session: session, settings: config.sensors, console: c2, created: "x") }
            throws: { "\($0)".contains("needs a mpu6050, not a hmc5883l") }
    }

    @Test func magRecoversTheHardIronAndMakesTheFieldASphere() throws {
        let path = Self.tempDir() + "/calibration.json"
        let (rc, _, err) = try Self.calibrate(.mag, scenario: "calibrate-mag", output: path)
        #expect(rc == 0)
        #expect(err.contains("Turn the board slowly through all orientations"))
        let mag = try #require(try CalibrationFile.load(from: path)[chip: "qmc5883l@0x0d"]?.mag).calibration
        guard case .qmc5883l(let q) = try Self.model(try Self.session("calibrate-mag").0, 0x0D) else { Issue.record("not a QMC5883L"); return }
        // the model: raw = (I + crossAxis)·diag(gain)·softIron·field + bias, at the room's 22 °C
        let (bias, gain) = Self.offset(q.field, at: 22)
        #expect((mag.hardIron - bias).norm < 0.3)
        var mix = Matrix3(rows: q.field.crossAxis)
        mix = Matrix3(rows: [[1, mix.r0.y, mix.r0.z], [mix.r1.x, 1, mix.r1.z], [mix.r2.x, mix.r2.y, 1]])
        let distortion = mix * Matrix3(rows: [[gain.x, 0, 0], [0, gain.y, 0], [0, 0, gain.z]]) * Matrix3(rows: q.softIron)
        // calibrated, every direction of the field has the same size
        var sizes: [Double] = []
        for x in [-1.0, 0, 1] { for y in [-1.0, 0, 1] { for z in [-1.0, 0, 1] where x != 0 || y != 0 || z != 0 {
            sizes.append((mag.softIron * (distortion * Vector3(x, y, z).normalized)).norm)
        } } }
        #expect(sizes.max()! / sizes.min()! - 1 < 0.005, "\(sizes)")
        #expect(abs(mag.fieldStrength - 48) < 1.5)
        #expect(mag.residual < 0.01)
    }

    @Test func calibratingOneSensorKeepsTheOthers() throws {
        let path = Self.tempDir() + "/calibration.json"
        _ = try Self.calibrate(.mag, scenario: "calibrate-mag", output: path)
        let (rc, out, _) = try Self.calibrate(.gyro, scenario: "calibrate-gyro", duration: 2, output: path)
        #expect(rc == 0)
        #expect(out.contains("1 other calibration kept"))
        let file = try CalibrationFile.load(from: path)
        #expect(file[chip: "qmc5883l@0x0d"]?.mag != nil)
        #expect(file[chip: "mpu6050@0x68"]?.gyro != nil)
    }

    @Test func aBoardThatMovesIsRefusedAndNothingIsWritten() throws {
        let path = Self.tempDir() + "/calibration.json"
        // rotate-z: still for 5 s, then turning
        do {
            _ = try Self.calibrate(.gyro, scenario: "rotate-z", duration: 10, output: path)
            Issue.record("expected the calibration to be refused")
        } catch {
            #expect("\(error)".contains("the board moved"))
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func notEnoughCoverageIsAClearErrorAndNothingIsWritten() throws {
        let path = Self.tempDir() + "/calibration.json"
        // rotate-z only turns flat: a cone of directions
        do {
            _ = try Self.calibrate(.mag, scenario: "rotate-z", duration: 30, output: path)
            Issue.record("expected the calibration to fail")
        } catch {
            let text = "\(error)"
            #expect(text.contains("not enough coverage in 30 s"))
            #expect(text.contains("of 26 directions, need 24"))
            #expect(text.contains("Nothing was written"))
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func missingPosesAreNamedWhenTimeRunsOut() throws {
        let path = Self.tempDir() + "/calibration.json"
        do {
            _ = try Self.calibrate(.accel, scenario: "calibrate-accel", duration: 20, output: path)
            Issue.record("expected the calibration to fail")
        } catch {
            let text = "\(error)"
            #expect(text.contains("time is up after 20 s"))
            #expect(text.contains("+Y up"))
            #expect(!text.contains("+Z up"))
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func anUnwritableOutputIsAnErrorNamingTheFile() throws {
        let dir = Self.tempDir()
        let blocker = dir + "/not-a-directory"
        try "x".write(toFile: blocker, atomically: true, encoding: .utf8)
        let path = blocker + "/calibration.json"
        do {
            _ = try Self.calibrate(.gyro, scenario: "calibrate-gyro", duration: 1, output: path)
            Issue.record("expected an error")
        } catch {
            #expect("\(error)".contains(path))
        }
    }

    @Test func aBrokenExistingFileIsNotOverwritten() throws {
        let path = Self.tempDir() + "/calibration.json"
        try "{ version: 1, chips: { oops } }".write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try Self.calibrate(.gyro, scenario: "calibrate-gyro", duration: 1, output: path)
            Issue.record("expected an error")
        } catch {
            #expect("\(error)".contains(path))
            #expect("\(error)".contains("fix or remove it"))
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{ version: 1, chips: { oops } }")
    }

    @Test func theAccessoryIMUCanBeChosen() throws {
        let path = Self.tempDir() + "/calibration.json"
        let (rc, _, _) = try Self.calibrate(.gyro, scenario: "calibrate-gyro", duration: 2, output: path, chip: "mpu6050@0x69")
        #expect(rc == 0)
        #expect(try CalibrationFile.load(from: path)[chip: "mpu6050@0x69"]?.gyro != nil)
        #expect(throws: UsageError.self) {
            try Self.calibrate(.gyro, scenario: "calibrate-gyro", duration: 1, output: path, chip: "qmc5883l@0x0d")
        }
    }

    @Test func posesAndHintsAreInBoardTerms() throws {
        let straight = ChipSpec(kind: .mpu6050, address: 0x68)
        #expect(CalibrateCommand.poseDescription(.xUp, chip: straight) == "+X up: standing on its left edge (right edge up)")
        #expect(CalibrateCommand.poseDescription(.zDown, chip: straight) == "-Z up: upside down, component side down")
        // chip turned 90° on the board: board X = chip −Y, board Y = chip +X
        let turned = ChipSpec(kind: .mpu6050, address: 0x68, mounting: try Mounting(axes: ["-y", "+x", "+z"]))
        #expect(CalibrateCommand.poseDescription(.xUp, chip: turned)
                == "chip +X up = board +Y up: standing on its bottom edge (top edge up)")
        #expect(CalibrateCommand.magHint([Vector3(0, 0, -1)], chip: turned)?.contains("board's -Z side down") == true)
        #expect(CalibrateCommand.magHint([Vector3(1, 0, 0)], chip: turned)?.contains("board's +Y side down") == true)
        #expect(CalibrateCommand.magHint([], chip: turned) == nil)
    }

    @Test func onlyTheCalibratedChipIsStarted() throws {
        // The profile names a BMP280 at 0x77 that is not on the bus: a gyro
        // calibration must not care.
        let (real, selection) = try Self.session("calibrate-gyro")
        var profile = real.profile
        profile.chips.append(ChipSpec(kind: .bmp280, address: 0x77))
        let session = BoardSession(profile: profile, source: real.profileSource, bus: real.bus, clock: real.clock,
                                   transport: real.transport, simulated: real.simulated)
        let path = Self.tempDir() + "/calibration.json"
        let (console, _, _) = Console.capturing()
        let rc = try CalibrateCommand.execute(.init(sensor: .gyro, chipID: nil, duration: 1, outputPath: path),
                                              session: session, settings: selection.config.sensors, console: console,
                                              created: "now")
        #expect(rc == 0)
    }

    @Test func defaultPathIsNextToTheConfigOrUnderVarLib() {
        #expect(CalibrateCommand.defaultCalibrationPath(configPath: "config/edge-agent.json5") == "config/calibration.json")
        #expect(CalibrateCommand.defaultCalibrationPath(configPath: "/opt/edge/agent.json5") == "/opt/edge/calibration.json")
        #expect(CalibrateCommand.defaultCalibrationPath(configPath: "/etc/edge-agent/edge-agent.json5")
                == "/var/lib/edge-agent/calibration.json")
        #expect(CalibrateCommand.defaultCalibrationPath(configPath: "edge-agent.json5") == "./calibration.json")
        #expect(CalibrateCommand.defaultCalibrationPath(configPath: nil) == "calibration.json")
    }
}

/// The whole command line, with --scenario and --fast (virtual clock).
@Suite struct CalibrateCommandLineTests {
    func run(_ args: [String]) -> (Int32, String, String) {
        let (c, out, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "calibrate"] + args + ["--config", repositoryRoot + "/config/edge-agent.json5"],
                                  console: c)
        return (rc, out(), err())
    }

    @Test func gyroOnTheSimulatedBoardWritesTheFile() throws {
        let path = CalibrateCommandTests.tempDir() + "/cal.json"
        let (rc, out, _) = run(["gyro", "--scenario", repositoryRoot + "/scenarios/calibrate-gyro.json5", "--fast",
                                "--duration", "2", "--output", path])
        #expect(rc == 0)
        #expect(out.contains("Saved to \(path)"))
        #expect(try CalibrationFile.load(from: path)[chip: "mpu6050@0x68"]?.gyro != nil)
    }

    /// A scenario played on the board moves the board's own chips; one that
    /// declares imperfections of its own would calibrate other chips than
    /// the agent then runs (the yaw 12.7° → 41.3° regression), so it is
    /// refused, naming both files, and nothing is written.
    @Test func aPlayedScenarioWithItsOwnImperfectionsIsRefused() throws {
        let dir = CalibrateCommandTests.tempDir()
        let scenario = dir + "/own-chips.json5"
        try """
        { name: "own-chips", duration_s: 5, seed: 3,
          board: { segments: [ { name: "still", duration_s: 5 } ] },
          imperfections: { "0x68": { mpu6050: { gyro: { noiseScale: 0 } } } } }
        """.write(toFile: scenario, atomically: true, encoding: .utf8)
        let path = dir + "/cal.json"
        let (rc, _, err) = run(["gyro", "--scenario", scenario, "--fast", "--duration", "2", "--output", path])
        #expect(rc != 0)
        #expect(err.contains("\(scenario): declares imperfections (0x68)"), "\(err)")
        #expect(err.contains("boards") || err.contains("desk-idle"), "names the board's scenario: \(err)")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func failureExitsOneWithTheReasonAndWritesNothing() {
        let path = CalibrateCommandTests.tempDir() + "/cal.json"
        let (rc, _, err) = run(["mag", "--scenario", repositoryRoot + "/scenarios/rotate-z.json5", "--fast",
                                "--duration", "20", "--output", path])
        #expect(rc == 1)
        #expect(err.contains("edge-agent calibrate: magnetometer calibration: not enough coverage"))
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func refusesClearlyWhenAnAgentHoldsTheBus() throws {
        // An agent (here: this test) holds the lock of /dev/i2c-247.
        let held = try BusLock(bus: "/dev/i2c-247", environment: ProcessInfo.processInfo.environment,
                               purpose: "edge-agent run")
        defer { withExtendedLifetime(held) {} }
        let path = CalibrateCommandTests.tempDir() + "/cal.json"
        let (rc, _, err) = run(["gyro", "--bus", "247", "--output", path])
        #expect(rc == 1)
        #expect(err.contains("/dev/i2c-247 is in use by another edge-agent"))
        #expect(err.contains("edge-agent run"))
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func badUsageExitsTwo() {
        #expect(run([]).0 == 2)
        let (rc, _, err) = run(["compass"])
        #expect(rc == 2)
        #expect(err.contains("expected gyro, accel or mag"))
        #expect(run(["gyro", "--duration", "-1"]).0 == 2)
        #expect(run(["gyro", "--bus", "1", "--fast"]).0 == 2)
    }

    @Test func helpListsTheCommand() {
        let (c, out, _) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "--help"], console: c) == 0)
        #expect(out().contains("calibrate"))
    }
}

@Suite struct CalibrationProgressDisplayTests {
    @Test func redrawsInPlaceOnATerminal() {
        final class Box: @unchecked Sendable { var err = "" }
        let box = Box()
        let console = Console(out: { _ in }, err: { box.err += $0 }, isTerminal: true)
        let ui = ProgressDisplay(console: console, live: console.isTerminal)
        ui.update(0.1, "a", at: 0)
        ui.update(0.5, "b", at: 1)
        ui.message("hint")
        #expect(box.err.components(separatedBy: "\u{1B}[1A\u{1B}[2K").count == 3)
        #expect(box.err.hasSuffix("[############............]  50 %  b\n"))
    }

    @Test func printsPlainLinesOtherwise() {
        let (console, _, err) = Console.capturing()
        let ui = ProgressDisplay(console: console, live: false)
        for i in 0...100 { ui.update(Double(i) / 100, "turning", at: Double(i) / 10) }
        let lines = err().split(separator: "\n")
        #expect(lines.count == 11)          // every tenth, no repeats
        #expect(!err().contains("\u{1B}"))
        #expect(ProgressDisplay.bar(1) == "[########################] 100 %")
    }
}
