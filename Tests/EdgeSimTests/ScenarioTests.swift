import EdgeFusion
import Foundation
import Testing
@testable import EdgeSim

// MARK: helpers

/// The repository's scenarios/ directory, found from this file.
let scenarioDirectory: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("scenarios")

func decodeScenario(_ text: String) throws -> Scenario {
    let d = JSONDecoder()
    d.allowsJSON5 = true
    return try d.decode(Scenario.self, from: Data(text.utf8))
}

func loadScenario(_ name: String) throws -> Scenario {
    let url = scenarioDirectory.appendingPathComponent(name + ".json5")
    return try decodeScenario(String(contentsOf: url, encoding: .utf8))
}

func world(_ name: String) throws -> ScenarioWorld { try ScenarioWorld(loadScenario(name)) }

func ns(_ seconds: Double) -> UInt64 { UInt64((seconds * 1e9).rounded()) }

func close(_ a: Vector3, _ b: Vector3, _ tol: Double = 1e-9) -> Bool { (a - b).norm <= tol }

/// Integrates the body angular rate from t0 to t1 (midpoint rule on the
/// exponential map) starting from the world's attitude at t0.
func integrateAttitude(_ w: ScenarioWorld, body: SimBody, from t0: Double, to t1: Double, step: Double) -> Quaternion {
    var q = w.attitude(atSeconds: t0, body: body)
    var t = t0
    while t < t1 - 1e-12 {
        let h = min(step, t1 - t)
        let omega = w.kinematics(atSeconds: t + h / 2, body: body).angularRate
        q = (q * Quaternion(rotationVector: omega * h)).normalized
        t += h
    }
    return q
}

let g0 = 9.80665

// MARK: the library

@Suite("Scenario library")
struct ScenarioLibraryTests {
    static let required = [
        "rest-flat", "rest-upside-down", "rest-x-up", "rest-y-up", "rotate-x", "rotate-y", "rotate-z",
        "pickup-walk", "lift-3m", "magnet-pass", "car-ride", "dive-18m", "head-accessory", "desk-idle", "faults-demo",
    ]

    @Test("every file in scenarios/ decodes, validates and evaluates to finite truth")
    func everyFileDecodes() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: scenarioDirectory.path)
            .filter { $0.hasSuffix(".json5") }.sorted()
        #expect(files.count >= Self.required.count)
        for name in Self.required { #expect(files.contains(name + ".json5"), "missing scenarios/\(name).json5") }
        for file in files {
            let text = try String(contentsOf: scenarioDirectory.appendingPathComponent(file), encoding: .utf8)
            let scenario: Scenario
            do { scenario = try decodeScenario(text) } catch {
                Issue.record("\(file): \(error)"); continue
            }
            #expect(scenario.name + ".json5" == file, "name matches the file name")
            #expect(!scenario.description.isEmpty)
            let w = try ScenarioWorld(scenario)
            var t = 0.0
            while t <= scenario.durationSeconds + 1 {
                for body in SimBody.allCases {
                    let truth = w.truth(atNanoseconds: ns(t), body: body)
                    let values = [truth.specificForce.x, truth.specificForce.y, truth.specificForce.z,
                                  truth.angularRate.x, truth.angularRate.y, truth.angularRate.z,
                                  truth.magneticField.x, truth.magneticField.y, truth.magneticField.z,
                                  truth.pressure, truth.temperature]
                    #expect(values.allSatisfy { $0.isFinite }, "\(file) at \(t) s")
                    // Nothing in the library shakes harder than 4 g or spins faster than 600 °/s.
                    #expect(truth.specificForce.norm < 4 * g0, "\(file) at \(t) s: \(truth.specificForce)")
                    #expect(truth.angularRate.norm < 600 * .pi / 180, "\(file) at \(t) s")
                }
                t += scenario.durationSeconds / 397
            }
        }
    }

    @Test("the library's motion is continuous across segment boundaries (specific force and rate)",
          arguments: required + ["head-walk"])
    func continuity(name: String) throws {
        let s = try loadScenario(name)
        let w = try ScenarioWorld(s)
        for body in SimBody.allCases {
            for piece in (body == .board ? w.board : (w.accessory ?? w.board)).pieces {
                let t = piece.start
                guard t > 0 else { continue }
                let a = w.truth(atSeconds: t - 1e-7, body: body), b = w.truth(atSeconds: t + 1e-7, body: body)
                #expect((a.specificForce - b.specificForce).norm < 1e-3, "\(name) \(body) at \(t) s (\(piece.label))")
                #expect((a.angularRate - b.angularRate).norm < 1e-4, "\(name) \(body) at \(t) s (\(piece.label))")
            }
        }
    }

    @Test("the default scenario is in the library and loops")
    func defaultScenario() throws {
        let s = try loadScenario(Scenario.defaultName)
        #expect(s.loop)
    }

    @Test("rest scenarios: gravity on the axis that points up, nothing else moves",
          arguments: [("rest-flat", Vector3(0, 0, g0)), ("rest-upside-down", Vector3(0, 0, -g0)),
                      ("rest-x-up", Vector3(g0, 0, 0)), ("rest-y-up", Vector3(0, g0, 0))])
    func restScenarios(name: String, expected: Vector3) throws {
        let w = try world(name)
        for t in [0.0, 1.5, 30, 59.9, 100] {
            let truth = w.truth(atNanoseconds: ns(t), body: .board)
            #expect(close(truth.specificForce, expected, 1e-12), "\(name) at \(t) s: \(truth.specificForce)")
            #expect(truth.angularRate == .zero)
            #expect(abs(truth.magneticField.norm - 48) < 1e-9)
            #expect(truth.pressure == 101_325)
            #expect(truth.temperature == 20)
        }
    }

    @Test("rest-flat is PhysicalTruth.restingLevel")
    func restFlatIsRestingLevel() throws {
        let truth = try world("rest-flat").truth(atNanoseconds: ns(10), body: .board)
        let r = PhysicalTruth.restingLevel
        #expect(close(truth.specificForce, r.specificForce, 1e-12))
        #expect(close(truth.magneticField, r.magneticField, 1e-9))
        #expect(truth.pressure == r.pressure && truth.temperature == r.temperature)
    }

    @Test("rotate-x/y/z: the rate is on one axis, integrates to the attitude, and ends where it began",
          arguments: [("rotate-x", 0), ("rotate-y", 1), ("rotate-z", 2)])
    func rotations(name: String, axis: Int) throws {
        let w = try world(name)
        let mid = w.kinematics(atSeconds: 15, body: .board).angularRate
        #expect(abs(mid[axis] - 30 * .pi / 180) < 1e-12)
        #expect(abs(mid[(axis + 1) % 3]) < 1e-12 && abs(mid[(axis + 2) % 3]) < 1e-12)
        // Integrated gyro = reported attitude, all along.
        var t = 0.0
        while t < 40 {
            let q = integrateAttitude(w, body: .board, from: t, to: t + 2, step: 0.002)
            #expect(q.angle(to: w.attitude(atSeconds: t + 2)) < 1e-6, "\(name) at \(t + 2) s")
            t += 2
        }
        // Two full turns: back to level.
        #expect(w.attitude(atSeconds: 40).angle(to: .identity) < 1e-9)
        // A quarter turn in, gravity has moved off Z (except for Z rotation).
        let f = w.truth(atSeconds: 5 + 0.5 + 3, body: .board).specificForce // ≈ 90° after the ramp's mid-point
        if axis == 2 { #expect(close(f, Vector3(0, 0, g0), 1e-9)) } else { #expect(abs(f.z) < 0.2) }
    }

    @Test("angular rate integrates to the attitude in the composite scenarios",
          arguments: [("pickup-walk", SimBody.board), ("car-ride", .board), ("head-accessory", .accessory), ("head-walk", .accessory),
                      ("desk-idle", .board), ("dive-18m", .board)])
    func compositeRateConsistency(name: String, body: SimBody) throws {
        let w = try world(name)
        let end = min(w.durationSeconds, 120)
        var t = 0.0
        while t < end {
            let q = integrateAttitude(w, body: body, from: t, to: min(t + 5, end), step: 0.001)
            #expect(q.angle(to: w.attitude(atSeconds: min(t + 5, end), body: body)) < 1e-5, "\(name) at \(t + 5) s")
            t += 5
        }
    }

    @Test("velocity and acceleration are the derivatives of position",
          arguments: ["pickup-walk", "car-ride", "lift-3m", "desk-idle"])
    func translationConsistency(name: String) throws {
        let w = try world(name)
        let h = 1e-4
        var t = h
        while t < w.durationSeconds - h {
            let a = w.kinematics(atSeconds: t - h, body: .board), b = w.kinematics(atSeconds: t, body: .board)
            let c = w.kinematics(atSeconds: t + h, body: .board)
            let v = (c.position - a.position) / (2 * h), acc = (c.velocity - a.velocity) / (2 * h)
            #expect(close(v, b.velocity, 1e-5 * max(1, b.velocity.norm)), "\(name) at \(t) s: \(v) vs \(b.velocity)")
            #expect(close(acc, b.acceleration, 2e-3 * max(1, b.acceleration.norm)), "\(name) at \(t) s: \(acc) vs \(b.acceleration)")
            t += 0.0937
        }
    }

    @Test("lift-3m: 0 → 3 m in 3 s with continuous velocity")
    func lift() throws {
        let w = try world("lift-3m")
        #expect(w.sample(atNanoseconds: ns(3)).altitudeMeters == 0)
        #expect(abs(w.sample(atNanoseconds: ns(6)).altitudeMeters - 3) < 1e-12)
        #expect(abs(w.sample(atNanoseconds: ns(10)).altitudeMeters - 3) < 1e-12)
        #expect(abs(w.sample(atNanoseconds: ns(4.5)).altitudeMeters - 1.5) < 1e-12)
        var previous = w.kinematics(atSeconds: 0, body: .board).velocity.z, peak = 0.0
        for i in 1...10_000 {
            let v = w.kinematics(atSeconds: Double(i) * 0.001, body: .board).velocity.z
            #expect(abs(v - previous) < 0.002, "velocity jumps at \(Double(i) * 0.001) s")
            previous = v; peak = max(peak, v)
        }
        #expect(abs(peak - 1.875) < 1e-3)
        // Accelerating up: heavier; slowing: lighter.
        #expect(w.truth(atSeconds: 3.6, body: .board).specificForce.z > g0 + 1)
        #expect(w.truth(atSeconds: 5.4, body: .board).specificForce.z < g0 - 1)
        // The barometer sees the 3 m.
        let dp = w.truth(atSeconds: 8, body: .board).pressure - w.truth(atSeconds: 1, body: .board).pressure
        #expect(abs(dp - (scenarioStandardAtmospherePressure(altitude: 3) - 101_325)) < 1e-9)
        #expect(dp < -35 && dp > -37)
    }

    @Test("dive-18m reaches 18 m, stops 180 s at 5 m, and the pressure follows")
    func dive() throws {
        let w = try world("dive-18m")
        var maxDepth = 0.0, atFive = 0.0, t = 0.0
        let step = 0.25
        while t <= w.durationSeconds {
            let d = w.depthMeters(atSeconds: t)
            maxDepth = max(maxDepth, d)
            if abs(d - 5) < 1e-9 { atFive += step }
            t += step
        }
        #expect(abs(maxDepth - 18) < 1e-12)
        #expect(abs(atFive - 180) <= step)
        let bottom = w.truth(atSeconds: 500, body: .board)
        #expect(abs(bottom.pressure - (101_325 + 1025 * g0 * 18)) < 1e-6)
        #expect(w.truth(atSeconds: 10, body: .board).pressure == 101_325)
        #expect(w.temperatureCelsius(atSeconds: 500) == 17)
        let sample = w.sample(atNanoseconds: ns(1200))
        #expect(sample.depthMeters == 5)
        #expect(w.activeEvents(atNanoseconds: ns(1200)).contains("safety stop"))
    }

    /// A move's stated rate is its rate: on the straight part of every
    /// move of dive-18m (away from its 4 s corners) the truth's depth rate
    /// is the rate the scenario states, and each move lasts d/r + 4 s.
    @Test("dive-18m: each depth move's straight part runs at its stated rate")
    func diveMovesRunAtTheirStatedRate() throws {
        let w = try world("dive-18m")
        // (start s, end s, rate m/min, downward?) from the scenario: descent
        // 18 m at 18 m/min after 60 s; ascent 13 m at 9 m/min after 900 s
        // at the bottom; 5 m at 9 m/min after 180 s at 5 m.
        let descent = 60.0, descentEnd = descent + 18.0 / 18 * 60 + 4
        let ascent = descentEnd + 900, ascentEnd = ascent + 13.0 / 9 * 60 + 4
        let last = ascentEnd + 180, lastEnd = last + 5.0 / 9 * 60 + 4
        for (from, to, rate, target) in [(descent, descentEnd, 18.0, 18.0), (ascent, ascentEnd, -9.0, 5.0), (last, lastEnd, -9.0, 0.0)] {
            var t = from + 4.5
            while t < to - 4.5 {
                let r = (w.depthMeters(atSeconds: t + 0.5) - w.depthMeters(atSeconds: t)) / 0.5 * 60
                #expect(abs(r - rate) < 1e-6, "at \(t) s: \(r) m/min, stated \(rate)")
                t += 0.5
            }
            #expect(abs(w.depthMeters(atSeconds: to) - target) < 1e-9, "the move ends at \(to) s at \(target) m")
            #expect(abs(w.depthMeters(atSeconds: to - 1) - target) > 1e-3, "and not before")
        }
        #expect(abs(w.durationSeconds - (lastEnd + 60)) < 1e-9, "the scenario ends a minute after the diver surfaced")
    }

    /// A short rate-given move (less than 12 s at its rate) keeps its rate
    /// too: its corners are a quarter of the lengthened move.
    @Test("a short rate-given depth move runs at its stated rate")
    func shortRateGivenMove() throws {
        let w = try ScenarioWorld(decodeScenario(#"{ name: "x", duration_s: 30, environment: { pressure: { mode: "water", profile: [ { hold_s: 1 }, { to_depth_m: 1, rate_m_per_min: 6 } ] } } }"#))
        // 1 m at 6 m/min: 10 s straight, 13.3 s in all with 3.33 s corners.
        let r = (w.depthMeters(atSeconds: 7.5) - w.depthMeters(atSeconds: 7)) / 0.5 * 60
        #expect(abs(r - 6) < 1e-6, "\(r) m/min")
        #expect(abs(w.depthMeters(atSeconds: 1 + 40.0 / 3) - 1) < 1e-9)
    }

    @Test("car-ride: a right turn pushes the board to its right, the climb raises it")
    func carRide() throws {
        let w = try world("car-ride")
        // Mid-turn (35 + 3 s): centripetal acceleration toward the turn's centre.
        let turn = w.kinematics(atSeconds: 38, body: .board)
        #expect(turn.angularRate.z < -0.2)
        #expect(turn.specificForce.x > 3)
        // After the turn the car heads east (−Y in north-west-up).
        let east = w.kinematics(atSeconds: 45, body: .board)
        #expect(east.velocity.y < -7 && abs(east.velocity.x) < 0.02) // vibration aside
        let climb = w.sample(atNanoseconds: ns(109)).altitudeMeters - w.sample(atNanoseconds: ns(60)).altitudeMeters
        #expect(climb > 20 && climb < 25)
        #expect(w.kinematics(atSeconds: 109, body: .board).velocity.norm < 1e-9)
    }
}

// MARK: physics of the environment

@Suite("Scenario environment")
struct ScenarioEnvironmentTests {
    @Test("standard atmosphere and water pressure")
    func pressures() {
        #expect(scenarioStandardAtmospherePressure(altitude: 0) == 101_325)
        #expect(abs(scenarioStandardAtmospherePressure(altitude: 1000) - 89_874.6) < 0.1)
        #expect(abs(scenarioWaterPressure(depth: 10) - (101_325 + 1025 * 9.80665 * 10)) < 1e-9)
        #expect(abs(scenarioWaterPressure(depth: 10, density: 1000) - 199_391.5) < 1e-6)
        #expect(scenarioWaterPressure(depth: -1) == 101_325)
    }

    @Test("field: magnitude is the intensity, inclination and declination as given, in any attitude")
    func field() throws {
        let s = try decodeScenario("""
        { name: "f", duration_s: 20, board: { segments: [
            { duration_s: 20, rotate: { axis: [1, 2, 3], rate_dps: 40 } } ] },
          environment: { field: { intensity_ut: 52, inclination_deg: -35, declination_deg: 12 } } }
        """)
        let w = try ScenarioWorld(s)
        for t in stride(from: 0.0, through: 20, by: 0.7) {
            let k = w.kinematics(atSeconds: t, body: .board)
            let b = w.truth(atSeconds: t, body: .board).magneticField
            #expect(abs(b.norm - 52) < 1e-9)
            let e = k.attitude.rotate(b)
            let inclination = atan2(-e.z, (e.x * e.x + e.y * e.y).squareRoot()) * 180 / .pi
            let declination = atan2(-e.y, e.x) * 180 / .pi // east of north; Y is west
            #expect(abs(inclination + 35) < 1e-9)
            #expect(abs(declination - 12) < 1e-9)
        }
    }

    @Test("magnet-pass: the field bumps and returns, the gyro stays at zero")
    func magnet() throws {
        let w = try world("magnet-pass")
        let before = w.truth(atSeconds: 5, body: .board).magneticField
        let peak = w.truth(atSeconds: 12, body: .board).magneticField
        let after = w.truth(atSeconds: 16, body: .board).magneticField
        #expect((peak - before).norm > 140 && (peak - before).norm < 150.0001)
        #expect(close(after, before, 1e-12))
        #expect(w.truth(atSeconds: 12, body: .board).angularRate == .zero)
        #expect(w.activeEvents(atNanoseconds: ns(12)).contains("magnet east"))
        #expect(!w.activeEvents(atNanoseconds: ns(16)).contains("magnet east"))
    }

    @Test("steel: hard and soft iron in the body frame, blended in over ramp_s")
    func steel() throws {
        let s = try decodeScenario("""
        { name: "s", duration_s: 10, environment: { field: { intensity_ut: 50, inclination_deg: 0 },
          disturbances: [ { kind: "steel", from_s: 2, to_s: 8, ramp_s: 1, offset_ut: [10, 0, 0],
                            soft_iron: [[2, 0, 0], [0, 1, 0], [0, 0, 1]] } ] } }
        """)
        let w = try ScenarioWorld(s)
        #expect(close(w.truth(atSeconds: 1, body: .board).magneticField, Vector3(50, 0, 0), 1e-9))
        #expect(close(w.truth(atSeconds: 5, body: .board).magneticField, Vector3(110, 0, 0), 1e-9))
        #expect(close(w.truth(atSeconds: 2.5, body: .board).magneticField, Vector3(80, 0, 0), 1e-9))
        #expect(close(w.truth(atSeconds: 9, body: .board).magneticField, Vector3(50, 0, 0), 1e-9))
    }

    @Test("temperature follows its profile smoothly; altitude mode drifts with the weather")
    func temperatureAndDrift() throws {
        let s = try decodeScenario("""
        { name: "t", duration_s: 7200,
          environment: { temperature: { start_c: 10, profile: [ { hold_s: 100 }, { to_c: 30, duration_s: 100, name: "warming" } ] },
                         pressure: { mode: "altitude", start_altitude_m: 1000, drift_pa_per_h: -100 } } }
        """)
        let w = try ScenarioWorld(s)
        #expect(w.temperatureCelsius(atSeconds: 50) == 10)
        #expect(abs(w.temperatureCelsius(atSeconds: 150) - 20) < 1e-12)
        #expect(w.temperatureCelsius(atSeconds: 300) == 30)
        #expect(w.activeEvents(atNanoseconds: ns(150)).contains("warming"))
        #expect(abs(w.truth(atSeconds: 0, body: .board).pressure - 89_874.6) < 0.1)
        let p1h = w.truth(atSeconds: 3600, body: .board).pressure
        #expect(abs(p1h - scenarioStandardAtmospherePressure(altitude: 1000, seaLevel: 101_225)) < 1e-9)
    }
}

// MARK: bodies, time, determinism

@Suite("Scenario world")
struct ScenarioWorldTests {
    @Test("two worlds from the same file give identical truth and identical CSV bytes",
          arguments: ["car-ride", "desk-idle", "head-accessory", "faults-demo"])
    func determinism(name: String) throws {
        let a = try world(name), b = try world(name)
        var t: UInt64 = 0
        while t < ns(a.durationSeconds + 2) {
            for body in SimBody.allCases {
                #expect(a.truth(atNanoseconds: t, body: body) == b.truth(atNanoseconds: t, body: body))
            }
            #expect(ScenarioTruthCSV.row(a, atNanoseconds: t) == ScenarioTruthCSV.row(b, atNanoseconds: t))
            t += 370_000_001
        }
    }

    @Test("head-accessory: the accessory moves while the board rests")
    func headAccessory() throws {
        let s = try loadScenario("head-accessory")
        #expect(s.accessory?.address == 0x69)
        let w = try ScenarioWorld(s)
        let board = w.truth(atSeconds: 5, body: .board), head = w.truth(atSeconds: 5, body: .accessory)
        #expect(board.angularRate == .zero)
        #expect(head.angularRate.x.magnitude > 0.3) // nodding about the head's X axis
        // Looking left: 60° counter-clockwise from north (heading 300°).
        let yawLeft = w.attitude(atSeconds: 11, body: .accessory)
        #expect(yawLeft.angle(to: .scenario(rollDegrees: 0, pitchDegrees: 0, yawDegrees: -90 + 60)) < 1e-9)
        let forward = yawLeft.rotate(Vector3(0, 1, 0)) // north-west-up
        #expect(abs(atan2(-forward.y, forward.x) * 180 / .pi + 60) < 1e-9)
        #expect(w.activeEvents(atNanoseconds: ns(5)).contains("accessory:nod yes"))
    }

    @Test("an accessory relative to the board composes attitude and rate")
    func accessoryRelativeToBoard() throws {
        let s = try decodeScenario("""
        { name: "r", duration_s: 12,
          board: { segments: [ { duration_s: 12, rotate: { axis: "z", rate_dps: 30, ramp_s: 2 },
                                 translate: { displacement_m: [1, 0, 0.5] } } ] },
          accessory: { relative_to: "board", start: { pitch_deg: 10 },
                       segments: [ { duration_s: 6, oscillate: { axis: "x", amplitude_deg: 20, frequency_hz: 1 } },
                                   { duration_s: 6, rotate: { axis: "y", angle_deg: 45 } } ] } }
        """)
        let w = try ScenarioWorld(s)
        for t in stride(from: 0.0, to: 12, by: 1.0) {
            let q = integrateAttitude(w, body: .accessory, from: t, to: t + 1, step: 0.001)
            #expect(q.angle(to: w.attitude(atSeconds: t + 1, body: .accessory)) < 1e-6)
            let b = w.kinematics(atSeconds: t, body: .board), a = w.kinematics(atSeconds: t, body: .accessory)
            #expect(a.position == b.position && a.acceleration == b.acceleration)
        }
        let rel = w.attitude(atSeconds: 12, body: .board).conjugate * w.attitude(atSeconds: 12, body: .accessory)
        #expect(rel.angle(to: .scenario(rollDegrees: 45, pitchDegrees: 10, yawDegrees: 0)) < 1e-9)
    }

    @Test("a looping scenario wraps its time; a scenario past its end holds still")
    func looping() throws {
        let w = try world("desk-idle")
        for t in [3.0, 200.5, 455.2] {
            #expect(w.truth(atNanoseconds: ns(t), body: .board) == w.truth(atNanoseconds: ns(t + 600), body: .board))
        }
        let lift = try world("lift-3m")
        let end = lift.truth(atNanoseconds: ns(500), body: .board)
        #expect(close(end.specificForce, Vector3(0, 0, g0), 1e-12) && end.angularRate == .zero)
        #expect(abs(lift.sample(atNanoseconds: ns(500)).altitudeMeters - 3) < 1e-12)
    }

    @Test("startNanoseconds shifts scenario time 0 on the simulation clock")
    func startOffset() throws {
        let s = try loadScenario("lift-3m")
        let a = try ScenarioWorld(s), b = try ScenarioWorld(s, startNanoseconds: 1_000_000_000_000)
        #expect(a.truth(atNanoseconds: ns(4), body: .board) == b.truth(atNanoseconds: 1_000_000_000_000 + ns(4), body: .board))
        #expect(b.truth(atNanoseconds: 5, body: .board) == a.truth(atNanoseconds: 0, body: .board))
    }

    @Test("truth CSV: header, exact time, fixed decimals, events")
    func csv() throws {
        let w = try world("lift-3m")
        #expect(ScenarioTruthCSV.header == "t,qw,qx,qy,qz,altitude_m,depth_m,event")
        let row = ScenarioTruthCSV.row(w, atNanoseconds: 4_500_000_001)
        #expect(row == "4.500000001,1.000000000,0.000000000,0.000000000,0.000000000,1.5000,0.0000,lift")
        let up = try world("rest-upside-down")
        let r2 = ScenarioTruthCSV.row(up, atNanoseconds: 0)
        #expect(r2 == "0.000000000,0.000000000,0.000000000,1.000000000,0.000000000,0.0000,0.0000,rest")
        #expect(ScenarioTruthCSV.fixed(-0.00001, decimals: 4) == "0.0000")
        #expect(ScenarioTruthCSV.fixed(-2.5, decimals: 0) == "-3")
        #expect(ScenarioTruthCSV.fixed(18.00005, decimals: 4) == "18.0001")
        let faults = try world("faults-demo")
        #expect(ScenarioTruthCSV.row(faults, atNanoseconds: ns(21)).hasSuffix(",slow turn;magnetometer unplugged"))
    }
}

// MARK: faults, imperfections, seed

@Suite("Scenario faults and pass-through")
struct ScenarioFaultTests {
    @Test("faults-demo decodes into the ScheduledFault values")
    func faults() throws {
        let s = try loadScenario("faults-demo")
        #expect(s.scheduledFaults == [
            .nack(address: 0x76, register: 0xF7, from: 10, to: 12),
            .errorEvery(address: 0x68, every: 50, errno: 5),
            .disappear(address: 0x0D, from: 20, to: 25),
            .reset(address: 0x68, at: 40),
            .disappear(address: 0x68, from: 50, to: 50.5),
        ])
        #expect(s.faults.map(\.name) == ["baro data NACK", "error every 50 0x68", "magnetometer unplugged",
                                         "IMU brown-out", "disappear 0x68"])
        #expect(try ScenarioWorld(s).faults == s.scheduledFaults)
    }

    @Test("fault fields: string addresses, numeric errno, any-register NACK, any-device errors")
    func faultVariants() throws {
        let s = try decodeScenario("""
        { name: "f", duration_s: 5, faults: [
            { kind: "nack", address: "0x77", from_s: 1, to_s: 2 },
            { kind: "error_every", every: 7, errno: 121 },
            { kind: "error_every", every: 3, errno: "etimedout", address: 13 } ] }
        """)
        #expect(s.scheduledFaults == [.nack(address: 0x77, register: nil, from: 1, to: 2),
                                      .errorEvery(address: nil, every: 7, errno: 121),
                                      .errorEvery(address: 0x0D, every: 3, errno: 110)])
    }

    @Test("imperfections pass through untouched; seeds are per label and stable")
    func passThrough() throws {
        let s = try decodeScenario("""
        { name: "i", duration_s: 1, seed: 99,
          imperfections: { "0x68": { gyro: { bias: [0.01, -0.02, 0.03], noiseScale: 0 }, ok: true, note: "x", none: null },
                           "0x0D": "ideal", default: "realistic" } }
        """)
        let mpu = s.imperfections["0x68"]
        #expect(s.imperfections(forAddress: 0x68) == mpu)
        #expect(s.imperfections(forAddress: 0x0D) == .string("ideal"))
        #expect(s.imperfections(forAddress: 0x76) == .string("realistic"))
        #expect(try decodeScenario(#"{ name: "n", duration_s: 1, imperfections: { "0x69": "ideal" } }"#).imperfections(forAddress: 0x68) == nil)
        #expect(mpu?["gyro"]?["bias"]?.vector3 == Vector3(0.01, -0.02, 0.03))
        #expect(mpu?["gyro"]?["noiseScale"]?.double == 0)
        #expect(mpu?["ok"]?.bool == true && mpu?["note"]?.string == "x" && mpu?["none"] == .null)
        #expect(s.seed == 99)
        #expect(s.seed(for: "mpu6050@0x68") == s.seed(for: "mpu6050@0x68"))
        #expect(s.seed(for: "mpu6050@0x68") != s.seed(for: "mpu6050@0x69"))
        var other = s; other.seed = 100
        #expect(other.seed(for: "mpu6050@0x68") != s.seed(for: "mpu6050@0x68"))
        let none = try decodeScenario(#"{ name: "n", duration_s: 1 }"#)
        #expect(none.imperfections == .object([:]) && none.seed == 1 && none.faults.isEmpty)
    }
}

// MARK: bad input

/// What decoding `text` as a scenario says: "key.path: message", or "no error".
func scenarioDecodingMessage(_ text: String) -> String {
    do { _ = try decodeScenario(text); return "no error" } catch let DecodingError.dataCorrupted(c) {
        return c.codingPath.map(\.stringValue).joined(separator: ".") + ": " + c.debugDescription
    } catch {
        return "\(error)"
    }
}

@Suite("Scenario validation")
struct ScenarioValidationTests {
    func message(_ text: String) -> String { scenarioDecodingMessage(text) }

    @Test("bad scenarios fail with a message that says what is expected", arguments: [
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: 1, spin: { rate_dps: 3 } } ] } }"#,
         "board.segments.Index 0.spin: unknown segment kind 'spin'"),
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: -3 } ] } }"#,
         "duration_s must be > 0, got -3"),
        (#"{ name: "x", duration_s: -1 }"#, "duration_s must be > 0"),
        (#"{ name: "x", duration_s: 5, colour: 3 }"#, "unknown key 'colour' in a scenario"),
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: 6 } ] } }"#,
         "board.segments: the segments last 6.0 s, longer than the scenario's duration_s (5.0 s)"),
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: 1, rotate: { axis: "q", rate_dps: 3 } } ] } }"#,
         "expected an axis"),
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: 1, rotate: { axis: "x" } } ] } }"#,
         "rotate needs exactly one of rate_dps"),
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: 1, translate: { displacement_m: [1, 2] } } ] } }"#,
         "expected a vector of 3 finite numbers"),
        (#"{ name: "x", duration_s: 5, loop: true, board: { segments: [ { duration_s: 1, rotate: { axis: "z", angle_deg: 30 } } ] } }"#,
         "loop is true but the board ends 30"),
        (#"{ name: "x", duration_s: 5, faults: [ { kind: "explode", address: 0x68 } ] }"#,
         "kind must be one of: nack, error_every, reset, disappear"),
        (#"{ name: "x", duration_s: 5, faults: [ { kind: "nack", address: 0x80, from_s: 1, to_s: 2 } ] }"#,
         "an I2C address must be within 0...127"),
        (#"{ name: "x", duration_s: 5, faults: [ { kind: "disappear", address: 0x68, from_s: 3, to_s: 2 } ] }"#,
         "to_s must be after from_s"),
        (#"{ name: "x", duration_s: 5, faults: [ { kind: "error_every", every: 0 } ] }"#, "every must be ≥ 1"),
        (#"{ name: "x", duration_s: 5, faults: [ { kind: "error_every", every: 2, errno: "EWHAT" } ] }"#, "errno must be a number or one of"),
        (#"{ name: "x", duration_s: 5, accessory: { relative_to: "board", segments: [ { duration_s: 1, translate: { displacement_m: [0, 0, 1] } } ] } }"#,
         "accessory.segments.Index 0: an accessory relative_to \"board\" may only rotate"),
        (#"{ name: "x", duration_s: 5, accessory: { relative_to: "board", start: { position_m: [0, 0, 1] } } }"#,
         "accessory.start: an accessory relative_to \"board\" shares the board's position"),
        (#"{ name: "x", duration_s: 5, environment: { pressure: { mode: "water", profile: [ { to_depth_m: 3 } ] } } }"#,
         "give exactly one of duration_s or rate_m_per_min"),
        (#"{ name: "x", duration_s: 5, environment: { pressure: { mode: "space" } } }"#, "mode must be one of: altitude, water"),
        (#"{ name: "x", duration_s: 5, environment: { disturbances: [ { kind: "magnet", start_s: 1, duration_s: 1, peak_ut: 5, direction: "x", colour: 1 } ] } }"#,
         "unknown key 'colour' in a magnet disturbance"),
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: 1, rotate: { axis: "z", rate_dps: 3 }, turn: { angle_deg: 3 } } ] } }"#,
         "at most one of rotate, rotate_to, turn"),
        (#"{ name: "x", duration_s: 5, imperfections: { "mpu6050": "ideal" } }"#,
         "imperfections.mpu6050: imperfections are keyed by a 7-bit I2C address (\"0x68\") or \"default\", got \"mpu6050\""),
        (#"{ name: "x", duration_s: 5, board: { start: { yaw_deg: 3, heading_deg: 4 } } }"#,
         "board.start.heading_deg: give either yaw_deg or heading_deg, not both"),
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: 1, rotate: { axis: "z", rate_dps: 3, ramp_s: 0.6 } } ] } }"#,
         "ramp_s must be at most half the segment's duration_s"),
    ])
    func badInput(text: String, expected: String) {
        let m = message(text)
        #expect(m.contains(expected), "got: \(m)")
    }

    @Test("the same errors come from ScenarioWorld for scenarios built in code")
    func programmatic() {
        let s = Scenario(name: "p", durationSeconds: 2,
                         board: ScenarioBodyMotion(segments: [ScenarioSegment(durationSeconds: 3)]))
        #expect(throws: ScenarioError.self) { try ScenarioWorld(s) }
        let ramp = Scenario(name: "p", durationSeconds: 2, board: ScenarioBodyMotion(segments: [
            ScenarioSegment(durationSeconds: 1, rotation: .rate(axis: Vector3(1, 0, 0), earthFrame: false, rateDegreesPerSecond: 10, rampSeconds: 0.6))]))
        #expect(throws: ScenarioError(path: ["board", "segments", "Index 0", "rotate", "ramp_s"],
                                      message: "ramp_s must be within 0…0.5 (half the segment), got 0.6")) { try ScenarioWorld(ramp) }
        let profile = Scenario(name: "p", durationSeconds: 2, environment: ScenarioEnvironment(
            temperature: ScenarioTrack(start: 20, segments: [.init(durationSeconds: 0, target: 3)])))
        #expect(throws: ScenarioError.self) { try ScenarioWorld(profile) }
        let ok = Scenario(name: "p", durationSeconds: 2,
                          board: ScenarioBodyMotion(segments: [ScenarioSegment(durationSeconds: 1, rotation: .angle(axis: Vector3(0, 0, 1), earthFrame: true, angleDegrees: 90))]))
        let w = try? ScenarioWorld(ok)
        #expect(w?.attitude(atSeconds: 1.5).angle(to: .scenario(rollDegrees: 0, pitchDegrees: 0, yawDegrees: 90)) ?? 1 < 1e-12)
    }
}

/// The chips' narrow questions (the IMU's inertial truth, the magnetometers'
/// field) give exactly the fields of the whole truth, on both bodies, through
/// magnets, steel, motion and temperature changes: a chip model asking the
/// narrow question sees the same world, bit for bit.
@Suite struct NarrowTruthTests {
    @Test(arguments: ["magnet-pass", "head-walk", "car-ride", "pickup-walk"])
    func narrowTruthEqualsTheWholeTruth(_ name: String) throws {
        let w = try world(name)
        var t = 0.0
        while t <= 40 {
            for body in SimBody.allCases {
                let n = w.startNanoseconds &+ ns(t)
                let whole = w.truth(atNanoseconds: n, body: body)
                let inertial = w.inertialTruth(atNanoseconds: n, body: body)
                let field = w.fieldTruth(atNanoseconds: n, body: body)
                #expect(inertial == InertialTruth(specificForce: whole.specificForce, angularRate: whole.angularRate,
                                                  temperature: whole.temperature))
                #expect(field == FieldTruth(magneticField: whole.magneticField, temperature: whole.temperature))
            }
            t += 0.137
        }
    }

    /// A source that implements only the whole truth answers the narrow
    /// questions from it.
    @Test func defaultNarrowTruthComesFromTheWholeTruth() {
        let c = ConstantTruth(PhysicalTruth(specificForce: Vector3(1, 2, 3), angularRate: Vector3(4, 5, 6),
                                            magneticField: Vector3(7, 8, 9), pressure: 90_000, temperature: -3))
        #expect(c.inertialTruth(atNanoseconds: 5, body: .board)
                == InertialTruth(specificForce: Vector3(1, 2, 3), angularRate: Vector3(4, 5, 6), temperature: -3))
        #expect(c.fieldTruth(atNanoseconds: 5, body: .accessory) == FieldTruth(magneticField: Vector3(7, 8, 9), temperature: -3))
    }
}
