// Fuzz target (a): the JSON5 files the agent and tools read, through
// `ConfigLoader.decode` exactly as `ConfigLoader.load` calls it, as each of
// the four file kinds: agent configuration, board profile, scenario and
// calibration file. Every input is tried as all four, so the repository's
// files seed it unchanged.
//
// A thrown `ConfigError` is the right answer to bad input. Findings are
// traps (including Foundation's), sanitizer reports, hangs, huge
// allocations, and these invariants:
//   * an error's line is one the text has;
//   * a decoded value holds no NaN or infinity (every numeric key has a
//     checked range, config/README.md);
//   * a decoded configuration runs: `EngineSetup.settings` (what `edge-agent
//     run` does with it), a `SensorHub` on the simulated board with those
//     settings, `start()` and a few ticks on a virtual clock;
//   * a decoded board profile maps to engine devices; a decoded scenario
//     builds a world whose truth is finite at its start, middle and end.
import EdgeBus
import EdgeConfig
import EdgeEngine
import EdgeSim
@testable import EdgeAgentCLI
@testable import EdgeRuntime
import FuzzSupport

private let fileName = "fuzz.json5"

/// One input (libFuzzer's LLVMFuzzerTestOneInput); returns 0, findings trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    // ConfigLoader.load refuses a file that is not UTF-8 before decoding.
    guard let text = fuzzValidString(data, size) else { return 0 }

    if let config = decoded(AgentConfig.self, text) {
        requireFinite(config, "a decoded AgentConfig")
        runEngine(config)
    }
    if let profile = decoded(BoardProfile.self, text) {
        requireFinite(profile, "a decoded BoardProfile")
        _ = EngineSetup.devices(profile)
    }
    if let scenario = decoded(Scenario.self, text) {
        requireFinite(scenario, "a decoded Scenario")
        if let world = try? ScenarioWorld(scenario, startNanoseconds: 0) {
            let end = nanoseconds(seconds: scenario.durationSeconds)
            for t in [0, end / 2, end] {
                requireFinite(world.sample(atNanoseconds: t), "the truth of a decoded scenario at \(t) ns")
                _ = world.activeEvents(atNanoseconds: t)
            }
        }
    }
    // (FoundationEssentials once trapped on a number ending the text after a
    // comment; ConfigLoader now ends every text it hands over with a newline:
    // corpus/config/regressions/foundation-json5-trailing-number-after-comment.json5.)
    if let calibration = decoded(CalibrationFile.self, text) {
        // An absent temperature_c decodes to NaN, "not measured" (CalibrationFile.swift).
        requireFinite(calibration, "a decoded CalibrationFile", nanMeansUnknown: ["temperatureCelsius"])
    }
    return 0
}

/// `T` decoded from `text`, or nil after checking the error it threw.
private func decoded<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
    do {
        return try ConfigLoader.decode(type, from: text, file: fileName)
    } catch {
        // Lines as the diagnostics count them: LF, or a CR not before an LF.
        let u = Array(text.utf8)
        let lines = u.indices.count { i in
            u[i] == 0x0A || (u[i] == 0x0D && (i + 1 == u.count || u[i + 1] != 0x0A))
        } + 1
        if let line = error.line, !(1...lines).contains(line) {
            invariantBroken("\(T.self): error names line \(line) of a \(lines)-line text: \(error)")
        }
        _ = error.description
        return nil
    }
}

// MARK: the engine on the simulated board

/// The simulated board's chips (boards/simulated.json5 without the accessory).
private let profileText = """
{
  name: "fuzz board", bus: "simulated", simulation: { scenario: "rest.json5" },
  chips: [
    { kind: "mpu6050", address: 0x68 },
    { kind: "bmp280", address: 0x76 },
    { kind: "qmc5883l", address: 0x0d, mounting: ["-y", "+x", "+z"] },
    { kind: "mpu6050", address: 0x69, role: "accessory" },
  ],
}
"""

/// scenarios/rest-flat.json5, ideal chips (no noise to draw).
private let scenarioText = """
{
  name: "rest", duration_s: 60, seed: 1,
  board: { start: { roll_deg: 0, pitch_deg: 0, yaw_deg: 0 } },
  environment: {
    field: { intensity_ut: 48, inclination_deg: 60, declination_deg: 0 },
    pressure: { mode: "altitude", sea_level_pa: 101325, start_altitude_m: 0 },
    temperature: { start_c: 20 },
  },
  imperfections: { default: "ideal" },
}
"""

private struct Fixed: @unchecked Sendable {
    let profile: BoardProfile
    let scenario: Scenario
}

private let fixed: Fixed = {
    do {
        return Fixed(profile: try ConfigLoader.decode(BoardProfile.self, from: profileText, file: "fuzz-board.json5"),
                     scenario: try ConfigLoader.decode(Scenario.self, from: scenarioText, file: "fuzz-scenario.json5"))
    } catch {
        fatalError("the fuzz target's own board or scenario does not load: \(error)")
    }
}()

/// What `edge-agent run` does with a configuration, short of sockets and
/// threads: the engine's settings, the hub on the simulated board, start,
/// ticks.
private func runEngine(_ config: AgentConfig) {
    let settings = EngineSetup.settings(config)
    if config.clients != nil { _ = try? EngineSetup.policy(config) }
    let clock = VirtualClock(startNanoseconds: 1_000_000_000)
    guard let world = try? ScenarioWorld(fixed.scenario, startNanoseconds: clock.nowNanoseconds),
          let board = try? SimulatedBoardFactory.make(profile: fixed.profile, world: world, scenarioPath: "rest.json5",
                                                      clock: clock, seed: 1)
    else { invariantBroken("the fixed simulated board does not build") }
    let hub = SensorHub(bus: board.bus, clock: clock, devices: EngineSetup.devices(fixed.profile),
                        settings: settings, sink: nil)
    hub.start()
    for _ in 0..<6 {
        clock.advance(nanoseconds: hub.loopPeriodNanoseconds)
        hub.tick()
    }
}
