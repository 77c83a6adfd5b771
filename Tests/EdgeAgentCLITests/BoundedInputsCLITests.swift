// Issue 16, item 4, through the command line: a FIFO, a device, a directory
// or an oversized file given as a configuration, board profile, scenario or
// calibration file is refused at once, naming the file and what is wrong.
// The processes run from a directory of their own with a bounded wait: a
// reader that blocks fails the test (ToolRun kills it at the deadline).
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import EdgeCommandLine
import EdgeConfig
import EdgeBus
import EdgeSim
@testable import EdgeAgentCLI
import EdgeRuntime
import TestThreads

@Suite(.ownThread) struct BoundedInputsCLITests {
    static func fifo(_ dir: String, _ name: String) throws -> String {
        let path = dir + "/" + name
        guard mkfifo(path, 0o600) == 0 else { throw DaemonTestError("mkfifo: \(String(cString: strerror(errno)))") }
        return path
    }

    /// c7b77b9: `run --config FIFO` blocked in open(2) for ever.
    @Test func runWithAFIFOAsItsConfigurationExitsAtOnceSayingWhy() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("bnd-cfg")
        defer { DaemonPaths.removeTree(dir) }
        let fifo = try Self.fifo(dir, "agent.json5")
        let r = try ToolRun.run(["run", "--config", fifo, "--duration", "1", "--socket", dir + "/a.sock"], in: dir, seconds: 60)
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains("\(fifo): not a regular file (a FIFO)"), "\(r.err)")
        #expect(r.err.contains("check the path given to --config"), "\(r.err)")
    }

    /// c7b77b9: each of these blocked on the FIFO too.
    @Test func aFIFOAsBoardScenarioOrCalibrationFileIsRefusedByTheTools() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("bnd-fifos")
        defer { DaemonPaths.removeTree(dir) }
        let board = try Self.fifo(dir, "board.json5"), scenario = try Self.fifo(dir, "scenario.json5")
        let calibration = try Self.fifo(dir, "calibration.json")
        let probe = try ToolRun.run(["probe", "--board", board], in: dir, seconds: 60)
        #expect(probe.status == 2 && probe.err.contains("\(board): not a regular file (a FIFO)"), "\(probe.err)")
        let sim = try ToolRun.run(["simulate", scenario, "--duration", "0.05"], in: dir, seconds: 60)
        #expect(sim.status == 2 && sim.err.contains("\(scenario): not a regular file (a FIFO)"), "\(sim.err)")
        let config = dir + "/agent.json5"
        try """
        { board: "simulated", calibration_file: "calibration.json", service: { socket_path: "\(dir)/a.sock" } }
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let run = try ToolRun.run(["run", "--config", config, "--duration", "1"], in: dir, seconds: 60)
        #expect(run.status == 2 && run.err.contains("\(calibration): not a regular file (a FIFO)"), "\(run.err)")
    }

    /// In process (a process reading /dev/zero on c7b77b9 would take the
    /// machine's memory): every reader, the three kinds of bad file.
    @Test func everyReaderRefusesADeviceADirectoryAndAnOversizedFile() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("bnd-kinds")
        defer { DaemonPaths.removeTree(dir) }
        let big = dir + "/big.json5"
        try ("{}" + String(repeating: " ", count: ConfigLoader.maximumFileBytes)).write(toFile: big, atomically: true, encoding: .utf8)
        let cases: [(path: String, says: String)] = [
            ("/dev/zero", "/dev/zero: not a regular file (a character device)"),
            (dir, "\(dir): not a regular file (a directory)"),
            (big, "\(big): larger than 1 MiB (1048578 bytes)"),
        ]
        for c in cases {
            var args = Arguments(["--config", c.path], command: "test")
            #expect(throws: SetupError.self) { _ = try BoardSession.select(&args, environment: [:]) }
            do { var a = Arguments(["--config", c.path], command: "test"); _ = try BoardSession.select(&a, environment: [:]) } catch {
                #expect("\(error)".contains(c.says), "configuration: \(error)")
            }
            do { var a = Arguments(["--board", c.path], command: "test"); _ = try BoardSession.select(&a, environment: [:]) } catch {
                #expect("\(error)".contains(c.says), "board: \(error)")
            }
            do {
                _ = try SimulatedBoardFactory.loadScenario(c.path)
                Issue.record("scenario \(c.path) loaded")
            } catch {
                #expect("\(error)".contains(c.says), "scenario: \(error)")
            }
            let session = try BoardSession.open(try defaultSelection(), clock: VirtualClock())
            do {
                _ = try CalibrationLoader.resolve(.init(configuration: c.path), for: session)
                Issue.record("calibration \(c.path) loaded")
            } catch {
                #expect("\(error)".contains(c.says), "calibration: \(error)")
            }
        }
    }
}
