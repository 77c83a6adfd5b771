#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import EdgeFusion
import EdgeValues
import EdgeLocations

/// The calibration file (`calibration.json`, written by `edge-agent
/// calibrate`, read by the agent at start and on SIGHUP): per chip, keyed
/// by the board profile's chip id (`"mpu6050@0x68"`, `"qmc5883l@0x0d"`), the
/// gyroscope, accelerometer and magnetometer calibrations. Everything is in
/// the **chip's own frame** (before the mounting rotation of the board
/// profile), SI units, keys carry the unit:
///
/// ```json
/// {
///   "version": 2,
///   "frame": "chip",
///   "chips": {
///     "mpu6050@0x68": {
///       "measured_on": { "board": "Raspberry Pi 4B", "bus": "/dev/i2c-1", "chip": "mpu6050", "address": "0x68",
///                        "part": "MPU-6050 (or MPU-6000/MPU-9150)", "identity": "0x68" },
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
/// Each chip's entry says which chip it was measured on (``CalibrationOrigin``:
/// the board profile, the bus, the part and its identity register, and for a
/// simulated chip its seed and imperfections), so a calibration is never
/// applied to other chips than its own. Version 1 files (no `measured_on`)
/// are still read.
///
/// Applying it (chip frame, then the mounting):
/// gyro `raw − bias`; accel `(raw − bias) ⊙ scale`; mag
/// `soft_iron · (raw − hard_iron)` — see ``ChipCalibration``.
public struct CalibrationFile: Codable, Equatable, Sendable {
    /// The format version this code writes (it reads 1 and 2; 2 added `measured_on`).
    public static let currentVersion = 2

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
    public mutating func set(gyro: GyroCalibration, for chip: String, created: String, measuredOn: CalibrationOrigin? = nil) {
        chips[chip, default: ChipCalibration()].gyro = .init(calibration: gyro, created: created)
        if let measuredOn { chips[chip]!.measuredOn = measuredOn }
    }
    /// Records an accelerometer calibration for `chip`, keeping its other sections.
    public mutating func set(accel: AccelerometerCalibration, for chip: String, created: String, measuredOn: CalibrationOrigin? = nil) {
        chips[chip, default: ChipCalibration()].accel = .init(calibration: accel, created: created)
        if let measuredOn { chips[chip]!.measuredOn = measuredOn }
    }
    /// Records a magnetometer calibration for `chip`, keeping its other sections.
    public mutating func set(mag: MagnetometerCalibration, for chip: String, created: String, measuredOn: CalibrationOrigin? = nil) {
        chips[chip, default: ChipCalibration()].mag = .init(calibration: mag, created: created)
        if let measuredOn { chips[chip]!.measuredOn = measuredOn }
    }

    /// This file with every section present in `newer` replaced by it;
    /// sections and chips only here are kept (calibrating the gyroscope
    /// keeps the magnetometer's calibration). A replaced gyro calibration
    /// moves into the new one's `history` (bias at a temperature).
    ///
    /// When `newer` says a chip was measured on another chip than this
    /// file's entry (``CalibrationOrigin/differences(from:)`` not empty), the
    /// old entry belongs to other hardware: it is replaced whole, not merged.
    public func merging(_ newer: CalibrationFile) -> CalibrationFile {
        var out = self
        for (id, n) in newer.chips {
            var c = out.chips[id] ?? ChipCalibration()
            if let new = n.measuredOn, let old = c.measuredOn, !new.differences(from: old).isEmpty {
                c = ChipCalibration()
            }
            if let o = n.measuredOn { c.measuredOn = o }
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
        try requireObject(decoder, "a calibration file")
        if let keys = try? decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue), keys.contains("hardIron") {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                "this is the old `fuse --mag-calibration` format ({\"hardIron\": [...], \"softIron\": [...]}); every tool now reads "
                + "the calibration file `edge-agent calibrate mag` writes: {\"version\": 2, \"chips\": {\"qmc5883l@0x0d\": {\"measured_on\": {...}, "
                + "\"mag\": {\"hard_iron_ut\": [x, y, z], \"soft_iron\": [[...], [...], [...]]}}}} (docs/calibration.md)"))
        }
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard c.contains(.version) else {
            throw DecodingError.keyNotFound(CodingKeys.version, .init(codingPath: decoder.codingPath, debugDescription: "no version"))
        }
        version = try wholeNumber(c, .version)
        guard (1...Self.currentVersion).contains(version) else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: c, debugDescription:
                "calibration file version \(version) is not one this edge-agent reads (1...\(Self.currentVersion)); recalibrate or upgrade")
        }
        let frame = try text(c, .frame) ?? "chip"
        guard frame == "chip" else {
            throw DecodingError.dataCorruptedError(forKey: .frame, in: c, debugDescription:
                "expected \"chip\" (calibrations apply in the chip's own frame, before the mounting), got \"\(frame)\"")
        }
        if c.contains(.chips) {
            try requireObject(try c.superDecoder(forKey: .chips), "an object of chips by id (\"mpu6050@0x68\": {...})")
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

/// Which chip a calibration was measured on. Chips of one kind differ in
/// their offsets and gains, so a calibration belongs to the chip it was
/// measured on: loading one onto other chips makes readings worse, not
/// better. Recorded by `edge-agent calibrate` as `measured_on`:
///
/// ```json
/// { "board": "Raspberry Pi 4B (GY-521 + GY-BMP280 + GY-271)", "bus": "/dev/i2c-1",
///   "chip": "mpu6050", "address": "0x68", "part": "MPU-6050 (or MPU-6000/MPU-9150)", "identity": "0x68" }
/// ```
///
/// * `board`: the board profile's `name`; `bus`: `/dev/i2c-N` or `simulated`.
/// * `part`, `identity`: what the chip said when calibrated: its identity
///   register (MPU-6050 WHO_AM_I 0x75, BMP280 id 0xD0, QMC5883L 0x0D) and the
///   variant it names. Absent when unknown.
/// * `simulation`, for a simulated chip: the board's noise `seed`, a
///   fingerprint of the chip model's `imperfections` (its offsets, gains,
///   noise: what a calibration measures) and the `scenario` they came from.
///   Real chips have no serial number; simulated ones are told apart by these.
public struct CalibrationOrigin: Codable, Equatable, Sendable {
    public var board: String
    public var bus: String
    public var chip: String
    public var address: UInt8
    public var part: String?
    public var identity: UInt8?
    public var simulation: Simulation?

    public struct Simulation: Codable, Equatable, Sendable {
        /// The board's noise seed (each chip derives its own from it).
        public var seed: UInt64
        /// `fnv1a64:…` of the chip model's imperfections, canonical JSON.
        public var imperfections: String
        /// The scenario file the imperfections came from (for people).
        public var scenario: String

        public init(seed: UInt64, imperfections: String, scenario: String) {
            self.seed = seed; self.imperfections = imperfections; self.scenario = scenario
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case seed, imperfections, scenario }
        public init(from decoder: any Decoder) throws {
            try requireObject(decoder, "an object {\"seed\", \"imperfections\", \"scenario\"}")
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            guard let s = try? c.decode(UInt64.self, forKey: .seed) else { throw try wrong(c, .seed, "a whole number ≥ 0") }
            seed = s
            imperfections = try text(c, .imperfections) ?? ""
            scenario = try text(c, .scenario) ?? ""
        }
    }

    public init(board: String, bus: String, chip: String, address: UInt8, part: String? = nil, identity: UInt8? = nil,
                simulation: Simulation? = nil) {
        self.board = board; self.bus = bus; self.chip = chip; self.address = address
        self.part = part; self.identity = identity; self.simulation = simulation
    }

    /// What differs between the chip a calibration was measured on (self)
    /// and `current`, in words; empty when they are the same chip. Unknown
    /// parts (a nil `identity` on either side) are not compared.
    public func differences(from current: CalibrationOrigin) -> [String] {
        var out: [String] = []
        if board != current.board { out.append("board '\(board)' when calibrated, '\(current.board)' now") }
        if bus != current.bus { out.append("bus \(bus) when calibrated, \(current.bus) now") }
        if chip != current.chip || address != current.address {
            out.append("chip \(chip) at \(hex2(address)) when calibrated, \(current.chip) at \(hex2(current.address)) now")
        }
        if let a = identity, let b = current.identity, a != b {
            out.append("identity register \(hex2(a))\(part.map { " (\($0))" } ?? "") when calibrated, \(hex2(b))\(current.part.map { " (\($0))" } ?? "") now: another part")
        }
        switch (simulation, current.simulation) {
        case (nil, nil): break
        case (.some, nil): out.append("simulated chips when calibrated, real chips now")
        case (nil, .some): out.append("real chips when calibrated, simulated chips now")
        case let (a?, b?):
            if a.seed != b.seed { out.append("simulation seed \(a.seed) when calibrated, \(b.seed) now") }
            if a.imperfections != b.imperfections {
                out.append("simulated chip imperfections \(a.imperfections) (from \(a.scenario)) when calibrated, \(b.imperfections) (from \(b.scenario)) now")
            }
        }
        return out
    }

    /// One line for messages: `mpu6050 at 0x68 on 'Board' (/dev/i2c-1), MPU-6050 (0x68)`.
    public var summary: String {
        var s = "\(chip) at \(hex2(address)) on '\(board)' (\(bus))"
        if let p = part { s += ", \(p)" }
        if let sim = simulation { s += ", simulation seed \(sim.seed), imperfections \(sim.imperfections)" }
        return s
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case board, bus, chip, address, part, identity, simulation }

    public init(from decoder: any Decoder) throws {
        try requireObject(decoder, "an object {\"board\", \"bus\", \"chip\", \"address\", ...} saying which chip was calibrated")
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func required(_ k: CodingKeys) throws -> String {
            guard let v = try text(c, k) else { throw DecodingError.keyNotFound(k, .init(codingPath: c.codingPath, debugDescription: "missing")) }
            return v
        }
        func byte(_ k: CodingKeys) throws -> UInt8? {
            guard let t = try text(c, k) else { return nil }
            guard t.hasPrefix("0x"), let v = UInt8(t.dropFirst(2), radix: 16) else {
                throw DecodingError.dataCorruptedError(forKey: k, in: c, debugDescription: "expected a byte written \"0xNN\", got \"\(t)\"")
            }
            return v
        }
        board = try required(.board)
        bus = try required(.bus)
        chip = try required(.chip)
        guard let a = try byte(.address) else { throw DecodingError.keyNotFound(CodingKeys.address, .init(codingPath: c.codingPath, debugDescription: "missing")) }
        address = a
        part = try text(c, .part)
        identity = try byte(.identity)
        simulation = try c.decodeIfPresent(Simulation.self, forKey: .simulation)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(board, forKey: .board)
        try c.encode(bus, forKey: .bus)
        try c.encode(chip, forKey: .chip)
        try c.encode(hex2(address), forKey: .address)
        try c.encodeIfPresent(part, forKey: .part)
        try c.encodeIfPresent(identity.map(hex2), forKey: .identity)
        try c.encodeIfPresent(simulation, forKey: .simulation)
    }
}

private func hex2(_ v: UInt8) -> String {
    let d = Array("0123456789abcdef")
    return "0x" + String(d[Int(v >> 4)]) + String(d[Int(v & 0xF)])
}

/// The calibrations of one chip. Missing sections mean "not calibrated";
/// the `apply` functions then pass the sample through unchanged.
public struct ChipCalibration: Codable, Equatable, Sendable {
    /// Which chip it was measured on (nil in version 1 files: unknown).
    public var measuredOn: CalibrationOrigin?
    public var gyro: GyroEntry?
    public var accel: AccelEntry?
    public var mag: MagEntry?

    public init(gyro: GyroEntry? = nil, accel: AccelEntry? = nil, mag: MagEntry? = nil, measuredOn: CalibrationOrigin? = nil) {
        self.gyro = gyro; self.accel = accel; self.mag = mag; self.measuredOn = measuredOn
    }

    /// The sections present: "gyro", "accel", "mag".
    public var sections: [String] {
        (gyro != nil ? ["gyro"] : []) + (accel != nil ? ["accel"] : []) + (mag != nil ? ["mag"] : [])
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

    enum CodingKeys: String, CodingKey, CaseIterable { case measuredOn = "measured_on", gyro, accel, mag }

    public init(from decoder: any Decoder) throws {
        try requireObject(decoder, "an object with measured_on, gyro, accel and/or mag")
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        measuredOn = try c.decodeIfPresent(CalibrationOrigin.self, forKey: .measuredOn)
        gyro = try c.decodeIfPresent(GyroEntry.self, forKey: .gyro)
        accel = try c.decodeIfPresent(AccelEntry.self, forKey: .accel)
        mag = try c.decodeIfPresent(MagEntry.self, forKey: .mag)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(measuredOn, forKey: .measuredOn)
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
            try requireObject(decoder, "a gyro calibration {\"bias_radps\": [x, y, z], ...}")
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            calibration = GyroCalibration(
                bias: try decodeVector(c, .bias),
                temperatureCelsius: try c.decodeNumberIfPresent(.temperature, in: -100...200, unit: "°C") ?? .nan,
                noise: c.contains(.noise) ? try decodeVector(c, .noise) : .zero,
                sampleCount: try c.decodeWholeNumber(.samples, default: 0, in: 0...1_000_000_000, unit: "samples averaged"))
            created = try text(c, .created) ?? ""
            if c.contains(.history) { try requireList(try c.superDecoder(forKey: .history), "a list of earlier gyro calibrations") }
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
            try requireObject(decoder, "an earlier gyro calibration {\"bias_radps\": [x, y, z], ...}")
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            bias = try decodeVector(c, .bias)
            temperatureCelsius = try c.decodeNumberIfPresent(.temperature, in: -100...200, unit: "°C") ?? .nan
            created = try text(c, .created) ?? ""
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
            try requireObject(decoder, "an accelerometer calibration {\"bias_mps2\": [x, y, z], \"scale\": [x, y, z], ...}")
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
            created = try text(c, .created) ?? ""
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
            try requireObject(decoder, "a magnetometer calibration {\"hard_iron_ut\": [x, y, z], \"soft_iron\": [[...], [...], [...]], ...}")
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            var s = Matrix3.identity.rows
            if c.contains(.softIron) {
                var rows = try list(c, .softIron, "3 rows of 3 numbers [[...], [...], [...]]")
                s = []
                while !rows.isAtEnd {
                    let rowDecoder = try rows.superDecoder()
                    try requireList(rowDecoder, "a row of 3 numbers [a, b, c]")
                    var row = try rowDecoder.unkeyedContainer()
                    var r: [Double] = []
                    while !row.isAtEnd { r.append(try element(&row)) }
                    s.append(r)
                }
            }
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
            created = try text(c, .created) ?? ""
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

// MARK: - decoding with messages of our own
//
// Foundation's type errors read "Expected to decode Double but found a
// string instead." and name Swift types; these helpers look at what the
// value is first and say "expected a number, got a string (\"abc\")", with
// the key path (ConfigLoader adds the file and the line).

/// What a JSON value is, for messages.
private enum JSONKind: Decodable {
    case number, bool, null, string(String), list, object

    init(from decoder: any Decoder) throws {
        if let c = try? decoder.singleValueContainer() {
            if c.decodeNil() { self = .null; return }
            if (try? c.decode(Bool.self)) != nil { self = .bool; return }
            if (try? c.decode(Double.self)) != nil { self = .number; return }
            if let s = try? c.decode(String.self) { self = .string(s); return }
        }
        if (try? decoder.unkeyedContainer()) != nil { self = .list; return }
        self = .object
    }

    var described: String {
        switch self {
        case .number: return "a number"
        case .bool: return "true or false"
        case .null: return "null"
        case .string(let s): return "a string (\"\(s.prefix(40))\")"
        case .list: return "a list [...]"
        case .object: return "an object {...}"
        }
    }
}

private func kind(_ decoder: any Decoder) -> JSONKind { (try? JSONKind(from: decoder)) ?? .object }

/// Throws "expected WHAT, got a number" unless the value is an object.
func requireObject(_ decoder: any Decoder, _ what: String) throws {
    let k = kind(decoder)
    if case .object = k { return }
    throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected \(what), got \(k.described)"))
}

/// Throws "expected WHAT, got ..." unless the value is a list.
func requireList(_ decoder: any Decoder, _ what: String) throws {
    let k = kind(decoder)
    if case .list = k { return }
    throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected \(what), got \(k.described)"))
}

func wrong<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K, _ expected: String) throws -> DecodingError {
    DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "expected \(expected), got \(kind(try c.superDecoder(forKey: key)).described)")
}

/// A whole number (the key must be present).
private func wholeNumber<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> Int {
    if let v = try? c.decode(Int.self, forKey: key) { return v }
    if let d = try? c.decode(Double.self, forKey: key) {
        throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "expected a whole number, got \(d)")
    }
    throw try wrong(c, key, "a whole number")
}

/// A string, or nil when the key is absent.
func text<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> String? {
    guard c.contains(key) else { return nil }
    if let v = try? c.decode(String.self, forKey: key) { return v }
    throw try wrong(c, key, "a string")
}

/// The list at `key`, checked to be one.
private func list<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K, _ what: String) throws -> UnkeyedDecodingContainer {
    guard c.contains(key) else {
        throw DecodingError.keyNotFound(key, .init(codingPath: c.codingPath, debugDescription: "missing"))
    }
    let k = kind(try c.superDecoder(forKey: key))
    guard case .list = k else {
        throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "expected \(what), got \(k.described)")
    }
    return try c.nestedUnkeyedContainer(forKey: key)
}

/// The next element of a list, a number.
private func element(_ u: inout UnkeyedDecodingContainer) throws -> Double {
    let path = u.codingPath + [ListIndexKey(u.currentIndex)]
    let e = try u.decode(NumberElement.self)
    guard let v = e.value else {
        throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "expected a number, got \(e.kind.described)"))
    }
    return v
}

/// A list element that is a number (value) or something else (kind).
private struct NumberElement: Decodable {
    var kind: JSONKind
    var value: Double?
    init(from decoder: any Decoder) throws {
        kind = try JSONKind(from: decoder)
        if case .number = kind { value = try decoder.singleValueContainer().decode(Double.self) }
    }
}

private struct ListIndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ i: Int) { intValue = i }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { return nil }
}

private func decodeVector<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> Vector3 {
    var u = try list(c, key, "3 numbers [x, y, z]")
    var a: [Double] = []
    while !u.isAtEnd { a.append(try element(&u)) }
    guard a.count == 3, a.allSatisfy(\.isFinite) else {
        throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "expected 3 finite numbers [x, y, z], got \(a.count)")
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
        UTCTime.format(unixSeconds: Int64(unixSeconds.rounded(.down)))
    }
}
