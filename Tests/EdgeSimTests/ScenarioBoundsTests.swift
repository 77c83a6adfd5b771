import EdgeBus
import EdgeChips
import Foundation
import Testing
@testable import EdgeSim

/// Every scenario number is finite and within ±1e9; durations, frequencies
/// and non-zero ramps are at least 1e-6 (ScenarioDecoding.swift). Found by
/// the config fuzz target in CI: a start velocity of 1e307 m/s decoded, and
/// the truth at 30 s held an infinite position, which a chip model traps on
/// when it turns the truth into register counts.
@Suite struct ScenarioBoundsTests {
    @Test("a finite number that a motion turns into infinity is refused by name", arguments: [
        // FuzzTesting/corpus/config/regressions/scenario-velocity-1e307.json5
        (#"{ name: "x", duration_s: 60, board: { start: { velocity_m_s: [0, 1e307, 0] } } }"#,
         "board.start.velocity_m_s: each element must be within ±1e9"),
        // FuzzTesting/corpus/config/regressions/scenario-segment-1e-300-s.json5
        (#"{ name: "x", duration_s: 60, board: { segments: [ { duration_s: 1e-300, translate: { displacement_m: [1, 0, 0] } } ] } }"#,
         "board.segments.Index 0.duration_s: duration_s must be at least 1e-6, got 1e-300"),
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: 1, rotate: { axis: "z", rate_dps: 2e9 } } ] } }"#,
         "rate_dps must be within ±1e9, got 2000000000.0"),
        (#"{ name: "x", duration_s: 5, board: { segments: [ { duration_s: 1, vibrate: { amplitude_m: [0, 0, 0.01], frequency_hz: 30, ramp_s: 1e-300 } } ] } }"#,
         "board.segments.Index 0.vibrate.ramp_s: ramp_s must be at least 1e-6, got 1e-300"),
        (#"{ name: "x", duration_s: 5, board: { start: { quaternion: [1e308, 0, 0, 0] } } }"#,
         "board.start.quaternion: each element must be a finite number within ±1e9"),
        (#"{ name: "x", duration_s: 5, environment: { disturbances: [ { kind: "steel", offset_ut: [1, 2, 3], to_s: 4, ramp_s: 1e-9 } ] } }"#,
         "ramp_s must be 0 or at least 1e-6 s"),
        (#"{ name: "x", duration_s: 5, environment: { pressure: { mode: "water", surface_pa: 1e-7 } } }"#,
         "surface_pa must be at least 1e-6, got 1e-07"),
    ])
    func refused(text: String, expected: String) {
        let m = scenarioDecodingMessage(text)
        #expect(m.contains(expected), "got: \(m)")
    }

    /// Every bounded number at its bound at once: the truth stays finite
    /// everywhere (including a nanosecond into each segment, where the ramps
    /// divide), and the chips turn it into registers the drivers read.
    static let extreme = #"""
    {
      name: "bounds", duration_s: 20, seed: 1,
      board: {
        start: { roll_deg: 1e9, pitch_deg: -1e9, yaw_deg: 1e9, position_m: [1e9, -1e9, 1e9], velocity_m_s: [1e9, -1e9, 1e9] },
        segments: [
          { duration_s: 1e-6, translate: { displacement_m: [1e9, 1e9, -1e9] } },
          { duration_s: 1e-6, translate: { to_velocity_m_s: [-1e9, 1e9, 1e9], frame: "body" } },
          { duration_s: 1, rotate: { axis: [1e9, -1e9, 1e-9], rate_dps: 1e9, ramp_s: 1e-6 },
            walk: { step_hz: 1e9, bob_m: 1e9, sway_m: 1e9, ramp_s: 1e-6 } },
          { duration_s: 1, rotate: { axis: "z", angle_deg: -1e9 }, vibrate: { amplitude_m: [1e9, -1e9, 1e9], frequency_hz: 1e9, ramp_s: 1e-6 },
            oscillate: { axis: "x", amplitude_deg: 1e9, frequency_hz: 1e9, ramp_s: 1e-6 } },
          { duration_s: 1e-6, turn: { angle_deg: 1e9 } },
          { duration_s: 1, rotate_to: { roll_deg: -1e9, pitch_deg: 1e9, heading_deg: 1e9 },
            translate: { displacement_m: [1e9, 1e9, 1e9], frame: "heading" } },
        ],
      },
      environment: {
        field: { intensity_ut: 1e9, inclination_deg: 90, declination_deg: -1e9 },
        disturbances: [
          { kind: "magnet", start_s: 3, duration_s: 1e-6, peak_ut: -1e9, direction: [1e9, 1e9, 1e-9] },
          { kind: "steel", from_s: 0, to_s: 1e9, ramp_s: 1e-6, offset_ut: [1e9, 1e9, -1e9],
            soft_iron: [[1e9, -1e9, 1e9], [1e9, 1e9, 1e9], [-1e9, 1e9, 1e9]] },
        ],
        pressure: { mode: "altitude", sea_level_pa: 1e9, start_altitude_m: -1e9, drift_pa_per_h: -1e9 },
        temperature: { start_c: 1e9, profile: [ { to_c: -1e9, duration_s: 1e-6 } ] },
      },
      imperfections: { default: "ideal" },
    }
    """#

    @Test func aScenarioAtEveryBoundHasAFiniteTruthTheChipsRead() throws {
        let scenario = try decodeScenario(Self.extreme)
        let world = try ScenarioWorld(scenario)
        var times: [Double] = []
        var t = 0.0
        for step in [1e-6, 1e-6, 1, 1, 1e-6, 1] {
            times += [t, t + 1e-9, t + step / 2, t + step - 1e-9]
            t += step
        }
        times += stride(from: 0.0, through: 20, by: 0.01)
        var checked = 0
        for s in times {
            let sample = world.sample(atNanoseconds: ns(s))
            let k = sample.kinematics
            for (name, v) in [("position", k.position), ("velocity", k.velocity), ("acceleration", k.acceleration),
                              ("angularRate", k.angularRate), ("specificForce", k.specificForce)] {
                #expect(v.x.isFinite && v.y.isFinite && v.z.isFinite, "\(name) at \(s) s: \(v)")
            }
            #expect(k.attitude.w.isFinite && abs(k.attitude.norm - 1) < 1e-9, "attitude at \(s) s")
            for body in SimBody.allCases {
                let truth = world.truth(atNanoseconds: ns(s), body: body)
                let m = truth.magneticField
                #expect(m.x.isFinite && m.y.isFinite && m.z.isFinite, "field at \(s) s: \(m)")
                #expect(truth.pressure.isFinite && truth.temperature.isFinite, "pressure, temperature at \(s) s")
            }
            checked += 1
        }
        #expect(checked > 2000)

        // The chips read that world through their drivers without trapping.
        // (The chips take a clock at 0 for "never measured": start later.)
        let t0: UInt64 = 1_000_000_000
        let clock = VirtualClock(startNanoseconds: t0)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.ideal),
                                       truth: try ScenarioWorld(scenario, startNanoseconds: t0), clock: clock, seed: 1)
        var mpu = MPU6050(bus: board.bus, address: 0x68, clock: clock)
        var bmp = BMP280(bus: board.bus, address: 0x76, clock: clock)
        var mag = QMC5883L(bus: board.bus, address: 0x0D, clock: clock)
        try mpu.start(MPU6050Configuration(gyroRange: .dps500, accelRange: .g4, dlpf: .hz184, sampleRateHz: 1000))
        try bmp.start(.default)
        try mag.start(QMC5883LConfiguration(mode: .continuous, outputRate: .hz100, range: .gauss8, oversampling: .x512))
        // The drivers' start-up took ~0.1 s of the clock; the first
        // pressure conversion (37.5 ms) follows the BMP280's.
        #expect(clock.nowNanoseconds < t0 + 150_000_000)
        let accelLimit: Double = 32768.0 / 8192.0 * 9.80665 + 1e-9
        let gyroLimit: Double = 32768.0 / 65.5 * Double.pi / 180 + 1e-9
        var reads = 0
        for s in stride(from: 0.2, through: 4.65, by: 0.05) {
            clock.sleep(untilNanoseconds: t0 + ns(s))
            let imu = try mpu.read()
            _ = try bmp.read()
            _ = try mag.read()
            // Far beyond range, the counts saturate at full scale: 32768 counts
            // of 8192 per g and of 65.5 per °/s (MPU-6000/6050 PS rev 3.4, §6.1–6.2).
            for i in 0..<3 {
                #expect(abs(imu.acceleration[i]) <= accelLimit, "accel \(imu.acceleration) at \(s) s")
                #expect(abs(imu.rotationRate[i]) <= gyroLimit, "gyro \(imu.rotationRate) at \(s) s")
            }
            reads += 1
        }
        #expect(reads == 90)
    }
}
