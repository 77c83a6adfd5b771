import Testing
import Foundation
import EdgeBus
import EdgeConfig
@testable import EdgeAgentCLI
import EdgeRuntime

let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()

/// The simulated board as the tools open it, on a virtual clock.
func simulatedSelection(scenario: String = "rest-flat") throws -> BoardSession.Selection {
    var profile = try ConfigLoader.load(BoardProfile.self, from: repositoryRoot + "/boards/simulated.json5")
    profile.simulation = .init(scenario: "../scenarios/\(scenario).json5")
    let config = try ConfigLoader.load(AgentConfig.self, from: repositoryRoot + "/config/edge-agent.json5")
    return BoardSession.Selection(profile: profile, profilePath: repositoryRoot + "/boards/simulated.json5",
                                  config: config, configPath: repositoryRoot + "/config/edge-agent.json5")
}

/// The repository's default board: boards/simulated.json5 playing desk-idle,
/// with config/edge-agent.json5 - what `edge-agent run` uses.
func defaultSelection() throws -> BoardSession.Selection {
    let config = try ConfigLoader.load(AgentConfig.self, from: repositoryRoot + "/config/edge-agent.json5")
    let profile = try ConfigLoader.load(BoardProfile.self, from: repositoryRoot + "/boards/simulated.json5")
    return BoardSession.Selection(profile: profile, profilePath: repositoryRoot + "/boards/simulated.json5",
                                  config: config, configPath: repositoryRoot + "/config/edge-agent.json5")
}

@Suite struct SimulatedBoardToolTests {
    @Test func probeFindsEveryConfiguredChip() throws {
        let session = try BoardSession.open(try simulatedSelection(), clock: VirtualClock())
        let report = try ProbeCommand.probe(session)
        #expect(report.ok)
        #expect(Set(report.found.map(\.address)) == ["0x0d", "0x68", "0x69", "0x76"])
        #expect(report.configured.allSatisfy { $0.status == "present" })
        #expect(report.found.first { $0.address == "0x76" }?.chip == "bmp280")
    }

    @Test func readGivesPlausibleValuesAtRest() throws {
        let session = try BoardSession.open(try simulatedSelection(), clock: VirtualClock())
        var chips = try ChipSet.start(session: session, settings: try simulatedSelection().config.sensors, warn: { _ in })
        let readings = chips.readAll()
        #expect(readings.allSatisfy { $0.error == nil })
        let imu = try #require(readings.first { $0.spec.id == "mpu6050@0x68" })
        let a = try #require(imu.acceleration)
        // ~1 g on board Z (realistic imperfections: bias ±80 mg, scale ±3 %).
        #expect(abs(a.z - 9.80665) < 1.5)
        #expect(abs(a.x) < 1.0 && abs(a.y) < 1.0)
        let baro = try #require(readings.first { $0.spec.kind == .bmp280 })
        #expect(try #require(baro.pressure) > 95_000 && baro.pressure! < 105_000)
        let mag = try #require(readings.first { $0.spec.kind == .qmc5883l })
        let field = try #require(mag.field)
        let n = (field * field).sum().squareRoot()
        #expect(n > 20 && n < 80, "tens of µT, got \(n)")
        // Northern-hemisphere field points down: board Z negative when level.
        #expect(field.z < -20)
    }

    @Test func readJSONCarriesUnitsInKeys() throws {
        let session = try BoardSession.open(try simulatedSelection(), clock: VirtualClock())
        var chips = try ChipSet.start(session: session, settings: try simulatedSelection().config.sensors, warn: { _ in })
        let line = ChipSet.json(chips.readAll(), timeNanoseconds: 42)
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(obj["class"] as? String == "reading")
        #expect(obj["time_ns"] as? Int == 42)
        let list = try #require(obj["chips"] as? [[String: Any]])
        #expect(list.count == 4)
        let imu = try #require(list.first { $0["id"] as? String == "mpu6050@0x68" })
        #expect((imu["accel_mps2"] as? [Double])?.count == 3)
        #expect((imu["gyro_radps"] as? [Double])?.count == 3)
        #expect(list.first { $0["kind"] as? String == "bmp280" }?["pressure_pa"] is Double)
        #expect((list.first { $0["kind"] as? String == "qmc5883l" }?["field_ut"] as? [Double])?.count == 3)
    }

    @Test func upsideDownBoardReadsMinusOneG() throws {
        let session = try BoardSession.open(try simulatedSelection(scenario: "rest-upside-down"), clock: VirtualClock())
        var chips = try ChipSet.start(session: session, settings: try simulatedSelection().config.sensors, warn: { _ in })
        let imu = try #require(chips.readAll().first { $0.spec.id == "mpu6050@0x68" })
        #expect(try #require(imu.acceleration).z < -8.3)
    }
}

@Suite struct SimulateCommandTests {
    func simulate(_ args: [String]) -> (Int32, String, String) {
        let (c, out, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "simulate"] + args, console: c)
        return (rc, out(), err())
    }

    @Test func sameScenarioAndSeedGiveIdenticalBytes() {
        let args = [repositoryRoot + "/scenarios/pickup-walk.json5", "--duration", "2",
                    "--config", repositoryRoot + "/config/edge-agent.json5"]
        let (rc1, a, _) = simulate(args)
        let (rc2, b, _) = simulate(args)
        #expect(rc1 == 0 && rc2 == 0)
        #expect(a == b)
        #expect(a.hasPrefix("t,gx,gy,gz,ax,ay,az,mx,my,mz\n"))
        let (_, c, _) = simulate(args + ["--seed", "99"])
        #expect(c != a, "a different seed gives different noise")
    }

    @Test func magnetometerCellsAreEmptyBetweenItsSamples() throws {
        let (rc, out, _) = simulate([repositoryRoot + "/scenarios/rest-flat.json5", "--duration", "0.1",
                                     "--config", repositoryRoot + "/config/edge-agent.json5"])
        #expect(rc == 0)
        let rows = out.split(separator: "\n").dropFirst()
        #expect(rows.count == 20)   // 0.1 s at 200 Hz
        let withMag = rows.filter { !$0.hasSuffix(",,,") }
        // One field per output period of the configured QMC5883L rate.
        let config = try ConfigLoader.load(AgentConfig.self, from: repositoryRoot + "/config/edge-agent.json5")
        #expect(withMag.count == Int((0.1 * Double(config.sensors.qmc5883l.outputRate.hertz)).rounded()))
        let first = try #require(rows.first).split(separator: ",", omittingEmptySubsequences: false)
        #expect(first.count == 10)
        #expect(abs(Double(first[6])! - 9.80665) < 1.5)
    }

    @Test func missingScenarioIsAClearError() {
        let (rc, _, err) = simulate(["/nonexistent/scenario.json5"])
        #expect(rc == 2)   // a missing input file the command was told to use is bad use, as a bad config
        #expect(err.contains("/nonexistent/scenario.json5"))
        #expect(err.contains("no such file"))
        let (rc2, _, err2) = simulate([])
        #expect(rc2 == 2)
        #expect(err2.contains("missing SCENARIO"))
    }
}
