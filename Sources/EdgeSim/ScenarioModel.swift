// The scenario file format (JSON5, decoded by the caller with Foundation's
// JSONDecoder, allowsJSON5 = true). Keys are snake_case and carry units.
// The format is documented in scenarios/README.md and docs/scenarios.md.
//
// Frames: board frame X right, Y forward, Z up out of the component side.
// Earth frame X true north, Y west, Z up (Core Motion's
// xTrueNorthZVertical; with declination 0 it is xMagneticNorthZVertical).
import EdgeValues

/// A scenario: the world over time for the simulated chips.
public struct Scenario: Decodable, Sendable {
    public var name: String
    public var description: String
    /// Length of the scenario, s. Motion segments must fit in it; after it
    /// the bodies stay still (or, with `loop`, time wraps to 0).
    public var durationSeconds: Double
    /// Seed for every random process of the simulation (chip noise, bias
    /// draws): the same scenario and seed give the same bytes.
    public var seed: UInt64
    /// Time wraps modulo `durationSeconds` (motion, environment, faults are
    /// not looped). The board must end in the pose it started in.
    public var loop: Bool
    /// Motion of the board (the body that carries all chips but the accessory IMU).
    public var board: ScenarioBodyMotion
    /// Motion of the accessory IMU, if the scenario has one.
    public var accessory: ScenarioAccessory?
    public var environment: ScenarioEnvironment
    /// The chips' imperfections, keyed by I2C address ("0x68") or
    /// "default", each value in the chip models' own format (for EdgeSim's
    /// `ChipImperfections`: "realistic", "ideal" or `{mpu6050: {…}}`).
    /// Passed through untouched (`.object([:])` when absent); see
    /// `imperfections(forAddress:)` and docs/scenarios.md.
    public var imperfections: ScenarioJSONValue
    /// Scheduled bus faults, in file order.
    public var faults: [ScenarioFault]

    /// The library scenario the agent plays when none is chosen
    /// (scenarios/desk-idle.json5: gentle, looping).
    public static let defaultName = "desk-idle"

    /// The faults as the simulated bus takes them.
    public var scheduledFaults: [ScheduledFault] { faults.map(\.fault) }

    public init(name: String, description: String = "", durationSeconds: Double, seed: UInt64 = 1,
                loop: Bool = false, board: ScenarioBodyMotion = ScenarioBodyMotion(),
                accessory: ScenarioAccessory? = nil, environment: ScenarioEnvironment = ScenarioEnvironment(),
                imperfections: ScenarioJSONValue = .object([:]), faults: [ScenarioFault] = []) {
        self.name = name; self.description = description; self.durationSeconds = durationSeconds
        self.seed = seed; self.loop = loop; self.board = board; self.accessory = accessory
        self.environment = environment; self.imperfections = imperfections; self.faults = faults
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, description, duration_s, seed, loop, board, accessory, environment, imperfections, faults
    }

    public init(from decoder: any Decoder) throws {
        try decoder.scenarioRejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue), in: "a scenario")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        description = try c.decodeIfPresent(String.self, forKey: .description) ?? ""
        durationSeconds = try c.scenarioNumber(.duration_s, positive: true)
        // The tools turn the duration into sample counts (Int) and
        // nanoseconds (UInt64): keep it far inside both.
        guard durationSeconds <= Self.maximumDurationSeconds else {
            throw scenarioError(c.codingPath + [CodingKeys.duration_s],
                                "duration_s must be at most \(Int(Self.maximumDurationSeconds)) s (about 11.6 days), got \(durationSeconds); use loop: true for longer runs")
        }
        if let s = try? c.decode(UInt64.self, forKey: .seed) { seed = s }
        else if c.contains(.seed) {
            throw scenarioError(c.codingPath + [CodingKeys.seed], "seed must be a whole number ≥ 0")
        } else { seed = 1 }
        loop = try c.decodeIfPresent(Bool.self, forKey: .loop) ?? false
        board = try c.decodeIfPresent(ScenarioBodyMotion.self, forKey: .board) ?? ScenarioBodyMotion()
        accessory = try c.decodeIfPresent(ScenarioAccessory.self, forKey: .accessory)
        environment = try c.decodeIfPresent(ScenarioEnvironment.self, forKey: .environment) ?? ScenarioEnvironment()
        imperfections = try c.decodeIfPresent(ScenarioJSONValue.self, forKey: .imperfections) ?? .object([:])
        guard case .object(let byChip) = imperfections else {
            throw scenarioError(c.codingPath + [CodingKeys.imperfections], "imperfections must be an object keyed by I2C address (\"0x68\") or \"default\"")
        }
        for key in byChip.keys where key != "default" && Self.address(fromKey: key) == nil {
            throw scenarioError(c.codingPath + [CodingKeys.imperfections, ScenarioAnyKey(stringValue: key)],
                                "imperfections are keyed by a 7-bit I2C address (\"0x68\") or \"default\", got \"\(key)\"")
        }
        try Self.checkImperfections(byChip, at: c.codingPath + [CodingKeys.imperfections])
        faults = try c.decodeIfPresent([ScenarioFault].self, forKey: .faults) ?? []
        // Physical checks (segments fit, loop closes, accessory rules): the
        // same compilation ScenarioWorld does, reported with a key path.
        do { _ = try ScenarioWorld(self) } catch let e {
            throw scenarioError(decoder.codingPath + e.codingPath, e.message)
        }
    }

    /// Longest `duration_s`, s.
    public static let maximumDurationSeconds = 1_000_000.0

    /// Checks the numbers in the imperfections at load (they stay otherwise
    /// untouched, in the chip models' format): the chip models would meet
    /// them only when the board is built, and some feed integer conversions
    /// there. Every number must be finite, and where an entry has EdgeSim's
    /// layout (`{mpu6050: {…}}`, …) the timing errors must be in range:
    /// clock errors −0.5…0.5 (a sample period is nominal/(1 + error)),
    /// `conversionTimeScale` 0.1…10, `standbyError` −0.5…0.5,
    /// `measuringFlagDelay` 0…1 s.
    static func checkImperfections(_ byChip: [String: ScenarioJSONValue], at path: [any CodingKey]) throws {
        func walk(_ v: ScenarioJSONValue, _ here: [any CodingKey]) throws {
            switch v {
            case .number(let n) where !n.isFinite:
                throw scenarioError(here, "imperfections must be finite numbers, got \(n.isNaN ? "NaN" : n > 0 ? "Infinity" : "-Infinity")")
            case .array(let a):
                for (i, e) in a.enumerated() { try walk(e, here + [ScenarioAnyKey(stringValue: "Index \(i)")]) }
            case .object(let o):
                for k in o.keys.sorted() { try walk(o[k]!, here + [ScenarioAnyKey(stringValue: k)]) }
            default:
                break
            }
        }
        let ranges: [(chip: String, key: String, range: ClosedRange<Double>, unit: String)] = [
            ("mpu6050", "internalClockError", -0.5...0.5, " (a fraction)"),
            ("mpu6050", "pllClockError", -0.5...0.5, " (a fraction)"),
            ("qmc5883l", "clockError", -0.5...0.5, " (a fraction)"),
            ("bmp280", "conversionTimeScale", 0.1...10, " (times the typical conversion time)"),
            ("bmp280", "standbyError", -0.5...0.5, " (a fraction)"),
            ("bmp280", "measuringFlagDelay", 0...1, " s"),
        ]
        for key in byChip.keys.sorted() {
            let here = path + [ScenarioAnyKey(stringValue: key)]
            try walk(byChip[key]!, here)
            for r in ranges {
                guard let v = byChip[key]?[r.chip]?[r.key]?.double, !r.range.contains(v) else { continue }
                throw scenarioError(here + [ScenarioAnyKey(stringValue: r.chip), ScenarioAnyKey(stringValue: r.key)],
                                    "\(r.key) must be from \(r.range.lowerBound) to \(r.range.upperBound)\(r.unit), got \(v)")
            }
        }
    }

    /// The imperfections written for the chip at `address`: the entry
    /// keyed by its address ("0x68", "0x0D", "104"), else the "default"
    /// entry, else nil (the chip model's own defaults). Decode it with
    /// `ScenarioJSONValue.decode(_:)` into the chip model's type.
    public func imperfections(forAddress address: UInt8) -> ScenarioJSONValue? {
        guard case .object(let byChip) = imperfections else { return nil }
        for (key, value) in byChip where Self.address(fromKey: key) == address { return value }
        return byChip["default"]
    }

    /// "0x68" / "0X68" / "104" → 0x68 (7-bit addresses only).
    static func address(fromKey key: String) -> UInt8? {
        let k = key.lowercased()
        guard let n = k.hasPrefix("0x") ? Int(k.dropFirst(2), radix: 16) : Int(k), (0...0x7F).contains(n) else { return nil }
        return UInt8(n)
    }

    /// A seed for one random process (a chip's noise, say), derived from the
    /// scenario seed and a label such as "mpu6050@0x68": different labels
    /// give independent streams, the same label always the same one.
    public func seed(for label: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325 // FNV-1a
        for b in label.utf8 { h ^= UInt64(b); h &*= 0x0000_0100_0000_01B3 }
        var z = seed ^ h
        return splitMix64(&z)
    }
}

/// Where a body starts: attitude (Euler angles or a quaternion), position
/// and velocity in the earth frame.
public struct ScenarioPose: Decodable, Sendable, Equatable {
    /// Sensor-to-earth orientation.
    public var attitude: Quaternion
    /// m, earth frame (Z up: altitude above `start_altitude_m`).
    public var position: Vector3
    /// m/s, earth frame.
    public var velocity: Vector3

    public init(attitude: Quaternion = .identity, position: Vector3 = .zero, velocity: Vector3 = .zero) {
        self.attitude = attitude; self.position = position; self.velocity = velocity
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case roll_deg, pitch_deg, yaw_deg, heading_deg, quaternion, position_m, velocity_m_s
    }

    public init(from decoder: any Decoder) throws {
        try decoder.scenarioRejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue), in: "a start pose")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if c.contains(.quaternion) {
            if c.contains(.roll_deg) || c.contains(.pitch_deg) || c.contains(.yaw_deg) || c.contains(.heading_deg) {
                throw scenarioError(c.codingPath + [CodingKeys.quaternion], "give either quaternion [w, x, y, z] or roll_deg/pitch_deg/yaw_deg (or heading_deg), not both")
            }
            let a = try c.decode([Double].self, forKey: .quaternion)
            guard a.allSatisfy({ abs($0) <= scenarioLargestMagnitude }) else {   // false for NaN too
                throw scenarioError(c.codingPath + [CodingKeys.quaternion], "each element must be a finite number within ±1e9, got \(a)")
            }
            let q = a.count == 4 ? Quaternion(w: a[0], x: a[1], y: a[2], z: a[3]) : Quaternion(w: 0, x: 0, y: 0, z: 0)
            guard q.norm > 1e-9 else {
                throw scenarioError(c.codingPath + [CodingKeys.quaternion], "expected a non-zero quaternion [w, x, y, z]")
            }
            attitude = q.normalized
        } else {
            attitude = try ScenarioEuler(container: c, roll: .roll_deg, pitch: .pitch_deg, yaw: .yaw_deg, heading: .heading_deg).quaternion
        }
        position = try c.scenarioVectorIfPresent(.position_m) ?? .zero
        velocity = try c.scenarioVectorIfPresent(.velocity_m_s) ?? .zero
    }
}

/// Euler angles, degrees (see `Quaternion.scenario(rollDegrees:…)`). The
/// yaw may instead be given as `heading_deg`: the compass heading of the
/// board's forward (Y) edge, clockwise from north (yaw = −90° − heading).
struct ScenarioEuler {
    var roll = 0.0, pitch = 0.0, yaw = 0.0
    init<K: CodingKey>(container c: KeyedDecodingContainer<K>, roll r: K, pitch p: K, yaw y: K, heading h: K) throws {
        roll = try c.scenarioNumberIfPresent(r) ?? 0
        pitch = try c.scenarioNumberIfPresent(p) ?? 0
        if let heading = try c.scenarioNumberIfPresent(h) {
            if c.contains(y) {
                throw scenarioError(c.codingPath + [h], "give either yaw_deg or heading_deg, not both")
            }
            yaw = -90 - heading
        } else {
            yaw = try c.scenarioNumberIfPresent(y) ?? 0
        }
    }
    var quaternion: Quaternion { .scenario(rollDegrees: roll, pitchDegrees: pitch, yawDegrees: yaw) }
}

/// A body's start pose and its motion segments, played one after another.
public struct ScenarioBodyMotion: Decodable, Sendable {
    public var start: ScenarioPose
    public var segments: [ScenarioSegment]

    public init(start: ScenarioPose = ScenarioPose(), segments: [ScenarioSegment] = []) {
        self.start = start; self.segments = segments
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case start, segments }

    public init(from decoder: any Decoder) throws {
        try decoder.scenarioRejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue), in: "a body's motion")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        start = try c.decodeIfPresent(ScenarioPose.self, forKey: .start) ?? ScenarioPose()
        segments = try c.decodeIfPresent([ScenarioSegment].self, forKey: .segments) ?? []
    }
}

/// The accessory IMU's motion: either its own trajectory in the earth frame
/// (`relative_to: "earth"`) or a rotation relative to the board
/// (`relative_to: "board"`: it rides on the board's position and
/// acceleration, lever arm ignored, and its segments may only rotate).
public struct ScenarioAccessory: Decodable, Sendable {
    public enum Reference: String, Sendable, Decodable { case board, earth }
    /// I2C address of the accessory IMU (default 0x69).
    public var address: UInt8
    public var relativeTo: Reference
    public var motion: ScenarioBodyMotion

    public init(address: UInt8 = 0x69, relativeTo: Reference = .earth, motion: ScenarioBodyMotion = ScenarioBodyMotion()) {
        self.address = address; self.relativeTo = relativeTo; self.motion = motion
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case address, relative_to, start, segments }

    public init(from decoder: any Decoder) throws {
        try decoder.scenarioRejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue), in: "the accessory")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        address = try c.contains(.address) ? c.scenarioByte(.address, max: 0x7F, what: "an I2C address") : 0x69
        relativeTo = Reference(rawValue: try c.scenarioChoice(.relative_to, ["board", "earth"], default: "earth"))!
        motion = ScenarioBodyMotion(
            start: try c.decodeIfPresent(ScenarioPose.self, forKey: .start) ?? ScenarioPose(),
            segments: try c.decodeIfPresent([ScenarioSegment].self, forKey: .segments) ?? [])
    }
}

/// The frame a translation vector is written in.
public enum ScenarioTranslationFrame: String, Sendable, Decodable {
    /// Earth frame: X north, Y west, Z up.
    case earth
    /// Horizontal heading frame of the body at the segment's start: X to its
    /// right, Y forward (both level), Z up. "Forward 14 m/s" in a car.
    case heading
    /// The body's own axes at the segment's start.
    case body
}

/// One stretch of motion. A segment combines at most one rotation
/// (`rotate`, `rotate_to` or `turn`), at most one translation
/// (`translate`; without it the body keeps its velocity) and any of the
/// oscillating overlays (`walk`, `vibrate`, `oscillate`), which start and
/// end at zero. A segment with only `duration_s` is a rest (or a coast).
public struct ScenarioSegment: Decodable, Sendable {
    public enum Rotation: Sendable, Equatable {
        /// Rotate about `axis` (unit; in the body frame, or the earth frame
        /// if `earthFrame`) at `rateDegreesPerSecond`, ramping the rate up and
        /// down along smooth steps of `rampSeconds` (0: constant rate).
        case rate(axis: Vector3, earthFrame: Bool, rateDegreesPerSecond: Double, rampSeconds: Double)
        /// Rotate by `angleDegrees` about `axis` along a minimum-jerk profile.
        case angle(axis: Vector3, earthFrame: Bool, angleDegrees: Double)
        /// Rotate along the shortest path to an absolute attitude (minimum jerk).
        case to(Quaternion)
        /// Turn by `angleDegrees` about the earth's vertical (minimum jerk),
        /// the velocity turning with the body (a car taking a corner).
        case turn(angleDegrees: Double)
    }
    public enum Translation: Sendable, Equatable {
        /// Move by a displacement (minimum jerk), on top of the current velocity.
        case displacement(Vector3, frame: ScenarioTranslationFrame)
        /// Change velocity smoothly to `velocity` m/s.
        case toVelocity(Vector3, frame: ScenarioTranslationFrame)
    }
    /// A person's gait: a vertical bob at the step frequency and a sideways
    /// sway at half of it, m.
    public struct Walk: Sendable, Equatable {
        public var stepHz: Double, bobMeters: Double, swayMeters: Double, rampSeconds: Double?
        public init(stepHz: Double, bobMeters: Double, swayMeters: Double = 0, rampSeconds: Double? = nil) {
            self.stepHz = stepHz; self.bobMeters = bobMeters; self.swayMeters = swayMeters; self.rampSeconds = rampSeconds
        }
    }
    /// A sinusoidal translation of `amplitude` m (earth frame) at `frequencyHz`.
    public struct Vibrate: Sendable, Equatable {
        public var amplitude: Vector3, frequencyHz: Double, rampSeconds: Double?
        public init(amplitude: Vector3, frequencyHz: Double, rampSeconds: Double? = nil) {
            self.amplitude = amplitude; self.frequencyHz = frequencyHz; self.rampSeconds = rampSeconds
        }
    }
    /// A sinusoidal rotation of `amplitudeDegrees` about a body `axis` at
    /// `frequencyHz` (a head nodding, a hand trembling).
    public struct Oscillate: Sendable, Equatable {
        public var axis: Vector3, amplitudeDegrees: Double, frequencyHz: Double, rampSeconds: Double?
        public init(axis: Vector3, amplitudeDegrees: Double, frequencyHz: Double, rampSeconds: Double? = nil) {
            self.axis = axis; self.amplitudeDegrees = amplitudeDegrees; self.frequencyHz = frequencyHz; self.rampSeconds = rampSeconds
        }
    }

    public var name: String?
    public var durationSeconds: Double
    public var rotation: Rotation?
    public var translation: Translation?
    public var walk: Walk?
    public var vibrate: Vibrate?
    public var oscillate: Oscillate?

    public init(name: String? = nil, durationSeconds: Double, rotation: Rotation? = nil,
                translation: Translation? = nil, walk: Walk? = nil, vibrate: Vibrate? = nil,
                oscillate: Oscillate? = nil) {
        self.name = name; self.durationSeconds = durationSeconds; self.rotation = rotation
        self.translation = translation; self.walk = walk; self.vibrate = vibrate; self.oscillate = oscillate
    }

    /// A short label of what the segment does: its name, or its kinds.
    public var label: String {
        if let name { return name }
        var kinds: [String] = []
        switch rotation {
        case .rate?, .angle?: kinds.append("rotate")
        case .to?: kinds.append("rotate_to")
        case .turn?: kinds.append("turn")
        case nil: break
        }
        if translation != nil { kinds.append("translate") }
        if walk != nil { kinds.append("walk") }
        if vibrate != nil { kinds.append("vibrate") }
        if oscillate != nil { kinds.append("oscillate") }
        return kinds.isEmpty ? "rest" : kinds.joined(separator: "+")
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, duration_s, rest, rotate, rotate_to, turn, translate, walk, vibrate, oscillate
    }
    enum RotateKeys: String, CodingKey, CaseIterable { case axis, frame, rate_dps, ramp_s, angle_deg }
    enum RotateToKeys: String, CodingKey, CaseIterable { case roll_deg, pitch_deg, yaw_deg, heading_deg }
    enum TurnKeys: String, CodingKey, CaseIterable { case angle_deg }
    enum TranslateKeys: String, CodingKey, CaseIterable { case displacement_m, to_velocity_m_s, frame }
    enum WalkKeys: String, CodingKey, CaseIterable { case step_hz, bob_m, sway_m, ramp_s }
    enum VibrateKeys: String, CodingKey, CaseIterable { case amplitude_m, frequency_hz, ramp_s }
    enum OscillateKeys: String, CodingKey, CaseIterable { case axis, amplitude_deg, frequency_hz, ramp_s }

    public init(from decoder: any Decoder) throws {
        let kinds = "rest, rotate, rotate_to, turn, translate, walk, vibrate, oscillate"
        let any = try decoder.container(keyedBy: ScenarioAnyKey.self)
        for key in any.allKeys where CodingKeys(rawValue: key.stringValue) == nil {
            throw scenarioError(decoder.codingPath + [key],
                                "unknown segment kind '\(key.stringValue)'; a motion segment has duration_s, an optional name and any of: \(kinds)")
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        durationSeconds = try c.scenarioNumber(.duration_s, positive: true)

        let rotations = [CodingKeys.rotate, .rotate_to, .turn].filter { c.contains($0) }
        if rotations.count > 1 {
            throw scenarioError(c.codingPath + [rotations[1]], "a segment has at most one of rotate, rotate_to, turn")
        }
        if c.contains(.rest) && CodingKeys.allCases.contains(where: { ![.name, .duration_s, .rest].contains($0) && c.contains($0) }) {
            throw scenarioError(c.codingPath + [CodingKeys.rest], "a rest segment has only duration_s and name")
        }
        if c.contains(.rotate) {
            let r = try c.superDecoder(forKey: .rotate)
            try r.scenarioRejectUnknownKeys(allowed: RotateKeys.allCases.map(\.rawValue), in: "rotate")
            let k = try r.container(keyedBy: RotateKeys.self)
            let axis = try k.scenarioAxis(.axis)
            let earth = try k.scenarioChoice(.frame, ["body", "earth"], default: "body") == "earth"
            switch (k.contains(.rate_dps), k.contains(.angle_deg)) {
            case (true, false):
                let ramp = try k.scenarioNumberIfPresent(.ramp_s, nonNegative: true) ?? 0
                guard 2 * ramp <= durationSeconds else {
                    throw scenarioError(k.codingPath + [RotateKeys.ramp_s], "ramp_s must be at most half the segment's duration_s (\(durationSeconds) s), got \(ramp)")
                }
                rotation = .rate(axis: axis, earthFrame: earth, rateDegreesPerSecond: try k.scenarioNumber(.rate_dps), rampSeconds: ramp)
            case (false, true):
                if k.contains(.ramp_s) {
                    throw scenarioError(k.codingPath + [RotateKeys.ramp_s], "ramp_s applies to rate_dps only; angle_deg always follows a minimum-jerk profile")
                }
                rotation = .angle(axis: axis, earthFrame: earth, angleDegrees: try k.scenarioNumber(.angle_deg))
            default:
                throw scenarioError(k.codingPath, "rotate needs exactly one of rate_dps (constant rate) or angle_deg (turn by an angle)")
            }
        } else if c.contains(.rotate_to) {
            let r = try c.superDecoder(forKey: .rotate_to)
            try r.scenarioRejectUnknownKeys(allowed: RotateToKeys.allCases.map(\.rawValue), in: "rotate_to")
            let k = try r.container(keyedBy: RotateToKeys.self)
            rotation = .to(try ScenarioEuler(container: k, roll: .roll_deg, pitch: .pitch_deg, yaw: .yaw_deg, heading: .heading_deg).quaternion)
        } else if c.contains(.turn) {
            let r = try c.superDecoder(forKey: .turn)
            try r.scenarioRejectUnknownKeys(allowed: TurnKeys.allCases.map(\.rawValue), in: "turn")
            let k = try r.container(keyedBy: TurnKeys.self)
            rotation = .turn(angleDegrees: try k.scenarioNumber(.angle_deg))
        } else {
            rotation = nil
        }

        if c.contains(.translate) {
            if c.contains(.turn) {
                throw scenarioError(c.codingPath + [CodingKeys.translate], "a turn carries the velocity round with it; put translate in its own segment")
            }
            let r = try c.superDecoder(forKey: .translate)
            try r.scenarioRejectUnknownKeys(allowed: TranslateKeys.allCases.map(\.rawValue), in: "translate")
            let k = try r.container(keyedBy: TranslateKeys.self)
            let frame = ScenarioTranslationFrame(rawValue: try k.scenarioChoice(.frame, ["earth", "heading", "body"], default: "earth"))!
            switch (k.contains(.displacement_m), k.contains(.to_velocity_m_s)) {
            case (true, false): translation = .displacement(try k.scenarioVector(.displacement_m), frame: frame)
            case (false, true): translation = .toVelocity(try k.scenarioVector(.to_velocity_m_s), frame: frame)
            default:
                throw scenarioError(k.codingPath, "translate needs exactly one of displacement_m [x, y, z] or to_velocity_m_s [x, y, z]")
            }
        } else {
            translation = nil
        }

        let duration = durationSeconds
        func ramp<K: CodingKey>(_ k: KeyedDecodingContainer<K>, _ key: K) throws -> Double? {
            guard let r = try k.scenarioNumberIfPresent(key, positive: true) else { return nil }
            guard 2 * r <= duration else {
                throw scenarioError(k.codingPath + [key], "ramp_s must be at most half the segment's duration_s (\(duration) s), got \(r)")
            }
            return r
        }
        if c.contains(.walk) {
            let r = try c.superDecoder(forKey: .walk)
            try r.scenarioRejectUnknownKeys(allowed: WalkKeys.allCases.map(\.rawValue), in: "walk")
            let k = try r.container(keyedBy: WalkKeys.self)
            walk = Walk(stepHz: try k.scenarioNumber(.step_hz, positive: true),
                        bobMeters: try k.scenarioNumberIfPresent(.bob_m, nonNegative: true) ?? 0.03,
                        swayMeters: try k.scenarioNumberIfPresent(.sway_m, nonNegative: true) ?? 0.02,
                        rampSeconds: try ramp(k, .ramp_s))
        } else { walk = nil }
        if c.contains(.vibrate) {
            let r = try c.superDecoder(forKey: .vibrate)
            try r.scenarioRejectUnknownKeys(allowed: VibrateKeys.allCases.map(\.rawValue), in: "vibrate")
            let k = try r.container(keyedBy: VibrateKeys.self)
            vibrate = Vibrate(amplitude: try k.scenarioVector(.amplitude_m),
                              frequencyHz: try k.scenarioNumber(.frequency_hz, positive: true),
                              rampSeconds: try ramp(k, .ramp_s))
        } else { vibrate = nil }
        if c.contains(.oscillate) {
            let r = try c.superDecoder(forKey: .oscillate)
            try r.scenarioRejectUnknownKeys(allowed: OscillateKeys.allCases.map(\.rawValue), in: "oscillate")
            let k = try r.container(keyedBy: OscillateKeys.self)
            oscillate = Oscillate(axis: try k.scenarioAxis(.axis),
                                  amplitudeDegrees: try k.scenarioNumber(.amplitude_deg),
                                  frequencyHz: try k.scenarioNumber(.frequency_hz, positive: true),
                                  rampSeconds: try ramp(k, .ramp_s))
        } else { oscillate = nil }
    }
}
