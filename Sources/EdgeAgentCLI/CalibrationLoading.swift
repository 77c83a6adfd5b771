import EdgeBus
import EdgeChips
import EdgeConfig
import EdgeEngine
import EdgeFusion

/// What the chips of a board are, to tie calibrations to them: for each
/// chip id the ``CalibrationOrigin`` a calibration measured on it now would
/// record.
struct BoardChips {
    var board: String
    var bus: String
    var simulated: Bool
    var origins: [String: CalibrationOrigin]

    /// From the profile alone (no bus access): board, bus, kind, address and,
    /// for a simulated board, each chip's simulation identity.
    static func of(profile: BoardProfile, profilePath: String?) throws -> BoardChips {
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
    static func of<B: I2CBus>(profile: BoardProfile, profilePath: String?, reading bus: B) throws -> BoardChips {
        var chips = try of(profile: profile, profilePath: profilePath)
        for chip in profile.chips where chip.behind == nil {
            if let id = try? bus.readRegister(chip.address, identityRegister(chip.kind)) {
                chips.origins[chip.id]?.identity = id
                chips.origins[chip.id]?.part = partName(chip.kind, identity: id)
            }
        }
        return chips
    }

    /// MPU-6050 WHO_AM_I (0x75), BMP280 id (0xD0), QMC5883L CHIP_ID (0x0D).
    static func identityRegister(_ kind: ChipSpec.Kind) -> UInt8 {
        switch kind {
        case .mpu6050: return MPU6050Register.whoAmI.rawValue
        case .bmp280: return BMP280Register.id.rawValue
        case .qmc5883l: return QMC5883LRegister.chipID.rawValue
        // No registers: command 0xA0 clocks out PROM word 0, whose high byte
        // carries the CRC nibble and version bits [11:8].
        case .ms5837: return MS5837Command.promRead(word: 0).byte
        }
    }

    /// The part an identity register names, as the drivers call it.
    static func partName(_ kind: ChipSpec.Kind, identity: UInt8) -> String? {
        switch kind {
        case .mpu6050: return MPU6050Variant.lookup(whoAmI: identity)?.description
        case .bmp280: return BMP280Variant.lookup(chipID: identity)?.part
        case .qmc5883l: return identity == QMC5883LBits.chipID ? "QMC5883L" : nil
        case .ms5837: return identity & 0x0F == MS5837Variant.ms5837_30ba.versionCode >> 3 ? "MS5837-30BA" : nil
        }
    }
}

/// A calibration file whose chips are not this board's: loading it would
/// make the readings worse. Says what differs and what to do.
struct CalibrationMismatch: Error, CustomStringConvertible {
    var path: String
    /// Per chip id, what differs.
    var differences: [(chip: String, what: [String])]
    var description: String {
        var s = "\(path) is the calibration of other chips than this board's, so it is not loaded:"
        for d in differences { s += "\n  \(d.chip): " + d.what.joined(separator: "; ") }
        s += "\nA calibration applies only to the chips it was measured on. Calibrate these chips into their own file "
            + "(`edge-agent calibrate gyro|accel|mag --output FILE`, docs/calibration.md) and point calibration_file at it, "
            + "or move \(path) away to run uncalibrated."
        return s
    }
}

extension CalibrationLoader {
    /// The calibration file in the engine's form, checked against the chips
    /// of `session`'s board (``check(_:path:against:warn:)``); nil or a
    /// missing file is no calibration. With `readIdentity` the chips'
    /// identity registers are read through the session's bus first (only
    /// while nothing else uses the bus: at start-up, not on SIGHUP).
    ///
    /// Warns (`warn`, one line each) about entries it cannot verify or that
    /// name chips the board lacks, and - for a real board - about IMUs and
    /// magnetometers with no calibration (``uncalibratedWarning(profile:file:path:)``).
    static func load(_ path: String?, for session: BoardSession, readIdentity: Bool = true,
                     warn: (String) -> Void = { _ in }) throws -> EngineCalibration {
        let profilePath = session.simulated != nil ? session.profileSource : nil
        let chips = readIdentity
            ? try BoardChips.of(profile: session.profile, profilePath: profilePath, reading: session.bus)
            : try BoardChips.of(profile: session.profile, profilePath: profilePath)
        let file = try path.flatMap { p throws(ConfigError) in try CalibrationFile.loadIfPresent(from: p) }
        let usable = try file.map { try check($0, path: path ?? "", against: chips, warn: warn) } ?? CalibrationFile()
        if !chips.simulated, let w = uncalibratedWarning(profile: session.profile, file: usable, path: path) { warn(w) }
        return engineCalibration(usable, profile: session.profile)
    }

    /// The entries of `file` that belong to `chips`' board. Throws
    /// ``CalibrationMismatch`` when any entry was measured on other chips;
    /// warns about entries with no `measured_on` (version 1 files: used, as
    /// before) and about chips the board does not have (ignored).
    static func check(_ file: CalibrationFile, path: String, against chips: BoardChips,
                      warn: (String) -> Void) throws -> CalibrationFile {
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
        if !mismatches.isEmpty { throw CalibrationMismatch(path: path, differences: mismatches) }
        if !unverified.isEmpty {
            warn("\(path): the calibration of \(unverified.joined(separator: ", ")) does not say which chip it was measured on "
                 + "(written by an older edge-agent): used as this board's; recalibrate to tie it to these chips")
        }
        return out
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
        let magnetometer = profile?.chip(.qmc5883l)?.id
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
enum CalibrationLoader {
    /// Without a board to check against: every entry as it is (tests, tools
    /// that have no board). The agent uses ``load(_:for:readIdentity:warn:)``.
    static func load(_ path: String?) throws -> EngineCalibration {
        guard let path, let file = try CalibrationFile.loadIfPresent(from: path) else { return EngineCalibration() }
        return engineCalibration(file)
    }

    /// ``load(_:)`` under its old name.
    static func loadFile(_ path: String) throws -> EngineCalibration {
        engineCalibration(try CalibrationFile.load(from: path))
    }
}
