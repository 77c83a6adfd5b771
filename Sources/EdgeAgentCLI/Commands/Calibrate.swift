#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeCommandLine
import EdgeBus
import EdgeChips
import EdgeConfig
import EdgeFusion
import EdgeRuntime
import EdgeLocations

/// `edge-agent calibrate gyro|accel|mag`: guided calibration of one chip,
/// written to the calibration file (docs/calibration.md).
public enum CalibrateCommand: Subcommand {
    public static let name = "calibrate"
    public static let summary = "Calibrate the gyroscope, accelerometer or magnetometer (guided) and save the result"
    public static let help = """
    Usage: edge-agent calibrate gyro|accel|mag [--board NAME|FILE | --bus N] [--config FILE]
                                [--output FILE] [--duration S] [--chip ID]
                                [--scenario FILE] [--fast]

    Guides you through calibrating one sensor, shows progress on standard
    error, prints the result and a quality verdict, and saves it in the
    calibration file, keeping every other calibration already there. The
    agent loads the file at start and on SIGHUP (systemctl reload edge-agent).

      gyro   Put the board on a steady surface and do not touch it. The
             gyroscope is averaged for --duration seconds (default 10) and
             its bias saved with the die temperature. Refused if the board
             moves (gyro or accelerometer deviation too large).
      accel  Hold the board still in six poses, each for 2 s: flat, upside
             down, and on each of its four edges (±X, ±Y, ±Z up). Poses are
             recognised automatically, in any order; the tool says which
             are still missing. Gives per-axis bias and scale. Gives up
             after --duration seconds (default 120).
      mag    Turn the board slowly through all orientations - round, over,
             upside down - away from steel and magnets, until the field has
             pointed in at least 24 of 26 directions. Fits hard and soft
             iron (an ellipsoid). Gives up after --duration seconds
             (default 90).

    Options:
      --output FILE  where to write (default: calibration.json next to the
                     configuration file; /var/lib/edge-agent/calibration.json
                     when the configuration is under /etc/edge-agent/;
                     ./calibration.json when there is no configuration file)
      --duration S   seconds to collect (gyro) or to wait at most (accel, mag)
      --chip ID      which chip, e.g. mpu6050@0x69 (default: the board's
                     primary MPU-6050, or its QMC5883L or HMC5883L)
      --board, --bus, --config   board and settings, as for `read`
      --scenario FILE  simulated boards only: play this scenario instead of
                     the profile's (scenarios/calibrate-gyro.json5,
                     calibrate-accel.json5, calibrate-mag.json5)
      --fast         simulated boards only: run on a virtual clock (no waiting)

    Calibrations are in the chip's own frame (before the board profile's
    mounting), so fixing a mounting does not invalidate them.

    Exit status: 0 saved; 1 the calibration failed (board moved, poses or
    directions missing when the time ran out, a chip error, the file could
    not be written) and nothing was written; 2 bad usage.

    Examples:
      edge-agent calibrate gyro
      edge-agent calibrate mag --duration 120
      edge-agent calibrate accel --scenario scenarios/calibrate-accel.json5 --fast --output /tmp/cal.json
    """

    /// Which sensor is calibrated.
    public enum Sensor: String, CaseIterable, Sendable {
        case gyro, accel, mag
        /// The chips it calibrates: a GY-271 carries either magnetometer.
        var chipKinds: [ChipSpec.Kind] { self == .mag ? [.qmc5883l, .hmc5883l] : [.mpu6050] }
        var kindsDescription: String { chipKinds.map(\.rawValue).joined(separator: " or ") }
        /// Default collection time (gyro) or time-out (accel, mag), s.
        var defaultDuration: Double { [Sensor.gyro: 10, .accel: 120, .mag: 90][self]! }
    }

    /// Where the calibration goes when there is no `--output`: next to the
    /// configuration file (`calibration.json`), except that a configuration
    /// under `/etc/edge-agent/` keeps its state in `/var/lib/edge-agent/`
    /// (configuration is read-only for the service; state is not). Without a
    /// configuration file: `calibration.json` in the working directory.
    /// The config owner can add a `calibration_file` key that overrides this.
    public static func defaultCalibrationPath(configPath: String?) -> String {
        guard let p = configPath, !p.isEmpty else { return "calibration.json" }
        if p.hasPrefix("/etc/edge-agent/") { return "/var/lib/edge-agent/calibration.json" }
        return BoardLocator.directory(of: p) + "/calibration.json"
    }

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let output = try a.option("--output")
        let duration = try a.double("--duration", in: 0.5...86_400)
        let chipID = try a.option("--chip")
        let scenario = try a.option("--scenario")
        let fast = a.flag("--fast")
        let selection = try BoardSession.select(&a, environment: ProcessInfo.processInfo.environment)
        let word = try a.positional("SENSOR (gyro, accel or mag)")
        guard let sensor = Sensor(rawValue: word) else {
            throw UsageError("unknown sensor '\(word)': expected gyro, accel or mag")
        }
        try a.finish()
        if (scenario != nil || fast) && selection.profile.bus != .simulated {
            throw UsageError("--scenario and --fast are for simulated boards; \(selection.profilePath ?? "the board") is not simulated")
        }
        let outputPath = output ?? selection.config.calibrationFile.map { EngineSetup.path($0, config: selection.configPath) }
            ?? defaultCalibrationPath(configPath: selection.configPath)
        // The calibration file itself is read (to merge) and written: by design.
        try OutputFiles.refuseOverlaps(
            outputs: [.init(output != nil ? "--output" : "the calibration file", outputPath)],
            inputs: selection.inputFiles + [scenario.map { .init("--scenario", $0) }])
        let clock: any TimeSource = fast ? VirtualClock() : MonotonicClock()
        let session = try openSession(selection, scenario: scenario, clock: clock)
        let request = Request(sensor: sensor, chipID: chipID, duration: duration, outputPath: outputPath)
        // The simulated board's own scenario never turns it: say so at once,
        // and again if it fails (ux: "0 of 26 directions" alone was a dead end).
        let hint = scenario == nil ? simulatedScenarioHint(sensor, profile: selection.profile) : nil
        if let hint { console.error("note: " + hint) }
        do {
            return try execute(request, session: session, settings: selection.config.sensors, console: console,
                               created: CalibrationFile.timestamp(unixSeconds: Date().timeIntervalSince1970))
        } catch let f as Failure where hint != nil {
            throw Failure(description: f.description + "\n" + hint!)
        }
    }

    /// For accel and mag on a simulated board playing a scenario that is not
    /// a calibration scenario: it cannot finish; which --scenario to pass.
    static func simulatedScenarioHint(_ sensor: Sensor, profile: BoardProfile) -> String? {
        guard sensor != .gyro, profile.bus == .simulated, let playing = profile.simulation?.scenario,
              !playing.contains("calibrate-") else { return nil }
        let needs = sensor == .mag ? "through the 26 directions" : "into the six poses"
        return "the simulated board plays \(playing), in which nobody turns it \(needs) this calibration needs, so it cannot finish: pass --scenario scenarios/calibrate-\(sensor.rawValue).json5 (add --fast to skip the waiting)."
    }

    /// Opens the board (taking the bus lock for a Linux bus); for a simulated
    /// board, `scenario` replaces the profile's scenario.
    static func openSession(_ s: BoardSession.Selection, scenario: String?, clock: any TimeSource) throws -> BoardSession {
        guard let scenario else { return try BoardSession.open(s, clock: clock, purpose: "calibrate") }
        guard s.profile.bus == .simulated else {
            throw UsageError("--scenario is for simulated boards")
        }
        let board = try SimulatedBoardFactory.make(profile: s.profile, profilePath: s.profilePath ?? ".", clock: clock,
                                                   scenarioOverride: scenario)
        return BoardSession(profile: s.profile, source: s.profilePath ?? "(simulated)", bus: AnyI2CBus(board.bus),
                            clock: clock, transport: "simulated (register-accurate chip models)", simulated: board)
    }

    /// What to calibrate and where the result goes.
    struct Request {
        var sensor: Sensor
        var chipID: String?
        var duration: Double?
        var outputPath: String
    }

    /// One calibration's result, ready for the file.
    enum Outcome {
        case gyro(GyroCalibration)
        case accel(AccelerometerCalibration)
        case mag(MagnetometerCalibration)

        var verdict: CalibrationVerdict {
            switch self {
            case .gyro(let c): c.verdict
            case .accel(let c): c.verdict
            case .mag(let c): c.verdict
            }
        }
    }

    /// A calibration that could not be completed or saved.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The command after argument parsing: starts the chips on `session`,
    /// collects, prints, and writes `request.outputPath`. Returns the exit
    /// status; throws (nothing written) when the calibration fails.
    static func execute(_ request: Request, session: BoardSession, settings: SensorSettings, console: Console,
                        created: String) throws -> Int32 {
        let chip = try chooseChip(request, profile: session.profile)
        // Fail before the user spends a minute turning the board: a broken
        // existing file, another board's file, or a place we cannot write.
        let existing: CalibrationFile?
        do {
            existing = try CalibrationFile.loadIfPresent(from: request.outputPath)
        } catch {
            throw Failure(description: "\(error)\nthe existing calibration file is not valid: fix or remove it, or choose another with --output")
        }
        let board = try BoardChips.of(profile: session.profile,
                                      profilePath: session.simulated != nil ? session.profileSource : nil)
        if let existing { try refuseAnotherBoardsFile(existing, path: request.outputPath, board: board) }
        try checkWritable(request.outputPath)

        // Start only the chip being calibrated (and the MPU-6050 it sits
        // behind on a GY-87, for the bypass): a missing barometer must not
        // stop a gyro calibration. The bus and its lock stay the session's.
        var profile = session.profile
        profile.chips = session.profile.chips.filter {
            $0.id == chip.id || ($0.kind == .mpu6050 && chip.behind == $0.address)
        }
        let only = BoardSession(profile: profile, source: session.profileSource, bus: session.bus, clock: session.clock,
                                transport: session.transport, simulated: session.simulated)
        let chips = try ChipSet.start(session: only, settings: settings, warn: { console.error("warning: \($0)") })
        guard let index = chips.entries.firstIndex(where: { $0.spec.id == chip.id }) else {
            throw Failure(description: "\(chip.id) did not start")
        }
        let ui = ProgressDisplay(console: console, live: console.isTerminal)
        console.error("Calibrating the \(sensorName(request.sensor)) of \(chip.id) (\(chips.entries[index].part)) "
                      + "on \(session.profile.name).")
        let duration = request.duration ?? request.sensor.defaultDuration
        let outcome: Outcome
        switch (request.sensor, chips.entries[index].driver) {
        case (.gyro, .mpu6050(let d)):
            outcome = .gyro(try collectGyro(d, session: session, rateHz: settings.mpu6050.achievedSampleRateHz,
                                            duration: duration, ui: ui))
        case (.accel, .mpu6050(let d)):
            outcome = .accel(try collectAccel(d, chip: chip, session: session,
                                              rateHz: settings.mpu6050.achievedSampleRateHz, duration: duration, ui: ui))
        case (.mag, .qmc5883l(let d)):
            outcome = .mag(try collectMag(d, chip: chip, session: session, rateHz: settings.qmc5883l.outputRateHz,
                                          duration: duration, ui: ui, widerRange: "qmc5883l.range_gauss: 8"))
        case (.mag, .hmc5883l(let d)):
            outcome = .mag(try collectMag(d, chip: chip, session: session, rateHz: settings.hmc5883l.outputRateHz,
                                          duration: duration, ui: ui, widerRange: "a wider hmc5883l.range_gauss (up to 8.1)"))
        default:
            throw Failure(description: "\(chip.id) is not a \(request.sensor.kindsDescription)")
        }

        for line in describe(outcome, chip: chip) { console.print(line) }
        let verdict = outcome.verdict
        console.print("Quality: \(verdict)")

        // Which chip this was measured on: the board's view of it plus what
        // the chip itself says (its identity register, read now that it runs).
        var origin = board.origins[chip.id] ?? CalibrationOrigin(board: session.profile.name, bus: board.bus,
                                                                 chip: chip.kind.rawValue, address: chip.address)
        if let id = try? session.bus.readRegister(chip.address, BoardChips.identityRegister(chip.kind)) {
            origin.identity = id
            origin.part = BoardChips.partName(chip.kind, identity: id) ?? chips.entries[index].part
        }
        var update = CalibrationFile()
        switch outcome {
        case .gyro(let c): update.set(gyro: c, for: chip.id, created: created, measuredOn: origin)
        case .accel(let c): update.set(accel: c, for: chip.id, created: created, measuredOn: origin)
        case .mag(let c): update.set(mag: c, for: chip.id, created: created, measuredOn: origin)
        }
        if let old = existing?[chip: chip.id], let was = old.measuredOn, !was.differences(from: origin).isEmpty {
            let dropped = old.sections.filter { $0 != request.sensor.rawValue }
            console.error("note: \(request.outputPath) held a calibration of \(chip.id) measured on other chips ("
                + was.differences(from: origin).joined(separator: "; ") + "): replaced"
                + (dropped.isEmpty ? "" : "; its \(dropped.joined(separator: " and ")) calibration\(dropped.count == 1 ? " was" : "s were") dropped, calibrate \(dropped.count == 1 ? "it" : "them") again"))
        }
        let merged = (existing ?? CalibrationFile()).merging(update)
        try merged.save(to: request.outputPath)
        let kept = merged.chips.values.reduce(0) { n, c in n + [c.gyro != nil, c.accel != nil, c.mag != nil].filter { $0 }.count } - 1
        console.print("Saved to \(request.outputPath)" + (kept > 0 ? " (\(kept) other calibration\(kept == 1 ? "" : "s") kept)" : "")
                      + ". The agent loads it at start and on SIGHUP (systemctl reload edge-agent).")
        if verdict.level == .poor {
            console.error("warning: the calibration's quality is poor; consider running it again")
        }
        return 0
    }

    static func sensorName(_ s: Sensor) -> String {
        switch s { case .gyro: "gyroscope"; case .accel: "accelerometer"; case .mag: "magnetometer" }
    }

    static func chooseChip(_ r: Request, profile: BoardProfile) throws -> ChipSpec {
        let kinds = r.sensor.chipKinds
        if let id = r.chipID {
            guard let c = profile.chips.first(where: { $0.id == id.lowercased() || $0.id == id }) else {
                throw UsageError("--chip \(id): the board has no such chip (it has: \(profile.chips.map(\.id).joined(separator: ", ")))")
            }
            guard kinds.contains(c.kind) else {
                throw UsageError("--chip \(id): the \(r.sensor.rawValue) calibration needs a \(r.sensor.kindsDescription), not a \(c.kind.rawValue)")
            }
            return c
        }
        for kind in kinds {
            if let c = profile.chip(kind) ?? profile.chips.first(where: { $0.kind == kind }) { return c }
        }
        throw Failure(description: "the board profile has no \(r.sensor.kindsDescription) to calibrate")
    }

    /// A calibration file belongs to one board: merging this board's
    /// calibration into a file of another board (another profile name or
    /// bus) would leave a file that fits neither. Refused before anything is
    /// measured, saying where to write instead.
    static func refuseAnotherBoardsFile(_ file: CalibrationFile, path: String, board: BoardChips) throws {
        let others = file.chips.compactMap { id, c -> (String, CalibrationOrigin)? in
            guard let o = c.measuredOn, o.board != board.board || o.bus != board.bus else { return nil }
            return (id, o)
        }.sorted { $0.0 < $1.0 }
        guard let first = others.first else { return }
        throw UsageError("\(path) holds the calibration of another board (\(others.map(\.0).joined(separator: ", ")) measured on "
            + "'\(first.1.board)', \(first.1.bus)); this is '\(board.board)', \(board.bus). A calibration file belongs to one board's chips: "
            + "write this board's to its own file with --output FILE (and set calibration_file to it), or move \(path) away")
    }

    /// Refuses early when the file (or the directory it would be created in)
    /// is not writable, naming the file.
    static func checkWritable(_ path: String) throws {
        var dir = BoardLocator.directory(of: path)
        if FileManager.default.fileExists(atPath: path) {
            if access(path, W_OK) != 0 {
                throw CalibrationFileError(file: path, operation: "open for writing", errno: errno, detail: String(cString: strerror(errno)))
            }
        }
        // the nearest existing ancestor must let us create entries
        while !FileManager.default.fileExists(atPath: dir), dir != "/", dir != "." {
            dir = BoardLocator.directory(of: dir)
        }
        var st = stat()
        if stat(dir, &st) == 0, (st.st_mode & S_IFMT) != S_IFDIR {
            throw CalibrationFileError(file: path, operation: "create", errno: ENOTDIR, detail: "\(dir) is not a directory")
        }
        if access(dir, W_OK | X_OK) != 0 {
            throw CalibrationFileError(file: path, operation: "create a file in \(dir)", errno: errno,
                                       detail: String(cString: strerror(errno)) + " (run as a user who may write there, or use --output)")
        }
    }

    // MARK: - collection loops (take the session's clock: tests run them on a VirtualClock)

    /// Reads the MPU-6050 at its sample rate until `body` returns true or
    /// `duration` s pass. Stops with the driver's error after 20 failed reads in a row.
    static func readIMU(_ d: MPU6050<AnyI2CBus>, session: BoardSession, rateHz: Double, duration: Double,
                        _ body: (MPU6050Sample, Double) throws -> Bool) throws {
        let clock = session.clock
        let periodNs = UInt64((1e9 / rateHz).rounded())
        let t0 = clock.nowNanoseconds
        let end = t0 + UInt64(duration * 1e9)
        var i: UInt64 = 1, failures = 0
        while true {
            let due = t0 + i * periodNs
            if due > end { return }
            clock.sleep(untilNanoseconds: due + 100_000)
            i += 1
            do {
                let s = try d.read()
                failures = 0
                if try body(s, Double(due - t0) / 1e9) { return }
            } catch let e as DriverError {
                failures += 1
                if failures >= 20 { throw Failure(description: "reading \(hex(d.address)) failed 20 times in a row: \(e)") }
            }
        }
    }

    static func collectGyro(_ d: MPU6050<AnyI2CBus>, session: BoardSession, rateHz: Double, duration: Double,
                            ui: ProgressDisplay) throws -> GyroCalibration {
        ui.message("Put the board on a steady surface and do not touch it for \(fixed(duration, 0)) s.")
        let expected = Int(duration * rateHz)
        var cal = GyroCalibrator(settings: .init(minimumSamples: max(20, expected * 8 / 10)))
        try readIMU(d, session: session, rateHz: rateHz, duration: duration) { s, t in
            cal.update(gyro: s.rotationRate, accel: s.acceleration, temperature: s.temperatureCelsius)
            // Fail fast: once half a second shows movement there is no point waiting.
            if cal.state.count >= Int(rateHz / 2), !cal.isStill {
                return true
            }
            ui.update(min(1, t / duration), "keep still: \(fixed(t, 1)) of \(fixed(duration, 0)) s", at: t)
            return false
        }
        ui.done()
        return try cal.result()
    }

    static func collectAccel(_ d: MPU6050<AnyI2CBus>, chip: ChipSpec, session: BoardSession, rateHz: Double,
                             duration: Double, ui: ProgressDisplay) throws -> AccelerometerCalibration {
        let blocks = max(2, Int((rateHz * 0.2).rounded()))
        var cal = AccelerometerCalibrator(settings: .init(blockSamples: blocks, samplesPerPose: blocks * 10))
        ui.message("Hold the board still in each of these six poses for 2 s, in any order:")
        for p in AccelerometerPose.allCases { ui.message("  " + poseDescription(p, chip: chip)) }
        ui.message("Turn it gently between poses; each is recognised by itself.")
        try readIMU(d, session: session, rateHz: rateHz, duration: duration) { s, t in
            if let done = cal.update(accel: s.acceleration, gyro: s.rotationRate, temperature: s.temperatureCelsius) {
                let missing = cal.missingPoses
                ui.message("✓ \(done) recorded." + (missing.isEmpty ? "" : " Still needed: "
                    + missing.map { poseDescription($0, chip: chip) }.joined(separator: "; ")))
            }
            let label: String
            switch cal.state.lastBlock {
            case .none: label = "waiting for the first pose"
            case .moving: label = "moving"
            case .stillOffAxis: label = "still, but no axis is vertical: lay it flat or stand it on an edge"
            case .pose(let p): label = cal.progress(p) >= 1 ? "\(p) done: turn to the next pose" : "holding \(p)"
            }
            ui.update(cal.progress, "\(6 - cal.missingPoses.count)/6 poses, \(label)", at: t)
            return cal.isComplete
        }
        ui.done()
        let result = Result { () throws(AccelerometerCalibrationError) in try cal.result() }
        switch result {
        case .success(let c): return c
        case .failure(.missingPoses(let missing)):
            throw Failure(description: "accelerometer calibration: time is up after \(fixed(duration, 0)) s with "
                + "\(missing.count) pose\(missing.count == 1 ? "" : "s") missing: "
                + missing.map { poseDescription($0, chip: chip) }.joined(separator: "; ")
                + ". Nothing was written; run it again (or give more time with --duration).")
        case .failure(let e): throw e
        }
    }

    /// `widerRange`: what to set when the field overflows the chip's range.
    static func collectMag<D: MagnetometerDriver>(_ d: D, chip: ChipSpec, session: BoardSession, rateHz: Double,
                                                  duration: Double, ui: ProgressDisplay,
                                                  widerRange: String) throws -> MagnetometerCalibration {
        var driver = d
        var cal = MagnetometerCalibrator()
        ui.message("Turn the board slowly through all orientations: round, over, on its edges and upside down,")
        ui.message("as if painting the inside of a sphere with it. Keep away from steel, magnets and speakers.")
        ui.message("(The field points down and north in the northern hemisphere; every side of the board should face it.)")
        let clock = session.clock
        let periodNs = UInt64((1e9 / rateHz).rounded())
        let t0 = clock.nowNanoseconds, end = t0 + UInt64(duration * 1e9)
        var i: UInt64 = 1, failures = 0, overflows = 0
        var lastSeen = 0, lastNew = 0.0
        while !cal.isComplete {
            let due = t0 + i * periodNs
            if due > end { break }
            clock.sleep(untilNanoseconds: due + 100_000)
            i += 1
            do {
                switch try driver.readField() {
                case .field(let f): cal.update(field: f); failures = 0
                case .overflow:
                    overflows += 1
                    if overflows == 1 { ui.message("warning: field overflow: a magnet nearby, or set \(widerRange)") }
                case .notReady: break
                }
            } catch {
                failures += 1
                if failures >= 20 { throw Failure(description: "reading \(hex(chip.address)) failed 20 times in a row: \(error)") }
            }
            let t = Double(due - t0) / 1e9
            if cal.binsSeen != lastSeen { lastSeen = cal.binsSeen; lastNew = t }
            // Stuck for a while: say which way to point the board next.
            let hint = t - lastNew > 5 ? magHint(cal.missingDirections, chip: chip) : nil
            ui.update(cal.progress, "\(cal.binsSeen)/26 directions; " + (hint ?? "keep turning slowly"), at: t)
        }
        ui.done()
        let result = Result { () throws(MagnetometerCalibrationError) in try cal.result() }
        switch result {
        case .success(let c): return c
        case .failure(.notEnoughCoverage(let seen, let needed)):
            throw Failure(description: "magnetometer calibration: not enough coverage in \(fixed(duration, 0)) s: "
                + "the field pointed in \(seen) of 26 directions, need \(needed). Turn the board slowly through all "
                + "orientations, upside down too (or give more time with --duration). Nothing was written.")
        case .failure(let e): throw e
        }
    }

    // MARK: - words

    /// "+X up: standing on its left edge" in board terms (the chip's axis
    /// carried through the mounting).
    static func poseDescription(_ p: AccelerometerPose, chip: ChipSpec) -> String {
        let up = chip.mounting.toBoard(p.up)
        let axis = [0, 1, 2].max { abs(up[$0]) < abs(up[$1]) }!
        let board = ["X", "Y", "Z"][axis]
        let sign = up[axis] > 0 ? "+" : "-"
        let words: [String: String] = [
            "+Z": "flat, component side up", "-Z": "upside down, component side down",
            "+X": "standing on its left edge (right edge up)", "-X": "standing on its right edge (left edge up)",
            "+Y": "standing on its bottom edge (top edge up)", "-Y": "standing on its top edge (bottom edge up)",
        ]
        let boardPose = sign + board
        let exact = abs(abs(up[axis]) - 1) < 1e-6
        let how = (exact ? "" : "about ") + (words[boardPose] ?? boardPose)
        let same = exact && axis == p.axis && (up[axis] > 0) == (p.sign > 0)
        return same ? "\(p.description): \(how)" : "chip \(p.description) = board \(boardPose) up: \(how)"
    }

    /// Which way to point the board so the field (down and north in the
    /// northern hemisphere, up and north in the southern) falls in a missing
    /// direction bin: the bin's direction carried into the board frame.
    static func magHint(_ missing: [Vector3], chip: ChipSpec) -> String? {
        guard let d = missing.first else { return nil }
        let b = chip.mounting.toBoard(d)
        var side = "", count = 0
        for (i, n) in ["X", "Y", "Z"].enumerated() where abs(b[i]) > 0.3 { side += (b[i] > 0 ? "+" : "-") + n; count += 1 }
        let part = ["side", "side", "edge", "corner"][count]
        return "next, point the board's \(side) \(part) down (along the field), then keep turning"
    }

    static func describe(_ o: Outcome, chip: ChipSpec) -> [String] {
        func v(_ x: Vector3, _ d: Int) -> String { "[\(fixed(x.x, d)), \(fixed(x.y, d)), \(fixed(x.z, d))]" }
        switch o {
        case .gyro(let c):
            return ["Gyroscope \(chip.id): bias \(v(c.bias, 5)) rad/s (\(v(c.bias * (180 / .pi), 3)) °/s), chip frame",
                    "  at \(fixed(c.temperatureCelsius, 1)) °C die temperature; noise \(v(c.noise, 5)) rad/s over \(c.sampleCount) samples"]
        case .accel(let c):
            return ["Accelerometer \(chip.id): bias \(v(c.bias, 4)) m/s², scale \(v(c.scale, 5)), chip frame",
                    "  at \(fixed(c.temperatureCelsius, 1)) °C die temperature; poses held to \(fixed(c.poseSpread, 4)) m/s² RMS"]
        case .mag(let c):
            let s = c.softIron.rows
            return ["Magnetometer \(chip.id): hard iron \(v(c.hardIron, 2)) µT, chip frame",
                    "  soft iron [\(s.map { "[" + $0.map { fixed($0, 4) }.joined(separator: ", ") + "]" }.joined(separator: ", "))]",
                    "  field strength \(fixed(c.fieldStrength, 1)) µT; residual \(fixed(c.residual * 100, 2)) % RMS"]
        }
    }
}

/// The progress bar on standard error. On a terminal it redraws in place
/// (cursor up, clear line); otherwise it prints a plain line when the
/// progress passes another tenth or the activity changes (at most every 2 s).
final class ProgressDisplay {
    let console: Console
    let live: Bool
    private var drawn = false
    private var lastLine = ""
    private var lastDecile = -1
    private var lastLabel = ""
    private var lastPlainTime = -Double.infinity
    private var lastLiveTime = -Double.infinity

    init(console: Console, live: Bool) { self.console = console; self.live = live }

    static func bar(_ fraction: Double, width: Int = 24) -> String {
        let f = min(1, max(0, fraction.isFinite ? fraction : 0))
        let filled = Int((f * Double(width)).rounded(.down))
        let pct = String(Int((f * 100).rounded(.down))).leftPadded(3)
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] " + pct + " %"
    }

    /// `fraction` 0…1, what is happening, at `time` seconds since the start.
    func update(_ fraction: Double, _ label: String, at time: Double) {
        let line = Self.bar(fraction) + "  " + label
        if live {
            // at most ten redraws a second (and always the last one)
            guard line != lastLine, fraction >= 1 || time - lastLiveTime >= 0.1 || !drawn else { return }
            lastLiveTime = time
            console.error((drawn ? "\u{1B}[1A\u{1B}[2K" : "") + line)
            drawn = true
            lastLine = line
        } else {
            let decile = Int((min(1, max(0, fraction)) * 10).rounded(.down))
            let changed = label != lastLabel && time - lastPlainTime >= 2
            guard decile > lastDecile || changed else { return }
            console.error(line)
            lastDecile = max(lastDecile, decile); lastLabel = label; lastPlainTime = time
        }
    }

    /// A line of guidance (above the bar on a terminal).
    func message(_ text: String) {
        if live && drawn {
            console.error("\u{1B}[1A\u{1B}[2K" + text)
            console.error(lastLine)
        } else {
            console.error(text)
        }
    }

    /// Leaves the bar as it is and moves on.
    func done() { drawn = false; lastLine = "" }
}

