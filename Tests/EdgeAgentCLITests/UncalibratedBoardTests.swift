// Issue 16, item 9: `run --board boards/simulated-dive.json5` exited 2
// because config/calibration.json was measured on the other simulated
// board; so did every board whose simulation seed differs. Now the agent
// starts, runs those chips uncalibrated and says so (start, status line,
// devices snapshot, watch, magnetic accuracy `uncalibrated`); a board may
// carry its own calibration; --require-calibration / calibration_required
// refuse. The agent runs as a process from a directory of its own.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import EdgeCommandLine
import EdgeConfig
import EdgeBus
import EdgeSim
import EdgeFusion
@testable import EdgeAgentCLI
import EdgeRuntime
import EdgeLocations
import TestThreads

@Suite(.ownThread) struct UncalibratedBoardTests {
    static var repositoryConfig: String { DaemonPaths.packageRoot + "/config/edge-agent.json5" }

    /// The default simulated board with another seed: its chips are not the
    /// ones config/calibration.json was measured on. No calibration_file.
    static func reseededBoard(in dir: String) throws -> String {
        let path = dir + "/reseeded.json5"
        try """
        { name: "Reseeded simulated board", bus: "simulated",
          simulation: { scenario: "\(DaemonPaths.packageRoot)/scenarios/desk-idle.json5", seed: 99 },
          chips: [ { kind: "mpu6050", address: 0x68 }, { kind: "bmp280", address: 0x76 },
                   { kind: "qmc5883l", address: 0x0d, mounting: ["-y", "+x", "+z"] } ] }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Starts `run` and waits for its socket; the caller kills it.
    static func startAgent(_ args: [String], dir: String, socket: String) throws -> AgentProcess {
        let agent = AgentProcess(arguments: ["run", "--socket", socket] + args,
                                 environment: AgentProcess.environment([:]), outputDirectory: dir)
        agent.process.currentDirectoryURL = URL(fileURLWithPath: dir)
        try agent.start()
        let deadline = DaemonDeadline(seconds: 60)
        while !DaemonPaths.isSocket(socket) && agent.isRunning && !deadline.expired { daemonPause(ms: 20) }
        try #require(DaemonPaths.isSocket(socket), "the agent did not start:\n\(agent.transcript)")
        return agent
    }

    /// c7b77b9: exit 2, "…/config/calibration.json is the calibration of
    /// other chips than this board's, so it is not loaded".
    @Test func aBoardOfOtherChipsRunsUncalibratedAndSaysSoEverywhere() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("uncal")
        defer { DaemonPaths.removeTree(dir) }
        let board = try Self.reseededBoard(in: dir)
        let socket = dir + "/a.sock"
        let agent = try Self.startAgent(["--config", Self.repositoryConfig, "--board", board, "--duration", "60", "--status", "0.1"],
                                        dir: dir, socket: socket)
        defer { agent.kill() }
        let calibration = DaemonPaths.packageRoot + "/config/calibration.json"

        // watch, as a user would: samples flow; field accuracy and devices say uncalibrated
        let watch = try ToolRun.run(["watch", "--socket", socket, "--count", "8", "--plain"], in: dir)
        #expect(watch.status == 0, "\(watch.err)\n\(agent.transcript)")
        let lines = watch.out.split(separator: "\n").filter { $0.hasPrefix("t_s=") }
        #expect(lines.count == 8, "\(watch.out)")
        for line in lines {
            #expect(line.contains(" magneticFieldAccuracy=uncalibrated "), "\(line)")
        }
        // the devices reply comes within the first second (watch refreshes it every second)
        let withDevices = lines.filter { $0.contains(" devices=") }
        #expect(!withDevices.isEmpty, "\(watch.out)")
        for line in withDevices {
            #expect(line.contains(" uncalibrated=mpu6050@0x68,qmc5883l@0x0d "), "\(line)")
        }

        // the devices snapshot carries the reason
        let client = try DaemonClient(path: socket, name: "devices")
        #expect(client.request(#"{"class":"devices","id":"d"}"#))
        let reply = try #require(client.waitFor(class: "devices", id: "d", DaemonDeadline(seconds: 20)))
        let devices = try #require(reply.object["devices"] as? [[String: Any]])
        for id in ["mpu6050@0x68", "qmc5883l@0x0d"] {
            let d = try #require(devices.first { $0["id"] as? String == id }, "\(reply)")
            #expect(d["calibration"] as? String == "uncalibrated", "\(d)")
            let note = d["calibrationNote"] as? String ?? ""
            #expect(note.contains("\(calibration) was measured on other chips"), "\(note)")
            #expect(note.contains("simulation seed 16 when calibrated, 99 now"), "\(note)")
        }
        let baro = try #require(devices.first { $0["id"] as? String == "bmp280@0x76" })
        #expect(baro["calibration"] is NSNull && baro["calibrationNote"] is NSNull, "a barometer has nothing to calibrate: \(baro)")

        // start and status line
        agent.signal(SIGTERM)
        #expect(agent.waitForExit(DaemonDeadline(seconds: 30))?.status == 0, "\(agent.transcript)")
        #expect(agent.stderr.contains("warning: mpu6050@0x68 runs uncalibrated: \(calibration) was measured on other chips"), "\(agent.transcript)")
        #expect(agent.stdout.contains("  calibration: qmc5883l@0x0d UNCALIBRATED: \(calibration) was measured on other chips"), "\(agent.transcript)")
        let status = agent.stdout.split(separator: "\n").filter { $0.hasPrefix("t=") }
        #expect(!status.isEmpty, "\(agent.transcript)")
        for line in status {
            #expect(line.contains("  uncalibrated: mpu6050@0x68, qmc5883l@0x0d"), "\(line)")
            #expect(line.unicodeScalars.count <= 100, "\(line.unicodeScalars.count) columns: \(line)")
        }
    }

    /// c7b77b9: no such option; the config key was an unknown key (exit 2 for another reason).
    @Test func requiringCalibrationRefusesToStartSayingWhy() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("uncal-req")
        defer { DaemonPaths.removeTree(dir) }
        let board = try Self.reseededBoard(in: dir)
        let flag = try ToolRun.run(["run", "--config", Self.repositoryConfig, "--board", board, "--require-calibration",
                                    "--duration", "1", "--socket", dir + "/a.sock"], in: dir)
        #expect(flag.status == 2, "\(flag.err)")
        #expect(flag.err.contains("calibration is required"), "\(flag.err)")
        #expect(flag.err.contains("mpu6050@0x68: \(DaemonPaths.packageRoot)/config/calibration.json was measured on other chips"), "\(flag.err)")
        let config = dir + "/agent.json5"
        try """
        { board: "\(board)", calibration_file: "\(DaemonPaths.packageRoot)/config/calibration.json",
          calibration_required: true, service: { socket_path: "\(dir)/b.sock" } }
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let key = try ToolRun.run(["run", "--config", config, "--duration", "1"], in: dir)
        #expect(key.status == 2 && key.err.contains("calibration is required"), "\(key.err)")
        #expect(!DaemonPaths.exists(dir + "/b.sock"))
    }

    /// The shipped dive board carries its own calibration: with the
    /// repository's configuration (whose calibration is the other board's)
    /// it runs calibrated from boards/simulated-dive.calibration.json.
    /// c7b77b9: exit 2.
    @Test(.enabled(if: noSystemConfig, "an installed /etc/edge-agent/edge-agent.json5 is used instead"))
    func theDiveBoardRunsLiveByNameWithItsOwnCalibration() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("uncal-dive")
        defer { DaemonPaths.removeTree(dir) }
        let socket = dir + "/a.sock"
        let agent = try Self.startAgent(["--board", "simulated-dive", "--duration", "60"], dir: dir, socket: socket)
        defer { agent.kill() }
        let watch = try ToolRun.run(["watch", "--socket", socket, "--count", "2", "--plain"], in: dir)
        #expect(watch.status == 0, "\(watch.err)\n\(agent.transcript)")
        #expect(watch.out.split(separator: "\n").filter { $0.hasPrefix("t_s=") }.count == 2, "\(watch.out)")
        #expect(!watch.out.contains("uncalibrated="), "\(watch.out)")
        let own = DaemonPaths.packageRoot + "/boards/simulated-dive.calibration.json"
        #expect(agent.stdout.contains("  calibration: mpu6050@0x68 from \(own)"), "\(agent.transcript)")
        #expect(agent.stdout.contains("  calibration: qmc5883l@0x0d from \(own)"), "\(agent.transcript)")
        #expect(!agent.stderr.contains("runs uncalibrated"), "\(agent.transcript)")
    }

    /// Precedence, in process: the configuration's calibration wins for
    /// the chips it was measured on; the board's fills the others.
    @Test func theConfigurationsCalibrationComesFirstTheBoardsFillsIn() throws {
        var a = Arguments(["--config", Self.repositoryConfig, "--board", DaemonPaths.packageRoot + "/boards/simulated-dive.json5"], command: "test")
        let selection = try BoardSession.select(&a, environment: [:])
        let files = CalibrationLoader.Files(selection)
        #expect(files.configuration == BoardLocator.resolve("calibration.json", nextTo: Self.repositoryConfig))
        #expect(files.board == DaemonPaths.packageRoot + "/boards/simulated-dive.calibration.json")
        let session = try BoardSession.open(selection, clock: VirtualClock())
        let both = try CalibrationLoader.resolve(files, for: session)
        #expect(both.sources == ["mpu6050@0x68": files.board!, "qmc5883l@0x0d": files.board!])
        #expect(both.uncalibrated.isEmpty && both.statusChips.isEmpty)
        // the board's file alone, then its own configuration's file first
        let boardOnly = try CalibrationLoader.resolve(.init(board: files.board), for: session)
        #expect(boardOnly.engine == both.engine)
        let neither = try CalibrationLoader.resolve(.init(configuration: files.configuration), for: session)
        let chips = neither.uncalibrated.map { $0.chip }
        #expect(chips == ["mpu6050@0x68", "qmc5883l@0x0d"])
        #expect(neither.uncalibrated.allSatisfy { $0.skipped })
        let mine = try DaemonPaths.makeTemporaryDirectory("uncal-prec")
        defer { DaemonPaths.removeTree(mine) }
        var own = try CalibrationFile.load(from: files.board!)
        own.chips["qmc5883l@0x0d"] = nil
        own.chips["mpu6050@0x68"]?.gyro?.calibration.bias = Vector3(0.001, 0.002, 0.003)
        try own.save(to: mine + "/mine.json")
        let first = try CalibrationLoader.resolve(.init(configuration: mine + "/mine.json", board: files.board), for: session)
        #expect(first.sources == ["mpu6050@0x68": mine + "/mine.json", "qmc5883l@0x0d": files.board!])
        #expect(first.engine.imu["mpu6050@0x68"]?.gyroBias == SIMD3(0.001, 0.002, 0.003))
    }
}
