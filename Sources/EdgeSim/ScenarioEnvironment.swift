// The environment part of a scenario: magnetic field and disturbances,
// pressure (air or water), temperature, relative humidity.
import EdgeValues

public struct ScenarioEnvironment: Decodable, Sendable {
    public var field: ScenarioField
    public var disturbances: [ScenarioDisturbance]
    public var pressure: ScenarioPressure
    public var temperature: ScenarioTrack
    /// Relative humidity, % (0...100; what a BME280 measures). Default 45 %.
    public var humidity: ScenarioTrack

    public init(field: ScenarioField = ScenarioField(), disturbances: [ScenarioDisturbance] = [],
                pressure: ScenarioPressure = .altitude(seaLevelPascals: 101_325, startAltitudeMeters: 0, driftPascalsPerHour: 0),
                temperature: ScenarioTrack = ScenarioTrack(start: 20),
                humidity: ScenarioTrack = ScenarioTrack(start: ScenarioEnvironment.defaultHumidityPercent)) {
        self.field = field; self.disturbances = disturbances; self.pressure = pressure; self.temperature = temperature
        self.humidity = humidity
    }

    /// Relative humidity when a scenario gives none, %.
    public static let defaultHumidityPercent = 45.0

    enum CodingKeys: String, CodingKey, CaseIterable { case field, disturbances, pressure, temperature, humidity }
    enum TemperatureKeys: String, CodingKey, CaseIterable { case start_c, profile }
    enum HumidityKeys: String, CodingKey, CaseIterable { case start_pct, profile }

    public init(from decoder: any Decoder) throws {
        try decoder.scenarioRejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue), in: "environment")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        field = try c.decodeIfPresent(ScenarioField.self, forKey: .field) ?? ScenarioField()
        disturbances = try c.decodeIfPresent([ScenarioDisturbance].self, forKey: .disturbances) ?? []
        pressure = try c.decodeIfPresent(ScenarioPressure.self, forKey: .pressure)
            ?? .altitude(seaLevelPascals: 101_325, startAltitudeMeters: 0, driftPascalsPerHour: 0)
        if c.contains(.temperature) {
            let d = try c.superDecoder(forKey: .temperature)
            try d.scenarioRejectUnknownKeys(allowed: TemperatureKeys.allCases.map(\.rawValue), in: "temperature")
            let k = try d.container(keyedBy: TemperatureKeys.self)
            temperature = ScenarioTrack(
                start: try k.scenarioNumberIfPresent(.start_c) ?? 20,
                segments: try ScenarioTrack.decodeSegments(k, .profile, targetKey: "to_c", rateKey: "rate_c_per_min"),
                shape: .minimumJerk).resolvingRates()
        } else {
            temperature = ScenarioTrack(start: 20)
        }
        if c.contains(.humidity) {
            let d = try c.superDecoder(forKey: .humidity)
            try d.scenarioRejectUnknownKeys(allowed: HumidityKeys.allCases.map(\.rawValue), in: "humidity")
            let k = try d.container(keyedBy: HumidityKeys.self)
            humidity = ScenarioTrack(
                start: try k.scenarioNumberIfPresent(.start_pct) ?? Self.defaultHumidityPercent,
                segments: try ScenarioTrack.decodeSegments(k, .profile, targetKey: "to_pct", rateKey: "rate_pct_per_min"),
                shape: .minimumJerk).resolvingRates()
            for v in [humidity.start] + humidity.segments.compactMap(\.target) where !(0...100).contains(v) {
                throw scenarioError(k.codingPath, "relative humidity must be 0...100 %, got \(v)")
            }
        } else {
            humidity = ScenarioTrack(start: Self.defaultHumidityPercent)
        }
    }
}

/// The Earth's magnetic field. Defaults: 48 µT, 60° down, no declination
/// (the mid-latitude field of `PhysicalTruth.restingLevel`).
public struct ScenarioField: Decodable, Sendable, Equatable {
    public var intensityMicrotesla: Double
    /// Positive: the field points below the horizon (northern hemisphere).
    public var inclinationDegrees: Double
    /// Positive: magnetic north lies east of true north.
    public var declinationDegrees: Double

    public init(intensityMicrotesla: Double = 48, inclinationDegrees: Double = 60, declinationDegrees: Double = 0) {
        self.intensityMicrotesla = intensityMicrotesla; self.inclinationDegrees = inclinationDegrees
        self.declinationDegrees = declinationDegrees
    }

    /// The field in the earth frame (X north, Y west, Z up), µT.
    public var earthVector: Vector3 {
        scenarioEarthField(intensity: intensityMicrotesla, inclinationDegrees: inclinationDegrees,
                           declinationDegrees: declinationDegrees)
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case intensity_ut, inclination_deg, declination_deg }

    public init(from decoder: any Decoder) throws {
        try decoder.scenarioRejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue), in: "field")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        intensityMicrotesla = try c.scenarioNumberIfPresent(.intensity_ut, nonNegative: true) ?? 48
        inclinationDegrees = try c.scenarioNumberIfPresent(.inclination_deg) ?? 60
        declinationDegrees = try c.scenarioNumberIfPresent(.declination_deg) ?? 0
        guard abs(inclinationDegrees) <= 90 else {
            throw scenarioError(c.codingPath + [CodingKeys.inclination_deg], "inclination_deg must be within −90…90, got \(inclinationDegrees)")
        }
    }
}

/// Which bodies a disturbance reaches.
public enum ScenarioBodies: String, Sendable, Decodable {
    case all, board, accessory
    func includes(_ body: SimBody) -> Bool {
        switch self { case .all: true; case .board: body == .board; case .accessory: body == .accessory }
    }
}

/// A magnetic disturbance.
public enum ScenarioDisturbance: Decodable, Sendable, Equatable {
    /// A magnet passing by: a field of `peak` µT along `direction` (unit;
    /// earth frame, or body frame if `bodyFrame`) rising and falling along a
    /// raised cosine from `start` for `duration` seconds.
    case magnet(name: String, start: Double, duration: Double, peakMicrotesla: Double,
                direction: Vector3, bodyFrame: Bool, bodies: ScenarioBodies)
    /// Steel fixed to the body (a car, a steel desk under the board): hard
    /// iron `offset` µT and soft-iron matrix `softIron` (rows, body frame:
    /// B' = S·B + offset) between `from` and `to`, blended in and out over
    /// `ramp` seconds.
    case steel(name: String, from: Double, to: Double, offsetMicrotesla: Vector3,
               softIron: [Vector3], ramp: Double, bodies: ScenarioBodies)

    public var name: String {
        switch self { case .magnet(let n, _, _, _, _, _, _), .steel(let n, _, _, _, _, _, _): n }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, name, start_s, duration_s, peak_ut, direction, frame, body, from_s, to_s, offset_ut, soft_iron, ramp_s
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try c.scenarioChoice(.kind, ["magnet", "steel"])
        let bodies = ScenarioBodies(rawValue: try c.scenarioChoice(.body, ["all", "board", "accessory"], default: "all"))!
        let name = try c.decodeIfPresent(String.self, forKey: .name) ?? kind
        switch kind {
        case "magnet":
            try decoder.scenarioRejectUnknownKeys(allowed: ["kind", "name", "start_s", "duration_s", "peak_ut", "direction", "frame", "body"], in: "a magnet disturbance")
            let direction = try c.scenarioAxis(.direction)
            self = .magnet(name: name, start: try c.scenarioNumber(.start_s, nonNegative: true),
                           duration: try c.scenarioNumber(.duration_s, positive: true),
                           peakMicrotesla: try c.scenarioNumber(.peak_ut),
                           direction: direction,
                           bodyFrame: try c.scenarioChoice(.frame, ["earth", "body"], default: "earth") == "body",
                           bodies: bodies)
        default:
            try decoder.scenarioRejectUnknownKeys(allowed: ["kind", "name", "from_s", "to_s", "offset_ut", "soft_iron", "ramp_s", "body"], in: "a steel disturbance")
            let from = try c.scenarioNumberIfPresent(.from_s, nonNegative: true) ?? 0
            let to = try c.scenarioNumberIfPresent(.to_s) ?? .greatestFiniteMagnitude
            guard to > from else {
                throw scenarioError(c.codingPath + [CodingKeys.to_s], "to_s must be after from_s (\(from)), got \(to)")
            }
            var rows = [Vector3(1, 0, 0), Vector3(0, 1, 0), Vector3(0, 0, 1)]
            if c.contains(.soft_iron) {
                let m = try c.decode([[Double]].self, forKey: .soft_iron)
                guard m.count == 3, m.allSatisfy({ $0.count == 3 && $0.allSatisfy(\.isFinite) }) else {
                    throw scenarioError(c.codingPath + [CodingKeys.soft_iron], "soft_iron must be a 3×3 matrix of rows [[a, b, c], [d, e, f], [g, h, i]] (identity: no soft iron)")
                }
                rows = m.map { Vector3($0[0], $0[1], $0[2]) }
            }
            let ramp = try c.scenarioNumberIfPresent(.ramp_s, nonNegative: true) ?? 0
            if to < .greatestFiniteMagnitude && 2 * ramp > to - from {
                throw scenarioError(c.codingPath + [CodingKeys.ramp_s], "ramp_s must be at most half of to_s − from_s, got \(ramp)")
            }
            guard ramp == 0 || ramp >= scenarioSmallestPositive else {   // the ramp divides (scenarioEnvelope)
                throw scenarioError(c.codingPath + [CodingKeys.ramp_s], "ramp_s must be 0 or at least 1e-6 s, got \(ramp)")
            }
            self = .steel(name: name, from: from, to: to, offsetMicrotesla: try c.scenarioVectorIfPresent(.offset_ut) ?? .zero,
                          softIron: rows, ramp: ramp, bodies: bodies)
        }
    }
}

/// Where the pressure comes from.
public enum ScenarioPressure: Decodable, Sendable, Equatable {
    /// Air: the standard atmosphere at `startAltitudeMeters` plus the body's
    /// height (position Z), with the sea-level pressure drifting by
    /// `driftPascalsPerHour` (weather).
    case altitude(seaLevelPascals: Double, startAltitudeMeters: Double, driftPascalsPerHour: Double)
    /// Water: `surface + ρ·g·depth`, depth following its own profile (body
    /// motion does not change it).
    case water(surfacePascals: Double, densityKilogramsPerCubicMeter: Double, depth: ScenarioTrack)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case mode, sea_level_pa, start_altitude_m, drift_pa_per_h, surface_pa, density_kg_m3, start_depth_m, profile
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        switch try c.scenarioChoice(.mode, ["altitude", "water"], default: "altitude") {
        case "altitude":
            try decoder.scenarioRejectUnknownKeys(allowed: ["mode", "sea_level_pa", "start_altitude_m", "drift_pa_per_h"], in: "altitude pressure")
            self = .altitude(seaLevelPascals: try c.scenarioNumberIfPresent(.sea_level_pa, positive: true) ?? 101_325,
                             startAltitudeMeters: try c.scenarioNumberIfPresent(.start_altitude_m) ?? 0,
                             driftPascalsPerHour: try c.scenarioNumberIfPresent(.drift_pa_per_h) ?? 0)
        default:
            try decoder.scenarioRejectUnknownKeys(allowed: ["mode", "surface_pa", "density_kg_m3", "start_depth_m", "profile"], in: "water pressure")
            self = .water(surfacePascals: try c.scenarioNumberIfPresent(.surface_pa, positive: true) ?? 101_325,
                          densityKilogramsPerCubicMeter: try c.scenarioNumberIfPresent(.density_kg_m3, positive: true) ?? 1025,
                          depth: ScenarioTrack(
                            start: try c.scenarioNumberIfPresent(.start_depth_m, nonNegative: true) ?? 0,
                            segments: try ScenarioTrack.decodeSegments(c, .profile, targetKey: "to_depth_m", rateKey: "rate_m_per_min"),
                            shape: .constantRate).resolvingRates())
        }
    }
}

/// A scalar over time (depth in m, temperature in °C): a start value and
/// segments that move it to a target or hold it.
public struct ScenarioTrack: Sendable, Equatable {
    /// How a move between two values is shaped.
    public enum Shape: Sendable, Equatable {
        /// Constant rate with smoothed corners (4 s or a quarter of the move);
        /// a rate-given move is lengthened by its corners, so its straight
        /// part runs at the stated rate (``resolvingRates()``).
        case constantRate
        /// Minimum-jerk curve (slow start and end).
        case minimumJerk
    }
    public struct Segment: Sendable, Equatable {
        public var name: String?
        public var durationSeconds: Double
        /// Value to reach at the end; nil: hold.
        public var target: Double?
        public init(name: String? = nil, durationSeconds: Double, target: Double? = nil) {
            self.name = name; self.durationSeconds = durationSeconds; self.target = target
        }
    }
    public var start: Double
    public var segments: [Segment]
    public var shape: Shape

    public init(start: Double, segments: [Segment] = [], shape: Shape = .minimumJerk) {
        self.start = start; self.segments = segments; self.shape = shape
    }

    static func decodeSegments<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K, targetKey: String,
                                             rateKey: String) throws -> [Segment] {
        guard c.contains(key) else { return [] }
        var list = try c.nestedUnkeyedContainer(forKey: key)
        var out: [Segment] = []
        while !list.isAtEnd {
            let d = try list.superDecoder()
            try d.scenarioRejectUnknownKeys(allowed: ["name", "duration_s", "hold_s", targetKey, rateKey], in: "a profile segment")
            let k = try d.container(keyedBy: ScenarioAnyKey.self)
            let name = try k.decodeIfPresent(String.self, forKey: ScenarioAnyKey(stringValue: "name"))
            let hold = try k.scenarioNumberIfPresent(ScenarioAnyKey(stringValue: "hold_s"), positive: true)
            let duration = try k.scenarioNumberIfPresent(ScenarioAnyKey(stringValue: "duration_s"), positive: true)
            let target = try k.scenarioNumberIfPresent(ScenarioAnyKey(stringValue: targetKey))
            let rate = try k.scenarioNumberIfPresent(ScenarioAnyKey(stringValue: rateKey), positive: true)
            if let hold {
                guard target == nil, duration == nil, rate == nil else {
                    throw scenarioError(k.codingPath, "a hold segment has hold_s (and a name) only")
                }
                out.append(Segment(name: name, durationSeconds: hold))
                continue
            }
            guard let target else {
                throw scenarioError(k.codingPath, "a profile segment is {\(targetKey), duration_s or \(rateKey)} or {hold_s}")
            }
            switch (duration, rate) {
            case (let dur?, nil):
                out.append(Segment(name: name, durationSeconds: dur, target: target))
            case (nil, let r?):
                // Duration from the distance, known once the previous value is.
                out.append(Segment(name: name, durationSeconds: -r, target: target))
            default:
                throw scenarioError(k.codingPath, "give exactly one of duration_s or \(rateKey) to reach \(targetKey)")
            }
        }
        return out
    }

    /// The smoothed corners of a constant-rate move lasting `duration` s:
    /// 4 s each, or a quarter of a move shorter than 16 s.
    static func cornerSeconds(duration: Double) -> Double { min(4, duration / 4) }

    /// Replaces rate-given durations (stored negative, per minute) with
    /// seconds, now that the start value is known.
    ///
    /// A move's stated rate is its rate: with `.constantRate` the straight
    /// part runs at exactly the rate and the smoothed corners lengthen the
    /// move (a trapezoid of rate covers peak · (T − corner)), so a move of
    /// d at r takes d/r plus one corner (4 s; for a straight part shorter
    /// than 12 s, T = 4/3 · d/r, whose quarter is the corner). A
    /// minimum-jerk move lasts d/r (its mean rate is r).
    func resolvingRates() -> ScenarioTrack {
        var t = self, v = start
        for i in t.segments.indices {
            if let target = t.segments[i].target {
                if t.segments[i].durationSeconds < 0 {
                    let perMinute = -t.segments[i].durationSeconds
                    let straight = max(abs(target - v) / perMinute * 60, 1e-3)
                    switch shape {
                    case .constantRate: t.segments[i].durationSeconds = straight >= 12 ? straight + 4 : straight * 4 / 3
                    case .minimumJerk: t.segments[i].durationSeconds = straight
                    }
                }
                v = target
            }
        }
        return t
    }
}

/// A scheduled bus fault as written in a scenario.
public struct ScenarioFault: Decodable, Sendable, Equatable {
    public var name: String
    public var fault: ScheduledFault

    public init(name: String, fault: ScheduledFault) { self.name = name; self.fault = fault }

    /// Whether the fault is active at `t` seconds (reset: for the instant of
    /// `at` only, reported for 0.1 s; error_every: always).
    public func isActive(atSeconds t: Double) -> Bool {
        switch fault {
        case .nack(_, _, let from, let to), .disappear(_, let from, let to): return t >= from && t < to
        case .reset(_, let at): return t >= at && t < at + 0.1
        case .errorEvery: return true
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case kind, name, address, register, from_s, to_s, at_s, every, errno }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try c.scenarioChoice(.kind, ["nack", "error_every", "reset", "disappear"])
        func window() throws -> (Double, Double) {
            let from = try c.scenarioNumber(.from_s, nonNegative: true), to = try c.scenarioNumber(.to_s)
            guard to > from else { throw scenarioError(c.codingPath + [CodingKeys.to_s], "to_s must be after from_s (\(from)), got \(to)") }
            return (from, to)
        }
        func address() throws -> UInt8 { try c.scenarioByte(.address, max: 0x7F, what: "an I2C address") }
        switch kind {
        case "nack":
            try decoder.scenarioRejectUnknownKeys(allowed: ["kind", "name", "address", "register", "from_s", "to_s"], in: "a nack fault")
            let a = try address()
            let r = c.contains(.register) ? try c.scenarioByte(.register, what: "a register") : nil
            let (from, to) = try window()
            fault = .nack(address: a, register: r, from: from, to: to)
            name = try c.decodeIfPresent(String.self, forKey: .name) ?? "nack \(scenarioHex(a))" + (r.map { " reg \(scenarioHex($0))" } ?? "")
        case "error_every":
            try decoder.scenarioRejectUnknownKeys(allowed: ["kind", "name", "address", "every", "errno"], in: "an error_every fault")
            let a = c.contains(.address) ? try address() : nil
            let every = try c.decode(Int.self, forKey: .every)
            guard every >= 1 else { throw scenarioError(c.codingPath + [CodingKeys.every], "every must be ≥ 1, got \(every)") }
            var e: Int32 = 5
            if c.contains(.errno) {
                if let n = try? c.decode(Int32.self, forKey: .errno) { e = n }
                else {
                    let s = try c.decode(String.self, forKey: .errno)
                    guard let m = scenarioErrnoNames.first(where: { $0.name == s.uppercased() }) else {
                        throw scenarioError(c.codingPath + [CodingKeys.errno], "errno must be a number or one of \(scenarioErrnoNames.map(\.name).joined(separator: ", ")); got \"\(s)\"")
                    }
                    e = m.value
                }
                guard e > 0 else { throw scenarioError(c.codingPath + [CodingKeys.errno], "errno must be positive, got \(e)") }
            }
            fault = .errorEvery(address: a, every: every, errno: e)
            name = try c.decodeIfPresent(String.self, forKey: .name) ?? "error every \(every)" + (a.map { " \(scenarioHex($0))" } ?? "")
        case "reset":
            try decoder.scenarioRejectUnknownKeys(allowed: ["kind", "name", "address", "at_s"], in: "a reset fault")
            let a = try address()
            fault = .reset(address: a, at: try c.scenarioNumber(.at_s, nonNegative: true))
            name = try c.decodeIfPresent(String.self, forKey: .name) ?? "reset \(scenarioHex(a))"
        default:
            try decoder.scenarioRejectUnknownKeys(allowed: ["kind", "name", "address", "from_s", "to_s"], in: "a disappear fault")
            let a = try address()
            let (from, to) = try window()
            fault = .disappear(address: a, from: from, to: to)
            name = try c.decodeIfPresent(String.self, forKey: .name) ?? "disappear \(scenarioHex(a))"
        }
    }
}

func scenarioHex(_ v: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return "0x" + String(digits[Int(v >> 4)]) + String(digits[Int(v & 0xF)])
}
