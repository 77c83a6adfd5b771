#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import EdgeFusion

/// The calibration file (`calibration.json`, written by `edge-agent
/// calibrate`, read by the agent at start and on SIGHUP): per chip, keyed
/// by the board profile's chip id (`"mpu6050@0x68"`, `"qmc5883l@0x0d"`), the
/// gyroscope, accelerometer and magnetometer calibrations. Everything is in
/// the **chip's own frame** (before the mounting rotation of the board
/// profile), SI units, keys carry the unit:
///
/// ```json
/// {
///   "version": 1,
///   "frame": "chip",
///   "chips": {
///     "mpu6050@0x68": {
///       "gyro":  { "bias_radps": [0.02, -0.015, 0.01], "temperature_c": 22.1,
///                  "noise_radps": [0.0008, 0.0008, 0.0009], "samples": 1000,
///                  "created": "2026-11-29T16:50:00Z",
///                  "history": [ { "bias_radps": […], "temperature_c": 31.0, "created": "…" } ] },
///       "accel": { "bias_mps2": [0.18, -0.25, 0.35], "scale": [0.992, 1.005, 0.989],
///                  "temperature_c": 22.3, "residual_mps2": 0.0, "pose_spread_mps2": 0.005,
///                  "created": "…" }
///     },
///     "qmc5883l@0x0d": {
///       "mag": { "hard_iron_ut": [3.2, -5.1, 1.8], "soft_iron": [[…], […], […]],
///                "field_strength_ut": 48.0, "residual": 0.004, "created": "…" }
///     }
///   }
/// }
/// ```
///
/// Numbers are checked on load (NaN and Infinity never pass): vectors and
/// matrices finite, `scale` > 0, `soft_iron` invertible, `temperature_c`
/// −100 to 200, `samples` 0 to 10⁹, `residual_mps2`, `pose_spread_mps2` and
/// `residual` 0 to 10⁶, `field_strength_ut` 0 to 10000.
///
/// Applying it (chip frame, then the mounting):
/// gyro `raw − bias`; accel `(raw − bias) ⊙ scale`; mag
/// `soft_iron · (raw − hard_iron)` — see ``ChipCalibration``.
public struct CalibrationFile: Codable, Equatable, Sendable {
    /// The format version this code writes and reads.
    public static let currentVersion = 1

    public var version: Int
    /// Calibrations by chip id (`ChipSpec.id`: `"mpu6050@0x68"`).
    public var chips: [String: ChipCalibration]

    public init(chips: [String: ChipCalibration] = [:]) {
        version = Self.currentVersion; self.chips = chips
    }

    /// The calibration of one chip (`ChipSpec.id`), if any.
    public subscript(chip id: String) -> ChipCalibration? {
        get { chips[id] }
        set { chips[id] = newValue }
    }

    /// Records a gyroscope calibration for `chip`, keeping its other sections.
    public mutating func set(gyro: GyroCalibration, for chip: String, created: String) {
        chips[chip, default: ChipCalibration()].gyro = .init(calibration: gyro, created: created)
    }
    /// Records an accelerometer calibration for `chip`, keeping its other sections.
    public mutating func set(accel: AccelerometerCalibration, for chip: String, created: String) {
        chips[chip, default: ChipCalibration()].accel = .init(calibration: accel, created: created)
    }
    /// Records a magnetometer calibration for `chip`, keeping its other sections.
    public mutating func set(mag: MagnetometerCalibration, for chip: String, created: String) {
        chips[chip, default: ChipCalibration()].mag = .init(calibration: mag, created: created)
    }

    /// This file with every section present in `newer` replaced by it;
    /// sections and chips only here are kept (calibrating the gyroscope
    /// keeps the magnetometer's calibration). A replaced gyro calibration
    /// moves into the new one's `history` (bias at a temperature).
    public func merging(_ newer: CalibrationFile) -> CalibrationFile {
        var out = self
        for (id, n) in newer.chips {
            var c = out.chips[id] ?? ChipCalibration()
            if let g = n.gyro {
                if let old = c.gyro { c.gyro = old.superseded(by: g) } else { c.gyro = g }
            }
            if let a = n.accel { c.accel = a }
            if let m = n.mag { c.mag = m }
            out.chips[id] = c
        }
        out.version = Self.currentVersion
        return out
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case version, frame, chips }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        guard (1...Self.currentVersion).contains(version) else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: c, debugDescription:
                "calibration file version \(version) is not one this edge-agent reads (1...\(Self.currentVersion)); recalibrate or upgrade")
        }
        let frame = try c.decodeIfPresent(String.self, forKey: .frame) ?? "chip"
        guard frame == "chip" else {
            throw DecodingError.dataCorruptedError(forKey: .frame, in: c, debugDescription:
                "expected \"chip\" (calibrations apply in the chip's own frame, before the mounting), got \"\(frame)\"")
        }
        chips = try c.decodeIfPresent([String: ChipCalibration].self, forKey: .chips) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encode("chip", forKey: .frame)
        try c.encode(chips, forKey: .chips)
    }
}

/// The calibrations of one chip. Missing sections mean "not calibrated";
/// the `apply` functions then pass the sample through unchanged.
public struct ChipCalibration: Codable, Equatable, Sendable {
    public var gyro: GyroEntry?
    public var accel: AccelEntry?
    public var mag: MagEntry?

    public init(gyro: GyroEntry? = nil, accel: AccelEntry? = nil, mag: MagEntry? = nil) {
        self.gyro = gyro; self.accel = accel; self.mag = mag
    }

    /// The gyroscope calibration (identity when absent).
    public var gyroCalibration: GyroCalibration { gyro?.calibration ?? .identity }
    /// The accelerometer calibration (identity when absent).
    public var accelCalibration: AccelerometerCalibration { accel?.calibration ?? .identity }
    /// The magnetometer calibration (identity when absent).
    public var magCalibration: MagnetometerCalibration { mag?.calibration ?? .identity }

    /// Rotation rate, rad/s, chip frame: `raw − bias`.
    @inlinable public func applyGyro(_ raw: Vector3) -> Vector3 { gyroCalibration.apply(raw) }
    /// Acceleration, m/s², chip frame: `(raw − bias) ⊙ scale`.
    @inlinable public func applyAccel(_ raw: Vector3) -> Vector3 { accelCalibration.apply(raw) }
    /// Magnetic field, µT, chip frame: `softIron · (raw − hardIron)`.
    @inlinable public func applyMag(_ raw: Vector3) -> Vector3 { magCalibration.apply(raw) }

    enum CodingKeys: String, CodingKey, CaseIterable { case gyro, accel, mag }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        gyro = try c.decodeIfPresent(GyroEntry.self, forKey: .gyro)
        accel = try c.decodeIfPresent(AccelEntry.self, forKey: .accel)
        mag = try c.decodeIfPresent(MagEntry.self, forKey: .mag)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(gyro, forKey: .gyro)
        try c.encodeIfPresent(accel, forKey: .accel)
        try c.encodeIfPresent(mag, forKey: .mag)
    }

    /// `{"bias_radps": [x,y,z], "temperature_c", "noise_radps", "samples", "created"}`.
    public struct GyroEntry: Codable, Equatable, Sendable {
        public var calibration: GyroCalibration
        /// When it was measured: ISO 8601 UTC (`2026-11-29T16:50:00Z`), free text.
        public var created: String
        /// Earlier gyro calibrations of this chip, oldest first (at most
        /// ``maximumHistory``): bias at a temperature, so a temperature slope
        /// can be fitted (``GyroCalibration/temperatureModel(_:)``) once
        /// calibrations at different temperatures exist.
        public var history: [GyroPoint]

        /// How many earlier calibrations are kept.
        public static let maximumHistory = 20

        public init(calibration: GyroCalibration, created: String, history: [GyroPoint] = []) {
            self.calibration = calibration; self.created = created; self.history = history
        }

        /// This calibration and the earlier ones, for a temperature fit.
        public var points: [GyroPoint] {
            history + [GyroPoint(bias: calibration.bias, temperatureCelsius: calibration.temperatureCelsius, created: created)]
        }

        /// `newer` with this entry (and its history) appended to its history.
        func superseded(by newer: GyroEntry) -> GyroEntry {
            var all: [GyroPoint] = []
            all.reserveCapacity(history.count + 1 + newer.history.count)
            for p in history { all.append(p) }
            all.append(GyroPoint(bias: calibration.bias, temperatureCelsius: calibration.temperatureCelsius, created: created))
            for p in newer.history { all.append(p) }
            if all.count > Self.maximumHistory { all.removeFirst(all.count - Self.maximumHistory) }
            return GyroEntry(calibration: newer.calibration, created: newer.created, history: all)
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case bias = "bias_radps", temperature = "temperature_c", noise = "noise_radps", samples, created, history
        }
        public init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            calibration = GyroCalibration(
                bias: try decodeVector(c, .bias),
                temperatureCelsius: try c.decodeNumberIfPresent(.temperature, in: -100...200, unit: "°C") ?? .nan,
                noise: c.contains(.noise) ? try decodeVector(c, .noise) : .zero,
                sampleCount: try c.decodeWholeNumber(.samples, default: 0, in: 0...1_000_000_000, unit: "samples averaged"))
            created = try c.decodeIfPresent(String.self, forKey: .created) ?? ""
            history = try c.decodeIfPresent([GyroPoint].self, forKey: .history) ?? []
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(array(calibration.bias), forKey: .bias)
            if calibration.temperatureCelsius.isFinite { try c.encode(calibration.temperatureCelsius, forKey: .temperature) }
            try c.encode(array(calibration.noise), forKey: .noise)
            try c.encode(calibration.sampleCount, forKey: .samples)
            try c.encode(created, forKey: .created)
            if !history.isEmpty { try c.encode(history, forKey: .history) }
        }
    }

    /// One earlier gyro calibration: `{"bias_radps": [x,y,z], "temperature_c", "created"}`.
    public struct GyroPoint: Codable, Equatable, Sendable {
        /// Bias, rad/s, chip frame.
        public var bias: Vector3
        public var temperatureCelsius: Double
        public var created: String
        public init(bias: Vector3, temperatureCelsius: Double, created: String) {
            self.bias = bias; self.temperatureCelsius = temperatureCelsius; self.created = created
        }
        enum CodingKeys: String, CodingKey, CaseIterable { case bias = "bias_radps", temperature = "temperature_c", created }
        public init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            bias = try decodeVector(c, .bias)
            temperatureCelsius = try c.decodeNumberIfPresent(.temperature, in: -100...200, unit: "°C") ?? .nan
            created = try c.decodeIfPresent(String.self, forKey: .created) ?? ""
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(array(bias), forKey: .bias)
            if temperatureCelsius.isFinite { try c.encode(temperatureCelsius, forKey: .temperature) }
            try c.encode(created, forKey: .created)
        }
    }

    /// `{"bias_mps2": [x,y,z], "scale": [x,y,z], "temperature_c", "residual_mps2", "pose_spread_mps2", "created"}`.
    public struct AccelEntry: Codable, Equatable, Sendable {
        public var calibration: AccelerometerCalibration
        public var created: String
        public init(calibration: AccelerometerCalibration, created: String) { self.calibration = calibration; self.created = created }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case bias = "bias_mps2", scale, temperature = "temperature_c", residual = "residual_mps2",
                 poseSpread = "pose_spread_mps2", created
        }
        public init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let scale = c.contains(.scale) ? try decodeVector(c, .scale) : Vector3(1, 1, 1)
            guard scale.min() > 0 else {
                throw DecodingError.dataCorruptedError(forKey: .scale, in: c, debugDescription: "scale factors must be positive (≈1)")
            }
            calibration = AccelerometerCalibration(
                bias: try decodeVector(c, .bias), scale: scale,
                temperatureCelsius: try c.decodeNumberIfPresent(.temperature, in: -100...200, unit: "°C") ?? .nan,
                residual: try c.decodeNumber(.residual, default: 0, in: 0...1_000_000, unit: "m/s²"),
                poseSpread: try c.decodeNumber(.poseSpread, default: 0, in: 0...1_000_000, unit: "m/s²"))
            created = try c.decodeIfPresent(String.self, forKey: .created) ?? ""
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(array(calibration.bias), forKey: .bias)
            try c.encode(array(calibration.scale), forKey: .scale)
            try c.encode(calibration.poseSpread, forKey: .poseSpread)
            if calibration.temperatureCelsius.isFinite { try c.encode(calibration.temperatureCelsius, forKey: .temperature) }
            try c.encode(calibration.residual, forKey: .residual)
            try c.encode(created, forKey: .created)
        }
    }

    /// `{"hard_iron_ut": [x,y,z], "soft_iron": [[3],[3],[3]], "field_strength_ut", "residual", "created"}`.
    public struct MagEntry: Codable, Equatable, Sendable {
        public var calibration: MagnetometerCalibration
        public var created: String
        public init(calibration: MagnetometerCalibration, created: String) { self.calibration = calibration; self.created = created }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case hardIron = "hard_iron_ut", softIron = "soft_iron", fieldStrength = "field_strength_ut", residual, created
        }
        public init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let s = try c.decodeIfPresent([[Double]].self, forKey: .softIron) ?? Matrix3.identity.rows
            guard s.count == 3, s.allSatisfy({ $0.count == 3 && $0.allSatisfy(\.isFinite) }) else {
                throw DecodingError.dataCorruptedError(forKey: .softIron, in: c, debugDescription: "soft_iron needs 3 rows of 3 finite numbers")
            }
            let soft = Matrix3(rows: s)
            guard soft.inverse != nil else {
                throw DecodingError.dataCorruptedError(forKey: .softIron, in: c, debugDescription: "soft_iron is singular")
            }
            calibration = MagnetometerCalibration(
                hardIron: try decodeVector(c, .hardIron), softIron: soft,
                fieldStrength: try c.decodeNumber(.fieldStrength, default: 0, in: 0...10_000, unit: "µT"),
                residual: try c.decodeNumber(.residual, default: 0, in: 0...1_000_000, unit: ""))
            created = try c.decodeIfPresent(String.self, forKey: .created) ?? ""
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(array(calibration.hardIron), forKey: .hardIron)
            try c.encode(calibration.softIron.rows, forKey: .softIron)
            try c.encode(calibration.fieldStrength, forKey: .fieldStrength)
            try c.encode(calibration.residual, forKey: .residual)
            try c.encode(created, forKey: .created)
        }
    }
}

private func array(_ v: Vector3) -> [Double] { [v.x, v.y, v.z] }

private func decodeVector<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> Vector3 {
    let a = try c.decode([Double].self, forKey: key)
    guard a.count == 3, a.allSatisfy(\.isFinite) else {
        throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "expected 3 finite numbers [x, y, z]")
    }
    return Vector3(a[0], a[1], a[2])
}

// MARK: - files

/// A calibration file that could not be written: which file, what failed.
public struct CalibrationFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public var file: String
    /// What was being done: "create the directory", "create", "write", "rename".
    public var operation: String
    public var errno: Int32
    public var detail: String

    public init(file: String, operation: String, errno: Int32, detail: String) {
        self.file = file; self.operation = operation; self.errno = errno; self.detail = detail
    }

    public var description: String {
        "cannot write \(file): \(operation) failed: \(detail)" + (errno != 0 ? " (errno \(errno))" : "")
    }
}

extension CalibrationFile {
    /// Reads a calibration file (JSON; JSON5 comments are tolerated). Errors
    /// name the file, the key path and the line.
    public static func load(from path: String) throws(ConfigError) -> CalibrationFile {
        try ConfigLoader.load(CalibrationFile.self, from: path)
    }

    /// Like `load(from:)`, but nil when the file does not exist (nothing
    /// calibrated yet: the agent runs uncalibrated).
    public static func loadIfPresent(from path: String) throws(ConfigError) -> CalibrationFile? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try load(from: path)
    }

    /// The file's JSON: pretty-printed, keys sorted, so a diff shows what changed.
    public func encoded() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Only finite numbers are encoded (NaN temperatures are left out).
        return (try? e.encode(self)) ?? Data("{}".utf8)
    }

    /// Writes the file atomically: a temporary file in the same directory,
    /// flushed to disk, then renamed over `path`, so a reader (the agent on
    /// SIGHUP) sees the old file or the new one, never half of one. Creates
    /// the directory if it is missing.
    public func save(to path: String) throws(CalibrationFileError) {
        let dir = BoardLocator.directory(of: path)
        if !FileManager.default.fileExists(atPath: dir) {
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            } catch {
                throw CalibrationFileError(file: path, operation: "create the directory \(dir)", errno: 0, detail: "\(error)")
            }
        }
        let name = path.split(separator: "/").last.map(String.init) ?? "calibration.json"
        let tmp = (dir == "/" ? "" : dir) + "/." + name + ".tmp-\(getpid())"
        func fail(_ op: String, _ e: Int32) -> CalibrationFileError {
            CalibrationFileError(file: path, operation: op, errno: e, detail: String(cString: strerror(e)))
        }
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw fail("create \(tmp)", errno) }
        var bytes = Array(encoded())
        bytes.append(0x0A)
        var failure: CalibrationFileError?
        bytes.withUnsafeBytes { buf in
            var off = 0
            while off < buf.count {
                let n = write(fd, buf.baseAddress! + off, buf.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = fail("write \(tmp)", errno); return
                }
                off += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = fail("fsync \(tmp)", errno) }
        if close(fd) != 0, failure == nil { failure = fail("close \(tmp)", errno) }
        if failure == nil, rename(tmp, path) != 0 { failure = fail("rename \(tmp) to \(path)", errno) }
        if let f = failure {
            unlink(tmp)
            throw f
        }
    }

    /// `2026-11-29T16:50:00Z` for seconds since 1970 (UTC), without
    /// Foundation's formatters.
    public static func timestamp(unixSeconds: Double) -> String {
        let secs = Int64(unixSeconds.rounded(.down))
        var days = secs >= 0 ? secs / 86_400 : (secs - 86_399) / 86_400
        let rem = secs - days * 86_400
        // civil from days (H. Hinnant)
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let doe = days - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(m))-\(two(d))T\(two(rem / 3600)):\(two(rem % 3600 / 60)):\(two(rem % 60))Z"
    }
}
