// Issue 19: what the continuous magnetometer calibration learns is saved
// when the agent stops and loaded when it starts again - checked end to end
// on a real `edge-agent run` process: the simulated board turns with a
// magnet fixed to it until the field's accuracy is `high`, SIGTERM stops
// it, a second reader (JSONSerialization) reads the learned file against
// the scenario's magnet, and the restarted agent is calibrated from its
// first sample. Every wait is bounded and polls the agent's own output.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import EdgeValues

@Suite struct LearnedCalibrationSavedAtStopTests {
    /// The magnet fixed to the board, µT, board frame (the scenario's `steel`, body "board").
    static let magnet = Vector3(25, -30, 15)

    /// Turning fast about six axes (150-200 °/s: the learning needs 30° per
    /// equation, so it learns in seconds of real time), then still for the
    /// rest of the run. The default simulated board's seed and
    /// imperfections, so the repository's guided calibration fits its chips.
    static let scenario = """
    {
      name: "magnet-on-board-fast", duration_s: 900,
      board: { segments: [
        { duration_s: 1 },
        { duration_s: 4, rotate: { axis: "z", rate_dps: 180, ramp_s: 0.5 } },
        { duration_s: 4, rotate: { axis: [1, 1, 0], rate_dps: 150, ramp_s: 0.5 } },
        { duration_s: 4, rotate: { axis: "y", rate_dps: 200, ramp_s: 0.5 } },
        { duration_s: 4, rotate: { axis: [1, -1, 1], rate_dps: 150, ramp_s: 0.5 } },
        { duration_s: 4, rotate: { axis: "x", rate_dps: 180, ramp_s: 0.5 } },
        { duration_s: 4, rotate: { axis: [0, 1, 1], rate_dps: 150, ramp_s: 0.5 } },
        { duration_s: 4, rotate: { axis: "z", rate_dps: -180, ramp_s: 0.5 } },
        { duration_s: 4, rotate: { axis: [1, 0, 1], rate_dps: 150, ramp_s: 0.5 } },
        { duration_s: 867 },
      ] },
      environment: {
        field: { intensity_ut: 48, inclination_deg: 60, declination_deg: 0 },
        disturbances: [ { kind: "steel", name: "magnet", from_s: 0, offset_ut: [25, -30, 15], body: "board" } ],
      },
    }
    """

    /// The board profile, the configuration and a copy of the repository's
    /// guided calibration in `dir`; the configuration's path.
    static func setUp(in dir: String) throws -> (config: String, calibration: String, learned: String) {
        try scenario.write(toFile: dir + "/magnet.json5", atomically: true, encoding: .utf8)
        try """
        { name: "Simulated board with a magnet", bus: "simulated",
          simulation: { scenario: "\(dir)/magnet.json5", seed: 16 },
          chips: [ { kind: "mpu6050", address: 0x68 }, { kind: "bmp280", address: 0x76 },
                   { kind: "qmc5883l", address: 0x0d, mounting: ["-y", "+x", "+z"] } ] }
        """.write(toFile: dir + "/board.json5", atomically: true, encoding: .utf8)
        let calibration = dir + "/calibration.json"
        try FileManager.default.copyItem(atPath: DaemonPaths.packageRoot + "/config/calibration.json", toPath: calibration)
        try """
        { board: "\(dir)/board.json5", calibration_file: "\(calibration)", service: { socket_path: "\(dir)/a.sock" } }
        """.write(toFile: dir + "/agent.json5", atomically: true, encoding: .utf8)
        return (dir + "/agent.json5", calibration, dir + "/calibration.learned.json")
    }

    static func startAgent(config: String, dir: String) throws -> AgentProcess {
        let socket = dir + "/a.sock"
        let agent = AgentProcess(arguments: ["run", "--config", config, "--quiet"],
                                 environment: AgentProcess.environment([:]), outputDirectory: dir)
        agent.process.currentDirectoryURL = URL(fileURLWithPath: dir)
        try agent.start()
        let deadline = DaemonDeadline(seconds: 60)
        while !DaemonPaths.isSocket(socket) && agent.isRunning && !deadline.expired { daemonPause(ms: 20) }
        try #require(DaemonPaths.isSocket(socket), "the agent did not start:\n\(agent.transcript)")
        return agent
    }

    /// Subscribes to device motion; the field accuracy of each sample that
    /// carries a field (the first few come before the magnetometer's first
    /// reading) until `stop` says so (or the deadline).
    static func accuracies(_ client: DaemonClient, _ deadline: DaemonDeadline, stop: ([String]) -> Bool) -> [String] {
        client.request(#"{"class":"subscribe","stream":"deviceMotion","id":"dm"}"#)
        var seen: [String] = []
        while let m = client.next(deadline) {
            guard m.cls == "sample", m.stream == "deviceMotion", let a = m.string("magneticFieldAccuracy"),
                  let field = m.components("magneticField_uT"), field != [0, 0, 0] else { continue }
            seen.append(a)
            if stop(seen) { break }
        }
        return seen
    }

    /// Three numbers of a JSON array (JSONSerialization's reading).
    static func vector(_ any: Any?) -> Vector3? {
        guard let a = any as? [NSNumber], a.count == 3 else { return nil }
        return Vector3(a[0].doubleValue, a[1].doubleValue, a[2].doubleValue)
    }

    @Test func whatTheMagnetometerLearnedIsSavedAtStopAndARestartStartsCalibrated() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("learned-stop")
        defer { DaemonPaths.removeTree(dir) }
        let (config, calibration, learned) = try Self.setUp(in: dir)

        // 1. turning with the magnet: the guided calibration does not know it; the agent learns it
        let first = try Self.startAgent(config: config, dir: dir)
        defer { first.kill() }
        let client = try DaemonClient(path: dir + "/a.sock", name: "first run")
        let seen = Self.accuracies(client, DaemonDeadline(seconds: 240)) { $0.last == "high" }
        #expect(seen.last == "high", "never high: \(Set(seen)) in \(seen.count) samples\n\(first.transcript)")
        #expect(!DaemonPaths.exists(learned), "written before the stop")

        // 2. SIGTERM: a clean stop saves what was learned
        first.signal(SIGTERM)
        #expect(first.waitForExit(DaemonDeadline(seconds: 60))?.status == 0, "\(first.transcript)")
        #expect(first.stdout.contains("what the magnetometer learned saved to \(learned)")
                || first.stderr.contains("what the magnetometer learned saved to \(learned)"), "\(first.transcript)")

        // 3. a second reader: the hard iron is the guided one plus the magnet,
        //    carried into the chip frame (mounting -y,+x,+z: chip = (board y, -board x, board z))
        //    through the guided soft iron: h + S⁻¹·Mᵀ·magnet
        let file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: learned))) as? [String: Any])
        let entry = try #require((file["chips"] as? [String: Any])?["qmc5883l@0x0d"] as? [String: Any], "\(file)")
        #expect((entry["measured_on"] as? [String: Any])?["chip"] as? String == "qmc5883l", "\(entry)")
        let hard = try #require(Self.vector((entry["mag"] as? [String: Any])?["hard_iron_ut"]), "\(entry)")
        let guidedFile = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: calibration))) as? [String: Any])
        let guided = try #require(((guidedFile["chips"] as? [String: Any])?["qmc5883l@0x0d"] as? [String: Any])?["mag"] as? [String: Any])
        let h = try #require(Self.vector(guided["hard_iron_ut"]))
        let rows = try #require(guided["soft_iron"] as? [Any])
        let s = Matrix3(try #require(Self.vector(rows[0])), try #require(Self.vector(rows[1])), try #require(Self.vector(rows[2])))
        let expected = h + (try #require(s.inverse)) * Vector3(Self.magnet.y, -Self.magnet.x, Self.magnet.z)
        #expect((hard - expected).norm < 2.5, "learned hard iron \(hard) µT, expected \(expected) µT (guided \(h) + the magnet)")

        // 4. restarted: calibrated from the first sample, from the learned file
        let second = try Self.startAgent(config: config, dir: dir)
        defer { second.kill() }
        let again = try DaemonClient(path: dir + "/a.sock", name: "second run")
        let start = Self.accuracies(again, DaemonDeadline(seconds: 60)) { $0.count >= 20 }
        #expect(start.count >= 20, "\(second.transcript)")
        #expect(!start.contains("uncalibrated"), "the restarted agent starts uncalibrated: \(start)")
        second.signal(SIGTERM)
        #expect(second.waitForExit(DaemonDeadline(seconds: 60))?.status == 0, "\(second.transcript)")
        #expect(second.stdout.contains(learned), "the start does not name the learned file:\n\(second.transcript)")
    }
}
