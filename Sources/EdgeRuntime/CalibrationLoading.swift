import EdgeBus
import EdgeChips
import EdgeConfig
import EdgeEngine
import EdgeFusion
import EdgeLocations

/// What the chips of a board are, to tie calibrations to them: for each
/// chip id the ``CalibrationOrigin`` a calibration measured on it now would
/// record.
package struct BoardChips {
    package var board: String
    package var bus: String
    package var simulated: Bool
    package var origins: [String: CalibrationOrigin]

    /// From the profile alone (no bus access): board, bus, kind, address and,
    /// for a simulated board, each chip's simulation identity.
    package static func of(profile: BoardProfile, profilePath: String?) throws -> BoardChips {
        let bus: String
        var simulation: [String: CalibrationOrigin.Simulation] = [:]
        switch profile.bus {
        case .linux(let n): bus = "/dev/i2c-\(n)"
        case .simulated:
            bus = "simulated"
            simulation = try SimulatedBoardFactory.chipIdentities(profile: profile, profilePath: profilePath ?? ".")
        }
        var origins: [String: CalibrationOrigin] = [:]
        for chip in profile.chips {
            origins[chip.id] = CalibrationOrigin(board: profile.name, bus: bus, chip: chip.kind.rawValue, address: chip.address,
                                                 simulation: simulation[chip.id])
        }
        return BoardChips(board: profile.name, bus: bus, simulated: profile.bus == .simulated, origins: origins)
    }

    /// Also reads each chip's identity register through `bus` (chips behind
    /// another chip's bypass are left unknown; so is a chip that does not answer).
    package static func of<B: I2CBus>(profile: BoardProfile, profilePath: String?, reading bus: B) throws -> BoardChips {
        var chips = try of(profile: profile, profilePath: profilePath)
        for chip in profile.chips where chip.behind == nil {
            if let id = try? bus.readRegister(chip.address, identityRegister(chip.kind)) {
                chips.origins[chip.id]?.identity = id
                chips.origins[chip.id]?.part = partName(chip.kind, identity: id)
            }
        }
        return chips
    }

    /// MPU-6050 WHO_AM_I (0x75), BMP280/BME280 id (0xD0), QMC5883L CHIP_ID
    /// (0x0D), HMC5883L identification A (0x0A).
    package static func identityRegister(_ kind: ChipSpec.Kind) -> UInt8 {
        switch kind {
        case .mpu6050: return MPU6050Register.whoAmI.rawValue
        case .bmp280, .bme280: return BMP280Register.id.rawValue
        case .qmc5883l: return QMC5883LRegister.chipID.rawValue
        case .hmc5883l: return HMC5883LRegister.identificationA.rawValue
        // No registers: command 0xA0 clocks out PROM word 0, whose high byte
        // carries the CRC nibble and version bits [11:8].
        case .ms5837: return MS5837Command.promRead(word: 0).byte
        }
    }

    /// The part an identity register names, as the drivers call it.
    package static func partName(_ kind: ChipSpec.Kind, identity: UInt8) -> String? {
        switch kind {
        case .mpu6050: return MPU6050Variant.lookup(whoAmI: identity)?.description
        case .bmp280: return BMP280Variant.lookup(chipID: identity)?.part
        case .bme280: return identity == BME280Bits.chipID ? "BME280" : nil
        case .qmc5883l: return identity == QMC5883LBits.chipID ? "QMC5883L" : nil
        case .hmc5883l: return identity == HMC5883LBits.identification[0] ? "HMC5883L" : nil
        case .ms5837: return identity & 0x0F == MS5837Variant.ms5837_30ba.versionCode >> 3 ? "MS5837-30BA" : nil
        }
    }
}

/// A calibration file whose chips are not this board's: loading it would
/// make the readings worse. Says what differs and what to do.
package struct CalibrationMismatch: Error, CustomStringConvertible {
    package var path: String
    /// Per chip id, what differs.
    package var differences: [(chip: String, what: [String])]
    package var description: String {
        var s = "\(path) is the calibration of other chips than this board's, so it is not loaded:"
        for d in differences { s += "\n  \(d.chip): " + d.what.joined(separator: "; ") }
        s += "\nA calibration applies only to the chips it was measured on. Calibrate these chips into their own file "
            + "(`edge-agent calibrate gyro|accel|mag --output FILE`, docs/calibration.md) and point calibration_file at it, "
            + "or move \(path) away to run uncalibrated."
        return s
    }
}

/// `calibration_required` (or `run --require-calibration`) and a chip that
/// can be calibrated has no calibration measured on it: the agent refuses
/// to start. Says which chips and why, and what to do.
package struct CalibrationRequired: Error, CustomStringConvertible {
    /// Chip id → why it has no usable calibration.
    package var uncalibrated: [(chip: String, reason: String)]
    package var description: String {
        var s = "calibration is required (calibration_required in the configuration, or --require-calibration), "
            + "but these chips have no calibration measured on them, so the agent does not start:"
        for u in uncalibrated { s += "\n  \(u.chip): \(u.reason)" }
        s += "\nCalibrate them (`edge-agent calibrate gyro|accel|mag --output FILE`, docs/calibration.md) and name the file "
            + "in calibration_file (configuration or board profile), or drop the requirement to run uncalibrated."
        return s
    }
}

/// The calibration the agent runs with: per chip, the entry of the first
/// calibration file that was measured on that chip, and for every chip that
/// can be calibrated (MPU-6050, QMC5883L) but is not, why.
package struct AgentCalibration {
    /// In the engine's form; `engine.uncalibrated` carries the reasons
    /// into the `devices` snapshot.
    package var engine: EngineCalibration
    /// Chip id → the file its calibration came from.
    package var sources: [String: String] = [:]
    /// A chip that runs uncalibrated, and why.
    package struct Uncalibrated: Equatable {
        package var chip: String
        package var reason: String
        /// A calibration file had an entry for it, measured on other chips
        /// (worth a warning at start).
        package var skipped: Bool
        /// An accessory IMU (not the board's own motion).
        package var accessory: Bool
        /// Shown in the status line: a calibration was skipped, or it is a
        /// primary chip (the board's IMU or magnetometer). An accessory IMU
        /// that was never calibrated is listed at start and in the devices
        /// snapshot only.
        package var notable: Bool { skipped || !accessory }
    }
    /// Sorted by chip id.
    package var uncalibrated: [Uncalibrated] = []

    /// The chips the status line names as uncalibrated (the notable ones).
    package var statusChips: [String] { uncalibrated.filter(\.notable).map(\.chip) }

    /// What `run` prints at start: one line per chip that can be calibrated.
    package var startLines: [String] {
        var lines: [String] = []
        for (chip, file) in sources.sorted(by: { $0.key < $1.key }) { lines.append("calibration: \(chip) from \(file)") }
        for u in uncalibrated { lines.append("calibration: \(u.chip) UNCALIBRATED: \(u.reason)") }
        return lines
    }
}

package extension CalibrationLoader {
    /// The calibration files of a run, in the order they are tried for each
    /// chip: the configuration's `calibration_file`, then the board
    /// profile's (each path already resolved next to its file).
    struct Files {
        package var configuration: String?
        package var board: String?
        package init(configuration: String? = nil, board: String? = nil) { self.configuration = configuration; self.board = board }

        /// From a selection: `calibration_file` of the configuration
        /// (relative to it) and of the board profile (relative to it).
        package init(_ s: BoardSession.Selection) {
            configuration = s.config.calibrationFile.map { EngineSetup.path($0, config: s.configPath) }
            board = s.profile.calibrationFile.map { f in s.profilePath.map { BoardLocator.resolve(f, nextTo: $0) } ?? f }
        }

        /// Where the agent keeps what the continuous magnetometer
        /// calibration learned: next to the first calibration file, with
        /// `.learned` before its extension (`calibration.json` →
        /// `calibration.learned.json`); none without a calibration file.
        package var learned: String? {
            guard let first = configuration ?? board else { return nil }
            let slash = first.lastIndex(of: "/").map { first.index(after: $0) } ?? first.startIndex
            if let dot = first[slash...].lastIndex(of: "."), dot > slash {
                return String(first[..<dot]) + ".learned" + String(first[dot...])
            }
            return first + ".learned"
        }

        package var list: [(path: String, key: String)] {
            [configuration.map { ($0, "calibration_file of the configuration") },
             board.map { ($0, "calibration_file of the board profile") }].compactMap { $0 }
        }
    }

    /// The agent's calibration for `session`'s board from `files`: for each
    /// chip, the entry of the first file (configuration, then board profile)
    /// that was measured on that chip (``check(_:path:against:warn:)`` tells);
    /// an entry of other chips is skipped, never applied, and the chip runs
    /// uncalibrated with the reason - the agent still starts, unless
    /// `required`, when any chip that can be calibrated lacks a calibration
    /// (``CalibrationRequired``). A missing file is no calibration; an
    /// unreadable or invalid one is a ``ConfigError``. With `readIdentity`
    /// the chips' identity registers are read through the session's bus
    /// first (only while nothing else uses the bus: at start-up, not on SIGHUP).
    static func resolve(_ files: Files, for session: BoardSession, readIdentity: Bool = true, required: Bool = false,
                        warn: (String) -> Void = { _ in }) throws -> AgentCalibration {
        let profilePath = session.simulated != nil ? session.profileSource : nil
        let chips = readIdentity
            ? try BoardChips.of(profile: session.profile, profilePath: profilePath, reading: session.bus)
            : try BoardChips.of(profile: session.profile, profilePath: profilePath)
        var merged = CalibrationFile()
        var sources: [String: String] = [:]
        var skipped: [String: [String]] = [:]      // chip id → why each file's entry was not used
        for (path, _) in files.list {
            guard let file = try CalibrationFile.loadIfPresent(from: path) else { continue }
            let split = partition(file, path: path, against: chips, warn: warn)
            for (id, entry) in split.usable.chips.sorted(by: { $0.key < $1.key }) where merged.chips[id] == nil {
                merged.chips[id] = entry
                sources[id] = path
            }
            for (id, what) in split.mismatches where merged.chips[id] == nil {
                skipped[id, default: []].append("\(path) was measured on other chips (\(what.joined(separator: "; ")))")
            }
        }
        if let path = files.learned, let file = try CalibrationFile.loadIfPresent(from: path) {
            adoptLearned(file, path: path, chips: chips, into: &merged, sources: &sources, warn: warn)
        }
        var uncalibrated: [AgentCalibration.Uncalibrated] = []
        for chip in session.profile.chips.sorted(by: { $0.id < $1.id }) {
            let entry = merged[chip: chip.id]
            let calibrated: Bool
            switch chip.kind {
            case .mpu6050: calibrated = entry?.gyro != nil || entry?.accel != nil
            case .qmc5883l: calibrated = entry?.mag != nil
            default: continue        // nothing to calibrate
            }
            if calibrated { continue }
            sources[chip.id] = nil
            let reason: String
            if let s = skipped[chip.id] {
                reason = s.joined(separator: "; ")
            } else if files.list.isEmpty {
                reason = "no calibration_file in the configuration or the board profile"
            } else {
                reason = "no calibration for it in " + files.list.map(\.path).joined(separator: " or ")
            }
            uncalibrated.append(.init(chip: chip.id, reason: reason, skipped: skipped[chip.id] != nil, accessory: chip.role == .accessory))
        }
        if required && !uncalibrated.isEmpty { throw CalibrationRequired(uncalibrated: uncalibrated.map { ($0.chip, $0.reason) }) }
        if !chips.simulated, let w = uncalibratedWarning(profile: session.profile, file: merged, path: files.list.first?.path) { warn(w) }
        var engine = engineCalibration(merged, profile: session.profile)
        for u in uncalibrated { engine.uncalibrated[u.chip] = u.reason }
        return AgentCalibration(engine: engine, sources: sources, uncalibrated: uncalibrated)
    }

    /// The magnetometer calibrations the agent learned (``Files/learned``)
    /// that were learned on these chips and are newer than the calibration
    /// file's (a guided `calibrate mag` after them wins): they replace its
    /// `mag` section. Learned on other chips: not used, with a warning (the
    /// field is learned again).
    static func adoptLearned(_ file: CalibrationFile, path: String, chips: BoardChips, into merged: inout CalibrationFile,
                             sources: inout [String: String], warn: (String) -> Void) {
        let split = partition(file, path: path, against: chips, warn: warn)
        for (id, what) in split.mismatches {
            warn("\(path): the magnetometer calibration learned for \(id) was learned on other chips (\(what.joined(separator: "; "))): "
                 + "not used; the agent learns these chips' field again as the board turns")
        }
        for (id, entry) in split.usable.chips.sorted(by: { $0.key < $1.key }) {
            guard let learned = entry.mag else { continue }
            if let guided = merged.chips[id]?.mag, guided.created > learned.created { continue }
            merged.chips[id, default: ChipCalibration(measuredOn: entry.measuredOn)].mag = learned
            sources[id] = path
        }
    }

    /// Saves what the continuous calibration learned on `chip` (already
    /// folded into the chip-frame calibration:
    /// `MagnetometerSelfCalibration.learnedCalibration`) to `path`, tied to
    /// the chip it was learned on, so that the next start begins calibrated
    /// and other chips refuse it.
    static func saveLearned(_ learned: MagnetometerCalibration, chip: String, chips: BoardChips, to path: String,
                            created: String) throws(CalibrationFileError) {
        var file = CalibrationFile()
        file.set(mag: learned, for: chip, created: created, measuredOn: chips.origins[chip])
        try file.save(to: path)
    }

    /// The entries of `file` that belong to `chips`' board, and per chip id
    /// what differs for entries measured on other chips. Warns about entries
    /// with no `measured_on` (version 1 files: used, as before) and about
    /// chips the board does not have (ignored).
    static func partition(_ file: CalibrationFile, path: String, against chips: BoardChips,
                          warn: (String) -> Void) -> (usable: CalibrationFile, mismatches: [(String, [String])]) {
        var out = CalibrationFile()
        var mismatches: [(String, [String])] = []
        var unverified: [String] = []
        for (id, entry) in file.chips.sorted(by: { $0.key < $1.key }) {
            guard let current = chips.origins[id] else {
                warn("\(path): the calibration of \(id) is ignored: the board '\(chips.board)' has no such chip")
                continue
            }
            if let origin = entry.measuredOn {
                let d = origin.differences(from: current)
                if !d.isEmpty { mismatches.append((id, d)); continue }
            } else {
                unverified.append(id)
            }
            out.chips[id] = entry
        }
        if !unverified.isEmpty {
            warn("\(path): the calibration of \(unverified.joined(separator: ", ")) does not say which chip it was measured on "
                 + "(written by an older edge-agent): used as this board's; recalibrate to tie it to these chips")
        }
        return (out, mismatches)
    }

    /// The entries of `file` that belong to `chips`' board (``partition``).
    /// Throws ``CalibrationMismatch`` when any entry was measured on other
    /// chips (tools that are given one file, such as `fuse`, refuse it).
    static func check(_ file: CalibrationFile, path: String, against chips: BoardChips,
                      warn: (String) -> Void) throws -> CalibrationFile {
        let split = partition(file, path: path, against: chips, warn: warn)
        if !split.mismatches.isEmpty { throw CalibrationMismatch(path: path, differences: split.mismatches) }
        return split.usable
    }

    /// One line when a real board runs with an IMU or a magnetometer
    /// uncalibrated (an uncalibrated accelerometer's bias shows as user
    /// acceleration at rest, a magnetometer's hard iron as a wrong heading);
    /// nil when everything that can be calibrated is.
    static func uncalibratedWarning(profile: BoardProfile, file: CalibrationFile, path: String?) -> String? {
        var missing: [String] = []
        for chip in profile.chips {
            let entry = file[chip: chip.id]
            switch chip.kind {
            case .mpu6050 where entry?.accel == nil:
                missing.append("accelerometer not calibrated — run `edge-agent calibrate accel\(chip.role == .accessory ? " --chip \(chip.id)" : "")`")
            case .qmc5883l where entry?.mag == nil:
                missing.append("magnetometer not calibrated — run `edge-agent calibrate mag`")
            default: break
            }
        }
        guard !missing.isEmpty else { return nil }
        return missing.joined(separator: "; ") + " (" + (path.map { "calibration file \($0)" } ?? "no calibration_file configured") + ")"
    }

    /// The file (already checked) in the engine's form: per-chip values in
    /// the chip frame, for the chips of `profile`. A missing section is identity.
    static func engineCalibration(_ file: CalibrationFile, profile: BoardProfile? = nil) -> EngineCalibration {
        var out = EngineCalibration()
        let magnetometer = (profile?.chip(.qmc5883l) ?? profile?.chip(.hmc5883l))?.id
        for (id, chip) in file.chips {
            if chip.gyro != nil || chip.accel != nil {
                let g = chip.gyroCalibration, a = chip.accelCalibration
                out.imu[id] = EngineCalibration.IMU(gyroBias: g.bias, accelBias: a.bias, accelScale: a.scale)
            }
            if chip.mag != nil, magnetometer.map({ $0 == id }) ?? id.hasPrefix("qmc5883l") { out.magnetometer = chip.magCalibration }
        }
        return out
    }

    /// The magnetometer calibration of `chip` carried into the board frame
    /// (the mounting's rotation R: hard iron R·h, soft iron R·S·Rᵀ), for
    /// tools that get board-frame samples (`fuse`).
    static func boardFrameMagnetometer(_ c: MagnetometerCalibration, chip: ChipSpec) -> MagnetometerCalibration {
        let r = Matrix3(rows: chip.mounting.matrix)
        return MagnetometerCalibration(hardIron: r * c.hardIron, softIron: r * c.softIron * r.transposed,
                                       fieldStrength: c.fieldStrength, residual: c.residual)
    }
}

/// Reads the calibration file into the engine's form (none: no calibration).
package enum CalibrationLoader {
    /// Without a board to check against: every entry as it is (tests, tools
    /// that have no board). The agent uses ``load(_:for:readIdentity:warn:)``.
    package static func load(_ path: String?) throws -> EngineCalibration {
        guard let path, let file = try CalibrationFile.loadIfPresent(from: path) else { return EngineCalibration() }
        return engineCalibration(file)
    }

    /// ``load(_:)`` under its old name.
    package static func loadFile(_ path: String) throws -> EngineCalibration {
        engineCalibration(try CalibrationFile.load(from: path))
    }
}
