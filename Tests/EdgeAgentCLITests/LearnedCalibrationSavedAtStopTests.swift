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
import TestThreads

@Suite(.ownThread) struct LearnedCalibrationSavedAtStopTests {
    /// The magnet fixed to the board, µT, board frame (the scenario's `steel`, body "board").
    static let magnet = Vector3(25, -30, 15)

    /// Eight turns of 4 s about axes that together excite every direction.
    static let turns = """
            { duration_s: 4, rotate: { axis: "z", rate_dps: 180, ramp_s: 0.5 } },
            { duration_s: 4, rotate: { axis: [1, 1, 0], rate_dps: 150, ramp_s: 0.5 } },
            { duration_s: 4, rotate: { axis: "y", rate_dps: 200, ramp_s: 0.5 } },
            { duration_s: 4, rotate: { axis: [1, -1, 1], rate_dps: 150, ramp_s: 0.5 } },
            { duration_s: 4, rotate: { axis: "x", rate_dps: 180, ramp_s: 0.5 } },
            { duration_s: 4, rotate: { axis: [0, 1, 1], rate_dps: 150, ramp_s: 0.5 } },
            { duration_s: 4, rotate: { axis: "z", rate_dps: -180, ramp_s: 0.5 } },
            { duration_s: 4, rotate: { axis: [1, 0, 1], rate_dps: 150, ramp_s: 0.5 } },
    """

    /// Turning fast about six axes (150-200 °/s: the learning needs 30° per
    /// equation, so it learns in seconds of real time), then still for the
    /// rest of the run. The default simulated board's seed and
    /// imperfections, so the repository's guided calibration fits its chips.
    static let scenario = """
    {
      name: "magnet-on-board-fast", duration_s: 900,
      board: { segments: [
        { duration_s: 1 },
    \(turns)
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
    static func setUp(in dir: String, scenario: String = scenario) throws -> (config: String, calibration: String, learned: String) {
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

    /// A client of the agent's socket in `dir`: the socket file exists from
    /// `bind`, before the agent listens, so a refused connection is tried
    /// again (bounded) while the agent runs.
    static func connect(_ dir: String, _ name: String, _ agent: AgentProcess) throws -> DaemonClient {
        let deadline = DaemonDeadline(seconds: 30)
        while true {
            do { return try DaemonClient(path: dir + "/a.sock", name: name) } catch {
                guard agent.isRunning && !deadline.expired else { throw DaemonTestError("\(error)\n\(agent.transcript)") }
                daemonPause(ms: 20)
            }
        }
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
        let client = try Self.connect(dir, "first run", first)
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
        let again = try Self.connect(dir, "second run", second)
        let start = Self.accuracies(again, DaemonDeadline(seconds: 60)) { $0.count >= 20 }
        #expect(start.count >= 20, "\(second.transcript)")
        #expect(!start.contains("uncalibrated"), "the restarted agent starts uncalibrated: \(start)")
        second.signal(SIGTERM)
        #expect(second.waitForExit(DaemonDeadline(seconds: 60))?.status == 0, "\(second.transcript)")
        #expect(second.stdout.contains(learned), "the start does not name the learned file:\n\(second.transcript)")
    }

    /// Soft iron fixed to the board besides the magnet (the steel's
    /// `soft_iron`, board frame: B' = D·B + offset): 8 % stretch, 7 % squeeze, shear.
    static let softIron = Matrix3(Vector3(1.08, 0.04, -0.03), Vector3(0.04, 0.93, 0.05), Vector3(-0.03, 0.05, 1.0))

    /// The same turns as ``scenario``, three times over (the soft iron needs
    /// every axis excited, more than the hard iron), with soft iron.
    static let softIronScenario: String = {
        let d = softIron
        return """
        {
          name: "magnet-and-steel-on-board", duration_s: 900,
          board: { segments: [
            { duration_s: 1 },
        \(turns)
        \(turns)
        \(turns)
            { duration_s: 803 },
          ] },
          environment: {
            field: { intensity_ut: 48, inclination_deg: 60, declination_deg: 0 },
            disturbances: [ { kind: "steel", name: "magnet", from_s: 0, offset_ut: [25, -30, 15], body: "board",
                              soft_iron: [[\(d.r0.x), \(d.r0.y), \(d.r0.z)], [\(d.r1.x), \(d.r1.y), \(d.r1.z)], [\(d.r2.x), \(d.r2.y), \(d.r2.z)]] } ],
          },
        }
        """
    }()

    /// The field strength of device motion samples while the board turns
    /// (rotation rate above 1 rad/s), until `stop` says so (or the deadline).
    static func turningStrengths(_ client: DaemonClient, _ deadline: DaemonDeadline,
                                 stop: (_ strengths: [Double], _ rate: [Double]) -> Bool) -> [Double] {
        client.request(#"{"class":"subscribe","stream":"deviceMotion","id":"dm"}"#)
        var seen: [Double] = []
        while let m = client.next(deadline) {
            guard m.cls == "sample", m.stream == "deviceMotion", let f = m.components("magneticField_uT"), f != [0, 0, 0],
                  let w = m.components("rotationRate_radps") else { continue }
            guard (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).squareRoot() > 1 else { continue }
            seen.append((f[0] * f[0] + f[1] * f[1] + f[2] * f[2]).squareRoot())
            if stop(seen, w) { break }
        }
        return seen
    }

    /// Relative standard deviation of `x`.
    static func spread(_ x: ArraySlice<Double>) -> Double {
        let mean = x.reduce(0, +) / Double(x.count)
        return (x.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(x.count)).squareRoot() / mean
    }

    /// The soft iron the agent learns (config default `fusion.self_calibration_soft_iron`)
    /// is saved with the hard iron at stop, read back by a second reader,
    /// and the restarted agent removes it from its first turn: while
    /// turning about one axis (which cannot teach it the soft iron) the
    /// field's strength is flat, where the soft iron left in makes it swing
    /// by 4 % (RMS) as the board turns.
    @Test func theLearnedSoftIronIsSavedWithTheHardIronAndRestored() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("learned-soft")
        defer { DaemonPaths.removeTree(dir) }
        let (config, calibration, learned) = try Self.setUp(in: dir, scenario: Self.softIronScenario)

        // 1. turning: learned once the field's strength has stayed flat through two
        //    windows of 3 s of turns (one window was not always enough: see step 2)
        let first = try Self.startAgent(config: config, dir: dir)
        defer { first.kill() }
        let client = try Self.connect(dir, "first run", first)
        let window = 300
        func flatTwice(_ s: [Double]) -> Bool {
            s.count >= 2 * window && Self.spread(s.suffix(window)) < 0.01
                && Self.spread(s.suffix(2 * window).prefix(window)) < 0.01
        }
        let seen = Self.turningStrengths(client, DaemonDeadline(seconds: 240)) { s, _ in flatTwice(s) }
        let lastSpread = seen.count >= window ? Self.spread(seen.suffix(window)) : .nan
        try #require(flatTwice(seen),
                     "the field's strength never flat for two windows while turning: \(seen.count) samples, last spread \(lastSpread)\n\(first.transcript)")
        first.signal(SIGTERM)
        #expect(first.waitForExit(DaemonDeadline(seconds: 60))?.status == 0, "\(first.transcript)")

        // 2. a second reader: G = Cᵀ·S′·S⁻¹·C (C: chip from board, mounting -y,+x,+z) is the
        //    board's D⁻¹ (both at trace 3: rotation cannot tell the scale), and h′ = h + S⁻¹·C·b
        let file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: learned))) as? [String: Any])
        let mag = try #require(((file["chips"] as? [String: Any])?["qmc5883l@0x0d"] as? [String: Any])?["mag"] as? [String: Any], "\(file)")
        let guidedFile = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: calibration))) as? [String: Any])
        let guided = try #require(((guidedFile["chips"] as? [String: Any])?["qmc5883l@0x0d"] as? [String: Any])?["mag"] as? [String: Any])
        func matrix(_ any: Any?) throws -> Matrix3 {
            let rows = try #require(any as? [Any])
            return Matrix3(try #require(Self.vector(rows[0])), try #require(Self.vector(rows[1])), try #require(Self.vector(rows[2])))
        }
        let s = try matrix(guided["soft_iron"]), saved = try matrix(mag["soft_iron"])
        let c = Matrix3(Vector3(0, 1, 0), Vector3(-1, 0, 0), Vector3(0, 0, 1))
        let g = c.transposed * saved * (try #require(s.inverse)) * c
        let dInverse = try #require(Self.softIron.inverse)
        let e = (3 / g.trace) * g - (3 / dInverse.trace) * dInverse
        // Within 1.5 %: this is the agent learning on the real clock, and how
        // much it learns by the stop depends on the machine. Unloaded, and with
        // four busy processes beside it, the worst element here was 0.002-0.006;
        // with the agent under AddressSanitizer and four busy processes on two
        // cores, 0.002-0.008, and 0.0113 when step 1 stopped after one flat
        // window (the loop, late, reads fewer fields: the QMC5883L has no FIFO).
        // The learner's own accuracy (0.003) is asserted on simulated readings in
        // EdgeFusionTests' SoftIronSelfCalibrationTests; what this test adds is
        // the save, the second reader and the restart (step 3).
        let worst = [e.r0, e.r1, e.r2].map { max(abs($0.x), abs($0.y), abs($0.z)) }.max()!
        #expect(worst < 0.015, "saved soft iron \(saved) is G = \(g) on the board, the steel's D⁻¹ \(dInverse)")
        let hard = try #require(Self.vector(mag["hard_iron_ut"]))
        let expected = try #require(Self.vector(guided["hard_iron_ut"])) + (try #require(s.inverse)) * (c * Self.magnet)
        #expect((hard - expected).norm < 2.5, "learned hard iron \(hard) µT, expected \(expected) µT")

        // 3. restarted: through the first turn, about z alone, the strength is flat
        let second = try Self.startAgent(config: config, dir: dir)
        defer { second.kill() }
        let again = try Self.connect(dir, "second run", second)
        let firstTurn = Self.turningStrengths(again, DaemonDeadline(seconds: 60)) { s, w in
            abs(w[0]) > 1 || abs(w[1]) > 1 || s.count >= 250
        }.dropLast()
        try #require(firstTurn.count >= 100, "\(firstTurn.count) samples of the first turn\n\(second.transcript)")
        #expect(Self.spread(firstTurn) < 0.012, "the restarted agent's field swings by \(Self.spread(firstTurn)) (RMS) as it turns")
        second.signal(SIGTERM)
        #expect(second.waitForExit(DaemonDeadline(seconds: 60))?.status == 0, "\(second.transcript)")
    }
}
