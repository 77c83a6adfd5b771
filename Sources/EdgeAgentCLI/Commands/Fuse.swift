#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import EdgeCommandLine
import EdgeConfig
import EdgeFusion
import EdgeRuntime

/// `edge-agent fuse`: runs the attitude filter offline over a CSV recording
/// and writes Core Motion-style samples, one row per input row.
public enum FuseCommand: Subcommand {
    public static let name = "fuse"
    public static let summary = "Fuse a gyro/accel/mag CSV recording into attitude (offline)"
    public static let help = """
    Usage: edge-agent fuse --input IN.csv --output OUT.csv [--mode 9d|6d]
                           [--frame FRAME] [--declination DEG | --location LAT,LON]
                           [--mag-calibration FILE [--board NAME|FILE] [--config FILE] [--chip ID]]
                           [--self-calibration on|off] [--self-calibration-min-offset UT]
                           [--self-calibration-tau-mag S] [--self-calibration-soft-iron on|off]
                           [--offline] [--stats]

    Runs the attitude filter (VQF: gyroscope integration, accelerometer
    inclination correction, gyroscope-bias estimation, magnetometer heading
    with disturbance rejection) over a recording and writes one output row
    per input row. By default each row is what the agent would have served
    at that moment (causal: only earlier samples); --offline smooths with
    the samples after it too.

    Input CSV: either sample layout the tools write, told apart by its header
      t,gx,gy,gz,ax,ay,az,mx,my,mz   (simulate --csv)
        t s (increasing; irregular intervals allowed), g rad/s, a m/s²
        (specific force: +9.81 on z when flat), m µT. Empty mag cells or
        mx=my=mz=0 mean no magnetometer sample on that row (the magnetometer
        may run slower than the IMU).
      timestampNs,accelX,accelY,accelZ,gyroX,gyroY,gyroZ,magX,magY,magZ,
      orientationW,orientationX,orientationY,orientationZ   (record --csv)
        monotonic ns, m/s², rad/s, µT; empty mag cells between magnetometer
        samples; the recorded orientation is ignored; t = timestampNs / 1e9.
      A file that stops part-way through its last row (a power loss) is
      fused up to the last complete row, with a warning.

    Output CSV, header  t,qw,qx,qy,qz,roll_rad,pitch_rad,yaw_rad,heading_deg,
      gravity_x_g,gravity_y_g,gravity_z_g,user_accel_x_g,user_accel_y_g,
      user_accel_z_g,rotation_rate_x_rad_s,rotation_rate_y_rad_s,
      rotation_rate_z_rad_s,mag_x_ut,mag_y_ut,mag_z_ut,mag_accuracy
      q = sensor-to-earth orientation in FRAME (v_earth = q v q*); the rest
      as Core Motion's CMDeviceMotion (gravity flat = (0,0,-1) g; mag_accuracy
      -1 uncalibrated, 0 low, 1 medium, 2 high).

    Options:
      --input FILE            input CSV (required)
      --output FILE           output CSV (required; overwritten)
      --mode 9d|6d            9d uses the magnetometer (default); 6d ignores it
      --frame FRAME           xArbitraryZVertical, xArbitraryCorrectedZVertical,
                              xMagneticNorthZVertical (X north, Y west, Z up;
                              default in 9d), xTrueNorthZVertical (needs
                              --declination or --location); 6d: only
                              xArbitraryZVertical (its default)
      --declination DEG       magnetic declination, degrees east of true north
      --location LAT,LON      degrees; declination from a coarse dipole model
      --mag-calibration FILE  the calibration file `edge-agent calibrate mag` writes
                              (calibration.json, docs/calibration.md): its
                              magnetometer calibration is applied to the
                              samples. It is in the chip's frame and tied to
                              the chips it was measured on, so it needs the
                              board the recording was made on:
      --board FILE            that board's profile (default: the configuration's
                              board); its magnetometer's mounting carries the
                              calibration into the board frame, and a file
                              measured on other chips is refused
      --config FILE           the configuration naming the board (default: as
                              for `run`)
      --chip ID               the magnetometer, e.g. qmc5883l@0x0d (default: the
                              board's QMC5883L)
      --self-calibration on|off
                              on (default, as the agent runs): learn the
                              magnetometer's hard iron from the gyroscope as
                              the recording turns (docs/fusion.md) and fuse
                              the field with it removed; off: the field as
                              it comes, VQF sample for sample
      --self-calibration-min-offset UT
                              smallest learned offset removed, µT (default 5:
                              smaller ones are left to the guided calibration)
      --self-calibration-soft-iron on|off
                              on (default, as the agent's
                              fusion.self_calibration_soft_iron): learn the
                              soft iron too, removed once turns about every
                              axis have shown it (docs/fusion.md); off: the
                              hard iron alone
      --self-calibration-tau-mag S
                              heading correction time constant with
                              --self-calibration on, s (default 30, chosen
                              leave-one-trial-out on BROAD; off: VQF's 9)
      --offline               smooth the whole recording (VQF's offline mode,
                              docs/fusion.md): the filter forwards and
                              backwards over the time-reversed data with the
                              gyroscope negated, the two bias estimates
                              combined, the accelerometer low-passed with zero
                              phase, the heading filtered both ways; with
                              --self-calibration on, a hard iron that stays
                              longer than the gyroscope can bridge (60 s) is
                              removed from the start. On BROAD: better
                              inclination and disturbed heading than the
                              causal filter, worse undisturbed heading (as
                              VQF's offline mode; docs/fusion.md)
      --stats                 print samples processed and fusion_time_s=SECONDS:
                              CPU time of all per-sample work (filter updates,
                              frame conversion, derived outputs), without file
                              I/O and start-up; fusion_wall_s is the wall time.
                              Without --offline also filter_time_per_sample_us:
                              a second pass timing the filter alone (updates,
                              its 6D and 9D quaternions, bias and flags kept
                              per sample: what VQF's batch call computes), for
                              comparing like with like (bench/vqf-compare.py)

    Example:
      edge-agent fuse --input walk.csv --output walk.fused.csv --stats
    """

    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        guard let input = try arguments.option("--input") else { throw UsageError("missing --input IN.csv") }
        guard let output = try arguments.option("--output") else { throw UsageError("missing --output OUT.csv") }
        let modeText = try arguments.option("--mode") ?? "9d"
        guard modeText == "9d" || modeText == "6d" else { throw UsageError("--mode must be 9d or 6d, got '\(modeText)'") }
        let useMag = modeText == "9d"
        let frameText = try arguments.option("--frame")
        let declination = try arguments.double("--declination", in: -180...180)
        let locationText = try arguments.option("--location")
        let calibrationPath = try arguments.option("--mag-calibration")
        // --board/--bus/--config/--chip only mean something with a calibration
        var boardArguments = Arguments([], command: "fuse")
        for name in ["--board", "--bus", "--config"] {
            if let v = try arguments.option(name) { boardArguments = Arguments(boardArguments.remaining + [name, v], command: "fuse") }
        }
        let chipID = try arguments.option("--chip")
        let stats = arguments.flag("--stats")
        let offline = arguments.flag("--offline")
        let selfCalibrationText = try arguments.option("--self-calibration") ?? "on"
        let minimumOffset = try arguments.double("--self-calibration-min-offset", in: 0...1000)
        let tauMag = try arguments.double("--self-calibration-tau-mag", in: 0.01...10_000)
        let softIronText = try arguments.option("--self-calibration-soft-iron") ?? "on"
        guard softIronText == "on" || softIronText == "off" else {
            throw UsageError("--self-calibration-soft-iron must be on or off, got '\(softIronText)'")
        }
        guard selfCalibrationText == "on" || selfCalibrationText == "off" else {
            throw UsageError("--self-calibration must be on or off, got '\(selfCalibrationText)'")
        }
        try arguments.finish()
        if calibrationPath == nil && (!boardArguments.remaining.isEmpty || chipID != nil) {
            throw UsageError("--board, --bus, --config and --chip choose the chips of --mag-calibration FILE; give it too, or leave them out")
        }
        var probe = boardArguments
        let boardFiles = [try probe.option("--board").map { OutputFiles.Named("--board", $0) },
                          try probe.option("--config").map { OutputFiles.Named("--config", $0) }]
        try OutputFiles.refuseOverlaps(outputs: [.init("--output", output)],
                                       inputs: [.init("--input", input), calibrationPath.map { .init("--mag-calibration", $0) }] + boardFiles)

        var frame: ReferenceFrame = useMag ? .xMagneticNorthZVertical : .xArbitraryZVertical
        if let frameText {
            guard let f = ReferenceFrame(rawValue: frameText) else {
                throw UsageError("unknown --frame '\(frameText)'; one of "
                    + ReferenceFrame.allCases.map(\.rawValue).joined(separator: ", "))
            }
            frame = f
        }
        if !useMag && frame.needsMagnetometer {
            throw UsageError("--frame \(frame.rawValue) needs the magnetometer; --mode 6d offers xArbitraryZVertical only")
        }
        if declination != nil && locationText != nil {
            throw UsageError("give --declination or --location, not both")
        }
        var settings = AttitudeFilter.Settings()
        settings.magnetometerSelfCalibration = selfCalibrationText == "on"
        if let tauMag { settings.tauMagSelfCalibrated = tauMag }
        if let declination { settings.declination = declination }
        if let locationText {
            let parts = locationText.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 2, let lat = Double(parts[0]), let lon = Double(parts[1]),
                  (-90...90).contains(lat), (-180...180).contains(lon) else {
                throw UsageError("--location expects LAT,LON in degrees (e.g. 52.51,13.32), got '\(locationText)'")
            }
            settings.declination = MagneticDeclination.dipoleEstimate(latitude: lat, longitude: lon)
        }
        if frame == .xTrueNorthZVertical && settings.declination == nil {
            throw UsageError("--frame xTrueNorthZVertical needs --declination DEG or --location LAT,LON")
        }
        if let calibrationPath {
            settings.magnetometerCalibration = try magnetometerCalibration(calibrationPath, &boardArguments, chipID: chipID, console: console)
        }

        let (recording, cut) = try FuseIO.parse(try FuseIO.readFile(input), path: input)
        if let cut { console.error("edge-agent fuse: warning: \(cut)") }
        let n = recording.count
        var rows = [FusedRow](repeating: FusedRow(), count: n)

        // CPU time of this thread (what the work costs, not inflated when the
        // machine is busy and we are descheduled), and wall time beside it
        let wallStart = clockSeconds(CLOCK_MONOTONIC), start = clockSeconds(CLOCK_THREAD_CPUTIME_ID)
        var learningSettings = MagnetometerSelfCalibration.Settings()
        if let minimumOffset { learningSettings.minimumOffset = minimumOffset }
        learningSettings.softIron = softIronText == "on"
        if offline {
            smooth(recording, settings: settings, learning: learningSettings, useMag: useMag, frame: frame, into: &rows)
        } else {
            fuse(recording, settings: settings, learning: learningSettings, useMag: useMag, frame: frame, into: &rows)
        }
        let elapsed = clockSeconds(CLOCK_THREAD_CPUTIME_ID) - start, wall = clockSeconds(CLOCK_MONOTONIC) - wallStart

        try FuseIO.write(rows, recording: recording, to: output)
        if useMag && recording.magCount == 0 && frame.needsMagnetometer && n > 0 {
            console.error("edge-agent fuse: warning: \(input) has no magnetometer samples; "
                + "the heading in \(frame.rawValue) is arbitrary (use --mode 6d)")
        }
        if stats {
            console.print("samples=\(n)")
            console.print("mag_samples=\(useMag ? recording.magCount : 0)")
            console.print("frame=\(frame.rawValue)")
            console.print("fusion_wall_s=\(wall)")
            console.print("fusion_time_s=\(elapsed)")
            if n > 0 { console.print("fusion_time_per_sample_us=\(elapsed / Double(n) * 1e6)") }
            if n > 0 && !offline {
                let filterOnly = filterOnlySeconds(recording, settings: settings, learning: learningSettings, useMag: useMag)
                console.print("filter_time_per_sample_us=\(filterOnly / Double(n) * 1e6)")
            }
        }
        return 0
    }

    /// The magnetometer calibration of the calibration file at `path`, checked
    /// against the board's chips and carried into the board frame.
    static func magnetometerCalibration(_ path: String, _ boardArguments: inout Arguments, chipID: String?,
                                        console: Console) throws -> MagnetometerCalibration {
        let selection = try BoardSession.select(&boardArguments, environment: ProcessInfo.processInfo.environment)
        guard let file = try CalibrationFile.loadIfPresent(from: path) else {
            throw FuseError("\(path): no such file (the calibration file `edge-agent calibrate mag` writes)")
        }
        let chips = try BoardChips.of(profile: selection.profile,
                                      profilePath: selection.profile.bus == .simulated ? selection.profilePath : nil)
        let usable = try CalibrationLoader.check(file, path: path, against: chips, warn: { console.error("edge-agent fuse: warning: " + $0) })
        let magnetometers = selection.profile.chips.filter { $0.kind == .qmc5883l }
        let chip: ChipSpec
        if let chipID {
            guard let c = magnetometers.first(where: { $0.id == chipID.lowercased() }) else {
                throw UsageError("--chip \(chipID): the board '\(selection.profile.name)' has no such magnetometer (it has: \(magnetometers.map(\.id).joined(separator: ", ")))")
            }
            chip = c
        } else {
            guard let c = selection.profile.chip(.qmc5883l) ?? magnetometers.first else {
                throw UsageError("the board '\(selection.profile.name)' (\(selection.profilePath ?? "--bus")) has no QMC5883L: give the board the recording was made on with --board FILE")
            }
            chip = c
        }
        guard let mag = usable[chip: chip.id]?.mag?.calibration else {
            let has = usable.chips.compactMap { id, c in c.mag != nil ? id : nil }.sorted()
            throw FuseError("\(path): no magnetometer calibration of \(chip.id)" + (has.isEmpty ? "" : " (it has one of \(has.joined(separator: ", ")): choose it with --chip)")
                + ": run `edge-agent calibrate mag` on that board")
        }
        return CalibrationLoader.boardFrameMagnetometer(mag, chip: chip)
    }

    /// The per-sample work, everything `fusion_time_s` measures: filter
    /// updates, frame conversion and the derived Core Motion outputs.
    static func fuse(_ r: Recording, settings: AttitudeFilter.Settings, learning learningSettings: MagnetometerSelfCalibration.Settings = .init(),
                     useMag: Bool, frame: ReferenceFrame, into rows: inout [FusedRow]) {
        rows.withUnsafeMutableBufferPointer { out in
            replay(r, settings: settings, learning: learningSettings, useMag: useMag) { i, filter, learning in
                let motion = filter.deviceMotion(in: frame)
                let a = motion.attitude
                out[i] = FusedRow(q: a.quaternion, roll: a.roll, pitch: a.pitch, yaw: a.yaw, heading: motion.heading,
                                  gravity: motion.gravity, userAcceleration: motion.userAcceleration,
                                  rotationRate: motion.rotationRate, magneticField: motion.magneticField.field,
                                  accuracy: Int8(learning.accuracy(guided: motion.magneticField.accuracy,
                                                                   fieldSeen: filter.state.magSamples > 0).rawValue))
            }
        }
    }

    /// Steps the learning and the filter through every row of `r` and calls
    /// `each(i, filter, learning)` after row i: the field of a row (none
    /// where the row has none, or all zero) goes through the guided
    /// calibration first when there is one. Both of `fuse`'s passes (the
    /// Core Motion rows and the filter alone) run through this one loop.
    @inline(__always)
    static func replay(_ r: Recording, settings: AttitudeFilter.Settings, learning learningSettings: MagnetometerSelfCalibration.Settings,
                       useMag: Bool, _ each: (Int, inout AttitudeFilter, inout MagneticFieldLearning) -> Void) {
        let n = r.count
        guard n > 0 else { return }
        // with the continuous calibration the guided one is applied first,
        // as the agent's magnetometer does, and the learning sees the result
        var filterSettings = settings.running
        let guided = settings.magnetometerSelfCalibration ? settings.magnetometerCalibration : nil
        if guided != nil { filterSettings.magnetometerCalibration = nil }
        r.t.withUnsafeBufferPointer { t in
        r.gyro.withUnsafeBufferPointer { gyro in
        r.accel.withUnsafeBufferPointer { accel in
        r.mag.withUnsafeBufferPointer { mag in
            // local to the closure: a variable it captured would be copied
            // (kilobytes) around every call that reads it
            var filter = AttitudeFilter(settings: filterSettings, sampleInterval: r.nominalInterval)
            filter.inputCalibration = guided
            var learning = MagneticFieldLearning(enabled: settings.magnetometerSelfCalibration, settings: learningSettings)
            learning.prepare(guided: guided)
            let hasGuided = guided != nil, g = guided ?? .identity
            var previous = t[0] - r.nominalInterval
            for i in 0..<n {
                let dt = t[i] - previous
                previous = t[i]
                let m = mag[i]
                let hasMag = useMag && !(m.x == 0 && m.y == 0 && m.z == 0) && !m.x.isNaN
                learning.update(&filter, gyro: gyro[i], accel: accel[i], mag: hasMag ? hasGuided ? g.apply(m) : m : nil, dt: dt)
                each(i, &filter, &learning)
            }
        }}}}
    }

    /// Thread CPU seconds of the filter alone over `r`: the same updates as
    /// ``fuse(_:settings:learning:useMag:frame:into:)`` (learning included
    /// when on), keeping per sample what VQF's `updateBatch` returns (6D and
    /// 9D quaternions, gyroscope bias and its uncertainty, the rest and
    /// disturbance flags) instead of the Core Motion row. For `--stats` only.
    static func filterOnlySeconds(_ r: Recording, settings: AttitudeFilter.Settings,
                                  learning learningSettings: MagnetometerSelfCalibration.Settings, useMag: Bool) -> Double {
        struct Kept { var q6 = Quaternion.identity, q9 = Quaternion.identity, bias = Vector3.zero, sigma = 0.0, rest = false, disturbed = false }
        var kept = [Kept](repeating: Kept(), count: r.count)
        let start = clockSeconds(CLOCK_THREAD_CPUTIME_ID)
        kept.withUnsafeMutableBufferPointer { out in
            replay(r, settings: settings, learning: learningSettings, useMag: useMag) { i, filter, _ in
                out[i] = Kept(q6: filter.quaternion6D, q9: filter.quaternion9D, bias: filter.gyroBias,
                              sigma: filter.gyroBiasUncertainty, rest: filter.isAtRest, disturbed: filter.isMagneticallyDisturbed)
            }
        }
        let elapsed = clockSeconds(CLOCK_THREAD_CPUTIME_ID) - start
        // Read what was kept, so no store is dead.
        var check = 0.0
        for k in kept { check += k.q9.w + k.q6.w + k.bias.x + k.sigma + (k.rest ? 1 : 0) + (k.disturbed ? 1 : 0) }
        return check.isNaN ? .nan : elapsed
    }

    /// `--offline`: the smoother over the whole recording, then the Core
    /// Motion outputs of each row from the smoothed attitude.
    static func smooth(_ r: Recording, settings: AttitudeFilter.Settings, learning: MagnetometerSelfCalibration.Settings,
                       useMag: Bool, frame: ReferenceFrame, into rows: inout [FusedRow]) {
        let n = r.count
        guard n > 0 else { return }
        let input = AttitudeSmoother.Input(t: r.t, gyro: r.gyro, accel: r.accel, mag: r.mag)
        let s = AttitudeSmoother.smooth(input, settings: settings, learning: learning, useMag: useMag)
        var view = AttitudeFilter(settings: settings, sampleInterval: r.nominalInterval)
        for i in 0..<n {
            view.show(s, at: i, gyro: r.gyro[i], accel: r.accel[i])
            let motion = view.deviceMotion(in: frame)
            let a = motion.attitude
            rows[i] = FusedRow(q: a.quaternion, roll: a.roll, pitch: a.pitch, yaw: a.yaw, heading: motion.heading,
                               gravity: motion.gravity, userAcceleration: motion.userAcceleration,
                               rotationRate: motion.rotationRate, magneticField: motion.magneticField.field,
                               accuracy: Int8(s.accuracy[i].rawValue))
        }
    }

    static func clockSeconds(_ clock: clockid_t) -> Double {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}

/// A bad input or output file: printed with the file (and line) it is about; exit status 1.
public struct FuseError: Error, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One output row.
struct FusedRow {
    var q = Quaternion.identity
    var roll = 0.0, pitch = 0.0, yaw = 0.0, heading = 0.0
    var gravity = Vector3.zero, userAcceleration = Vector3.zero, rotationRate = Vector3.zero, magneticField = Vector3.zero
    var accuracy: Int8 = -1
}

/// A parsed input recording, column-wise. `mag` is NaN where a row has none.
struct Recording {
    var t: [Double] = []
    var gyro: [Vector3] = []
    var accel: [Vector3] = []
    var mag: [Vector3] = []
    /// Byte range of each row's `t` text in the input, copied verbatim to the output.
    var tText: [Range<Int>] = []
    var source: [UInt8] = []
    var magCount = 0
    var count: Int { t.count }
    /// Mean sample interval (s): the first sample's dt and the filter's nominal interval.
    var nominalInterval: Double {
        guard count > 1, let first = t.first, let last = t.last, last > first else { return 0.01 }
        return (last - first) / Double(count - 1)
    }
}

enum FuseIO {
    static let inputColumns = ["t", "gx", "gy", "gz", "ax", "ay", "az", "mx", "my", "mz"]
    static let outputHeader = "t,qw,qx,qy,qz,roll_rad,pitch_rad,yaw_rad,heading_deg,"
        + "gravity_x_g,gravity_y_g,gravity_z_g,user_accel_x_g,user_accel_y_g,user_accel_z_g,"
        + "rotation_rate_x_rad_s,rotation_rate_y_rad_s,rotation_rate_z_rad_s,mag_x_ut,mag_y_ut,mag_z_ut,mag_accuracy\n"

    static func readFile(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw FuseError("\(path): cannot open (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FuseError("\(path): cannot stat (\(String(cString: strerror(errno))))") }
        if (st.st_mode & S_IFMT) == S_IFDIR { throw FuseError("\(path): is a directory") }
        var bytes = [UInt8]()
        bytes.reserveCapacity(Int(st.st_size) + 1)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw FuseError("\(path): read failed (\(String(cString: strerror(errno))))")
            }
            if got == 0 { break }
            bytes.append(contentsOf: chunk[0..<got])
        }
        return bytes
    }

    /// Parses the input CSV. Fields are located byte by byte and converted
    /// with `strtod` (C locale) in place; every IMU cell must be a finite
    /// number, magnetometer cells all three or none.
    static func parse(_ bytesIn: [UInt8], path: String) throws -> (Recording, cut: String?) {
        // The other layout (record --csv) goes through the sample CSV reader.
        if let firstEnd = bytesIn.firstIndex(of: 10) ?? (bytesIn.isEmpty ? nil : bytesIn.endIndex) {
            var header = bytesIn[..<firstEnd]
            if header.starts(with: [0xEF, 0xBB, 0xBF]) { header = header.dropFirst(3) }
            if header.last == 13 { header = header.dropLast() }
            if SampleCSVFormat.detect(Substring(String(decoding: header, as: UTF8.self))) == .wearables {
                return try parseWearables(bytesIn, path: path)
            }
        }
        var rec = Recording()
        rec.source = bytesIn
        var bytes = bytesIn
        bytes.append(0)  // strtod stops at the terminator at the latest
        let total = bytesIn.count
        var newlines = 0
        for b in bytesIn where b == 10 { newlines += 1 }
        rec.t.reserveCapacity(newlines + 1); rec.gyro.reserveCapacity(newlines + 1)
        rec.accel.reserveCapacity(newlines + 1); rec.mag.reserveCapacity(newlines + 1)
        rec.tText.reserveCapacity(newlines + 1)

        return try bytes.withUnsafeMutableBufferPointer { buf -> (Recording, cut: String?) in
            let base = buf.baseAddress!
            var pos = 0
            var line = 0
            var ended = true   // whether the line last returned had a line end
            // one line: [start, end) without the newline and a trailing \r
            func nextLine() -> Range<Int>? {
                guard pos < total else { return nil }
                let start = pos
                while pos < total && base[pos] != 10 { pos += 1 }
                var end = pos
                ended = pos < total
                if pos < total { pos += 1 }
                if end > start && base[end - 1] == 13 { end -= 1 }
                line += 1
                return start..<end
            }
            func text(_ r: Range<Int>) -> String {
                String(decoding: UnsafeBufferPointer(start: base + r.lowerBound, count: r.count), as: UTF8.self)
            }

            // header
            guard let header = nextLine() else { throw FuseError("\(path): empty file (expected header \(inputColumns.joined(separator: ",")) or \(SampleCSV.header))") }
            var hstart = header.lowerBound
            if header.count >= 3 && base[hstart] == 0xEF && base[hstart + 1] == 0xBB && base[hstart + 2] == 0xBF { hstart += 3 }
            let names = text(hstart..<header.upperBound).split(separator: ",", omittingEmptySubsequences: false)
                .map { String($0.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed()) }
            guard names.count >= 7, Array(names.prefix(7)) == Array(inputColumns.prefix(7)),
                  names.count == 7 || (names.count >= 10 && Array(names[7..<10]) == Array(inputColumns[7..<10])) else {
                throw FuseError("\(path): line 1: " + SampleCSVFormat.unknownHeaderMessage(Substring(text(header))))
            }

            var values = [Double](repeating: 0, count: 10)
            var present = [Bool](repeating: false, count: 10)
            var lastT = -Double.infinity
            var cut: String?
            while let r = nextLine() {
                if r.isEmpty { continue }
                if !ended {
                    // The writer ends every row: a last line without a line end was cut off.
                    var only = true
                    for k in r where base[k] != 0 && base[k] != 32 { only = false; break }
                    if only { break }
                    let lastT = rec.tText.last.map { " (t = " + text($0) + " s)" } ?? ""
                    cut = "\(path):\(line): the file is cut off in the middle of this row ('\(text(r.lowerBound..<min(r.upperBound, r.lowerBound + 60)))'), as a power loss or a full disk leaves it: fused the \(rec.count) complete row\(rec.count == 1 ? "" : "s") before it\(lastT)"
                    break
                }
                var fieldStart = r.lowerBound
                var column = 0
                var tRange = r.lowerBound..<r.lowerBound
                for k in 0..<10 { present[k] = false }
                while column < 10 {
                    var e = fieldStart
                    while e < r.upperBound && base[e] != 44 { e += 1 }
                    if column == 0 { tRange = fieldStart..<e }
                    if e > fieldStart {
                        var endPtr: UnsafeMutablePointer<CChar>? = nil
                        let startPtr = UnsafeMutableRawPointer(base + fieldStart).assumingMemoryBound(to: CChar.self)
                        let v = strtod(startPtr, &endPtr)
                        let consumed = endPtr.map { UnsafeMutableRawPointer($0) - UnsafeMutableRawPointer(base) } ?? fieldStart
                        guard consumed == e, v.isFinite, base[fieldStart] != 32, base[fieldStart] != 9 else {
                            throw FuseError("\(path): line \(line): column '\(inputColumns[column])' is not a number: '\(text(fieldStart..<e))'")
                        }
                        values[column] = v
                        present[column] = true
                    }
                    column += 1
                    if e >= r.upperBound { break }
                    fieldStart = e + 1
                }
                for k in 0..<7 where !present[k] {
                    throw FuseError("\(path): line \(line): missing value for '\(inputColumns[k])'")
                }
                let t = values[0]
                if t < lastT {
                    throw FuseError("\(path): line \(line): t goes backwards (\(t) s after \(lastT) s)")
                }
                lastT = t
                let magCells = (present[7] ? 1 : 0) + (present[8] ? 1 : 0) + (present[9] ? 1 : 0)
                guard magCells == 0 || magCells == 3 else {
                    throw FuseError("\(path): line \(line): magnetometer needs all of mx,my,mz or none")
                }
                rec.t.append(t)
                rec.tText.append(tRange)
                rec.gyro.append(Vector3(values[1], values[2], values[3]))
                rec.accel.append(Vector3(values[4], values[5], values[6]))
                if magCells == 3 {
                    let m = Vector3(values[7], values[8], values[9])
                    rec.mag.append(m)
                    if !(m.x == 0 && m.y == 0 && m.z == 0) { rec.magCount += 1 }
                } else {
                    rec.mag.append(Vector3(repeating: .nan))
                }
            }
            return (rec, cut)
        }
    }

    /// `timestampNs,accelX,…` (record --csv) through ``SampleCSVReader``; t
    /// = timestampNs / 1e9, written with 9 decimals.
    static func parseWearables(_ bytes: [UInt8], path: String) throws -> (Recording, cut: String?) {
        var reader = SampleCSVReader(text: String(decoding: bytes, as: UTF8.self), file: path, keepingCompleteLines: true)
        var rec = Recording()
        while let row = try reader.next() {
            guard let a = row.accel, let g = row.gyro else {
                throw FuseError("\(path): line \(reader.line): \(row.accel == nil ? "accelX..accelZ" : "gyroX..gyroZ") empty: fusing needs the accelerometer and the gyroscope on every row")
            }
            let start = rec.source.count
            rec.source.append(contentsOf: SampleCSV.seconds(nanoseconds: row.timestampNs).utf8)
            rec.tText.append(start..<rec.source.count)
            rec.t.append(Double(row.timestampNs) / 1e9)
            rec.gyro.append(g)
            rec.accel.append(a)
            if let m = row.mag {
                rec.mag.append(m)
                rec.magCount += 1
            } else {
                rec.mag.append(Vector3(repeating: .nan))
            }
        }
        return (rec, reader.cut.map { "\($0)" })
    }

    /// Writes the output CSV with fixed 9-decimal numbers (fast, and the same
    /// text on every platform for the same values).
    static func write(_ rows: [FusedRow], recording: Recording, to path: String) throws {
        var out = [UInt8]()
        out.reserveCapacity(64 + rows.count * 260)
        out.append(contentsOf: outputHeader.utf8)
        recording.source.withUnsafeBufferPointer { src in
            for (i, row) in rows.enumerated() {
                out.append(contentsOf: src[recording.tText[i]])
                let values: (Double, Double, Double, Double, Double, Double, Double, Double) =
                    (row.q.w, row.q.x, row.q.y, row.q.z, row.roll, row.pitch, row.yaw, row.heading)
                appendFixed(values.0, &out); appendFixed(values.1, &out); appendFixed(values.2, &out)
                appendFixed(values.3, &out); appendFixed(values.4, &out); appendFixed(values.5, &out)
                appendFixed(values.6, &out); appendFixed(values.7, &out)
                appendVector(row.gravity, &out); appendVector(row.userAcceleration, &out)
                appendVector(row.rotationRate, &out); appendVector(row.magneticField, &out)
                out.append(44)
                if row.accuracy < 0 { out.append(45) }
                out.append(UInt8(48 + Int(abs(Int(row.accuracy)))))
                out.append(10)
            }
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw FuseError("\(path): cannot create (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        var offset = 0
        try out.withUnsafeBytes { b in
            while offset < b.count {
                let n = Glibc.write(fd, b.baseAddress! + offset, b.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw FuseError("\(path): write failed (\(String(cString: strerror(errno))))")
                }
                offset += n
            }
        }
    }

    @inline(__always)
    static func appendVector(_ v: Vector3, _ out: inout [UInt8]) {
        appendFixed(v.x, &out); appendFixed(v.y, &out); appendFixed(v.z, &out)
    }

    /// Appends ",<value>" with 9 decimals (NaN as "nan").
    @inline(__always)
    static func appendFixed(_ v: Double, _ out: inout [UInt8]) {
        out.append(44)
        guard v.isFinite else { out.append(contentsOf: "nan".utf8); return }
        let scaled = (abs(v) * 1e9).rounded()
        guard scaled < 9e18 else { out.append(contentsOf: String(v).utf8); return }
        let n = UInt64(scaled)
        if v < 0 && n != 0 { out.append(45) }
        var ip = n / 1_000_000_000
        let fp = n % 1_000_000_000
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            repeat { d[count] = UInt8(48 + ip % 10); ip /= 10; count += 1 } while ip > 0
            for k in stride(from: count - 1, through: 0, by: -1) { out.append(d[k]) }
        }
        out.append(46)
        var f = fp
        var frac: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &frac) { d in
            for k in stride(from: 8, through: 0, by: -1) { d[k] = UInt8(48 + f % 10); f /= 10 }
            out.append(contentsOf: d)
        }
    }
}
