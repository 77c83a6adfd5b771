// A scenario compiled into a TruthSource: the physical truth for each body
// at any time on the simulation's virtual clock, deterministic, with no
// allocation per query.
import EdgeValues

/// A scenario that cannot be played, with the key path of the culprit.
public struct ScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Key path inside the scenario ("board", "segments", "Index 2", …).
    public var path: [String]
    public var message: String
    public init(path: [String], message: String) { self.path = path; self.message = message }
    var codingPath: [any CodingKey] { path.map { ScenarioAnyKey(stringValue: $0) } }
    public var description: String {
        path.isEmpty ? message : "\(path.joined(separator: ".")): \(message)"
    }
}

/// Everything the truth CSV and tests want to know about one instant.
public struct TruthSample: Sendable, Equatable {
    /// Simulation clock, ns.
    public var timeNanoseconds: UInt64
    /// Scenario time, s (after wrapping, for a looping scenario).
    public var scenarioSeconds: Double
    /// The body's position, attitude and motion.
    public var kinematics: WorldKinematics
    /// Altitude of the body above sea level, m (start_altitude_m + height).
    public var altitudeMeters: Double
    /// Depth under water, m (0 in air).
    public var depthMeters: Double
    /// What the chips on the body should sense.
    public var truth: PhysicalTruth

    /// Sensor-to-earth attitude (earth frame X north, Y west, Z up).
    public var attitude: Quaternion { kinematics.attitude }
}

/// Plays a `Scenario`: `truth(atNanoseconds:body:)` is cheap and pure
/// (same time, same answer), so any number of chip models may ask.
public final class ScenarioWorld: TruthSource, Sendable {
    public let scenario: Scenario
    /// Simulation-clock time at which scenario time 0 falls, ns.
    public let startNanoseconds: UInt64
    /// Earth's field in the earth frame, µT.
    public let earthField: Vector3

    let board: WorldTrajectory
    let accessory: WorldTrajectory?
    let accessoryRelative: Bool
    let disturbances: [WorldDisturbance]
    let depth: WorldTrack?
    let temperature: WorldTrack
    let humidity: WorldTrack
    let loopPeriod: Double?

    /// Compiles `scenario`. Throws if it cannot be played (segments longer
    /// than the scenario, a looping scenario that does not return to its
    /// start, an accessory relative to the board that translates).
    public init(_ scenario: Scenario, startNanoseconds: UInt64 = 0) throws(ScenarioError) {
        self.scenario = scenario
        self.startNanoseconds = startNanoseconds
        let duration = scenario.durationSeconds
        guard duration >= scenarioSmallestPositive, duration <= Scenario.maximumDurationSeconds else {
            throw ScenarioError(path: ["duration_s"], message: "duration_s must be within 1e-6…\(Int(Scenario.maximumDurationSeconds)) s, got \(duration)")
        }
        board = try WorldTrajectory(scenario.board, duration: duration, relative: false, path: ["board"])
        if let acc = scenario.accessory {
            if acc.relativeTo == .board && (acc.motion.start.position != .zero || acc.motion.start.velocity != .zero) {
                throw ScenarioError(path: ["accessory", "start"], message: "an accessory relative_to \"board\" shares the board's position and velocity; give its start attitude only")
            }
            accessory = try WorldTrajectory(acc.motion, duration: duration, relative: acc.relativeTo == .board, path: ["accessory"])
            accessoryRelative = acc.relativeTo == .board
        } else {
            accessory = nil; accessoryRelative = false
        }
        let env = scenario.environment
        for (track, key) in [(env.temperature, "temperature"), (env.humidity, "humidity")] + Self.depthTrack(env.pressure) {
            for (i, seg) in track.segments.enumerated() where !(seg.durationSeconds >= scenarioSmallestPositive && seg.durationSeconds <= scenarioLargestMagnitude) {
                throw ScenarioError(path: ["environment", key, "profile", "Index \(i)"],
                                    message: "a profile segment's duration must be within 1e-6…1e9 s, got \(seg.durationSeconds)")
            }
        }
        earthField = scenario.environment.field.earthVector
        disturbances = scenario.environment.disturbances.map(WorldDisturbance.init)
        switch scenario.environment.pressure {
        case .altitude: depth = nil
        case .water(_, _, let track): depth = WorldTrack(track)
        }
        temperature = WorldTrack(scenario.environment.temperature)
        humidity = WorldTrack(scenario.environment.humidity)
        loopPeriod = scenario.loop ? duration : nil

        if scenario.loop {
            try Self.checkLoopCloses(board, name: "board")
            if let accessory { try Self.checkLoopCloses(accessory, name: "accessory") }
        }
    }

    static func depthTrack(_ p: ScenarioPressure) -> [(ScenarioTrack, String)] {
        if case .water(_, _, let depth) = p { return [(depth, "pressure")] }
        return []
    }

    static func checkLoopCloses(_ t: WorldTrajectory, name: String) throws(ScenarioError) {
        let start = t.start
        let end = t.pieces.last.map { $0.evaluate($0.duration) } ?? t.final
        let angle = end.attitude.angle(to: start.attitude) * 180 / .pi
        if angle > 0.5 {
            throw ScenarioError(path: [name, "segments"], message: "loop is true but the \(name) ends \(ScenarioTruthCSV.fixed(angle, decimals: 2))° away from its start attitude; add a rotate_to back to the start")
        }
        if (end.velocity - start.velocity).norm > 1e-3 {
            throw ScenarioError(path: [name, "segments"], message: "loop is true but the \(name) ends moving at \(end.velocity) m/s, not its start velocity")
        }
        if abs(end.position.z - start.position.z) > 1e-3 {
            throw ScenarioError(path: [name, "segments"], message: "loop is true but the \(name) ends \(end.position.z - start.position.z) m above its start height")
        }
    }

    // MARK: time

    /// Scenario seconds at simulation time `t` ns (wrapped if looping).
    public func scenarioSeconds(atNanoseconds t: UInt64) -> Double {
        let s = t > startNanoseconds ? Double(t - startNanoseconds) / 1e9 : 0
        guard let period = loopPeriod else { return s }
        let r = s.truncatingRemainder(dividingBy: period)
        return r < 0 ? r + period : r
    }

    /// Seconds since the start, unwrapped (for faults, which never loop).
    func absoluteSeconds(atNanoseconds t: UInt64) -> Double {
        t > startNanoseconds ? Double(t - startNanoseconds) / 1e9 : 0
    }

    // MARK: evaluation

    /// Position and motion of `body` at scenario time `s` seconds.
    public func kinematics(atSeconds s: Double, body: SimBody) -> WorldKinematics {
        let b = board.evaluate(s)
        guard body == .accessory, let accessory else { return b }
        let a = accessory.evaluate(s)
        guard accessoryRelative else { return a }
        // Head on a torso: q = q_board ⊗ q_rel, ω = q_rel⁻¹ ω_board + ω_rel.
        return WorldKinematics(attitude: (b.attitude * a.attitude).normalized,
                               angularRate: a.attitude.conjugate.rotate(b.angularRate) + a.angularRate,
                               position: b.position, velocity: b.velocity, acceleration: b.acceleration)
    }

    /// Magnetic field at the body, µT, body frame: the Earth's field plus
    /// magnets (earth or body frame), then steel (hard and soft iron).
    func magneticField(atSeconds s: Double, body: SimBody, attitude: Quaternion) -> Vector3 {
        var earth = earthField
        for d in disturbances where d.isMagnet && !d.bodyFrame && d.bodies.includes(body) {
            earth += d.vector * d.weight(at: s)
        }
        var b = attitude.conjugate.rotate(earth)
        for d in disturbances where d.isMagnet && d.bodyFrame && d.bodies.includes(body) {
            b += d.vector * d.weight(at: s)
        }
        for d in disturbances where !d.isMagnet && d.bodies.includes(body) {
            let e = d.weight(at: s)
            if e > 0 {
                let soft = Vector3(d.row0.dot(b), d.row1.dot(b), d.row2.dot(b))
                b += (soft - b + d.vector) * e
            }
        }
        return b
    }

    /// Depth under water at `s`, m (0 in air).
    public func depthMeters(atSeconds s: Double) -> Double { max(depth?.value(at: s) ?? 0, 0) }

    /// Ambient temperature at `s`, °C.
    public func temperatureCelsius(atSeconds s: Double) -> Double { temperature.value(at: s) }

    /// Altitude above sea level of a body at `position`, m.
    func altitude(_ position: Vector3) -> Double {
        switch scenario.environment.pressure {
        case .altitude(_, let start, _): return start + position.z
        case .water: return position.z
        }
    }

    /// Absolute pressure, Pa, for a body at `position` at time `s`.
    func pressure(atSeconds s: Double, position: Vector3) -> Double {
        switch scenario.environment.pressure {
        case .altitude(let sea, let start, let drift):
            return scenarioStandardAtmospherePressure(altitude: start + position.z, seaLevel: sea + drift * s / 3600)
        case .water(let surface, let density, _):
            return scenarioWaterPressure(depth: depthMeters(atSeconds: s), surface: surface, density: density)
        }
    }

    /// The truth for `body` at scenario time `s` seconds.
    public func truth(atSeconds s: Double, body: SimBody) -> PhysicalTruth {
        let k = kinematics(atSeconds: s, body: body)
        return PhysicalTruth(specificForce: k.specificForce, angularRate: k.angularRate,
                             magneticField: magneticField(atSeconds: s, body: body, attitude: k.attitude),
                             pressure: pressure(atSeconds: s, position: k.position),
                             temperature: temperature.value(at: s),
                             relativeHumidity: min(100, max(0, humidity.value(at: s))))
    }

    public func truth(atNanoseconds t: UInt64, body: SimBody) -> PhysicalTruth {
        truth(atSeconds: scenarioSeconds(atNanoseconds: t), body: body)
    }

    /// The inertial fields of ``truth(atSeconds:body:)``, computed the same
    /// way, without the field, pressure and humidity.
    public func inertialTruth(atNanoseconds t: UInt64, body: SimBody) -> InertialTruth {
        let s = scenarioSeconds(atNanoseconds: t)
        let k = kinematics(atSeconds: s, body: body)
        return InertialTruth(specificForce: k.specificForce, angularRate: k.angularRate, temperature: temperature.value(at: s))
    }

    /// The field and temperature of ``truth(atSeconds:body:)``, computed the
    /// same way, without pressure and humidity.
    public func fieldTruth(atNanoseconds t: UInt64, body: SimBody) -> FieldTruth {
        let s = scenarioSeconds(atNanoseconds: t)
        let k = kinematics(atSeconds: s, body: body)
        return FieldTruth(magneticField: magneticField(atSeconds: s, body: body, attitude: k.attitude),
                          temperature: temperature.value(at: s))
    }

    /// Everything known about `body` at simulation time `t` ns.
    public func sample(atNanoseconds t: UInt64, body: SimBody = .board) -> TruthSample {
        let s = scenarioSeconds(atNanoseconds: t)
        let k = kinematics(atSeconds: s, body: body)
        let truth = PhysicalTruth(specificForce: k.specificForce, angularRate: k.angularRate,
                                  magneticField: magneticField(atSeconds: s, body: body, attitude: k.attitude),
                                  pressure: pressure(atSeconds: s, position: k.position),
                                  temperature: temperature.value(at: s),
                             relativeHumidity: min(100, max(0, humidity.value(at: s))))
        return TruthSample(timeNanoseconds: t, scenarioSeconds: s, kinematics: k,
                           altitudeMeters: altitude(k.position), depthMeters: depthMeters(atSeconds: s), truth: truth)
    }

    /// Names of what is going on at simulation time `t` ns: the board's
    /// segment, the accessory's ("accessory:" prefix), active disturbances,
    /// named depth/temperature segments and active faults. Allocates: for
    /// truth logs, not for the chip models' hot path.
    public func activeEvents(atNanoseconds t: UInt64) -> [String] {
        let s = scenarioSeconds(atNanoseconds: t)
        var events: [String] = []
        if let i = board.pieceIndex(at: s) { events.append(board.pieces[i].label) }
        if let accessory, let i = accessory.pieceIndex(at: s) { events.append("accessory:" + accessory.pieces[i].label) }
        for d in disturbances where d.weight(at: s) > 0 { events.append(d.name) }
        if let depth, let i = depth.index(at: s), let name = depth.pieces[i].name { events.append(name) }
        if let i = temperature.index(at: s), let name = temperature.pieces[i].name { events.append(name) }
        let absolute = absoluteSeconds(atNanoseconds: t)
        for f in scenario.faults where f.isActive(atSeconds: absolute) {
            if case .errorEvery = f.fault { continue }
            events.append(f.name)
        }
        return events
    }

    // MARK: what the chip models take from the scenario

    /// Seed of the scenario (see `Scenario.seed(for:)` for per-chip streams).
    public var seed: UInt64 { scenario.seed }
    /// The chips' imperfections, as written (an object keyed by chip).
    public var imperfections: ScenarioJSONValue { scenario.imperfections }
    /// Faults for the simulated bus.
    public var faults: [ScheduledFault] { scenario.scheduledFaults }
    /// Scenario length, s.
    public var durationSeconds: Double { scenario.durationSeconds }
    /// Attitude at `s` seconds of `body` (sensor-to-earth).
    public func attitude(atSeconds s: Double, body: SimBody = .board) -> Quaternion {
        kinematics(atSeconds: s, body: body).attitude
    }
}

/// A disturbance flattened for evaluation without allocation.
struct WorldDisturbance: Sendable {
    var name: String
    var isMagnet: Bool
    var bodyFrame: Bool
    var bodies: ScenarioBodies
    var from: Double, to: Double, ramp: Double
    /// Magnet: peak field (direction × peak), µT. Steel: hard-iron offset, µT.
    var vector: Vector3
    var row0 = Vector3(1, 0, 0), row1 = Vector3(0, 1, 0), row2 = Vector3(0, 0, 1)

    init(_ d: ScenarioDisturbance) {
        switch d {
        case .magnet(let name, let start, let duration, let peak, let direction, let bodyFrame, let bodies):
            self.name = name; isMagnet = true; self.bodyFrame = bodyFrame; self.bodies = bodies
            from = start; to = start + duration; ramp = 0; vector = direction.normalized * peak
        case .steel(let name, let from, let to, let offset, let soft, let ramp, let bodies):
            self.name = name; isMagnet = false; bodyFrame = true; self.bodies = bodies
            self.from = from; self.to = to; self.ramp = ramp; vector = offset
            row0 = soft[0]; row1 = soft[1]; row2 = soft[2]
        }
    }

    /// 0…1: a raised-cosine bump for a magnet; for steel, 1 between from and
    /// to, blended along smooth steps of `ramp` seconds.
    func weight(at s: Double) -> Double {
        guard s >= from, s < to else { return 0 }
        if isMagnet {
            let tau = (s - from) / (to - from)
            return (1 - mathCos(2 * .pi * tau)) / 2
        }
        if ramp <= 0 { return 1 }
        if s - from < ramp { return ScenarioSmoothStep.value((s - from) / ramp) }
        if to - s < ramp { return ScenarioSmoothStep.value((to - s) / ramp) }
        return 1
    }
}
