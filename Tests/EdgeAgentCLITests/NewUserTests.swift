// What a new user met on main, each fixed and checked here: the tools found
// nothing outside the repository, `watch` looked for the system socket, hints
// advised joining the root group, quiet counts said nothing of why, exit
// statuses disagreed between commands. The subprocess tests run the real
// `edge-agent` from a directory of their own (bounded waits, no sleeps).
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import EdgeConfig
import EdgeProtocol
import EdgeService
@testable import EdgeAgentCLI
import EdgeLocations
import TestThreads

/// The real binary in a child process with its own working directory.
struct ToolRun {
    var status: Int32
    var out: String
    var err: String

    /// Runs `executable arguments…` in `directory`; the environment is the
    /// test's without anything that steers the tool, plus `extra`.
    static func run(_ arguments: [String], in directory: String, executable: String = DaemonPaths.agentBinary,
                    extra: [String: String] = [:], seconds: Double = 60) throws -> ToolRun {
        var env = AgentProcess.environment(extra)
        env["EDGE_AGENT_SOCKET"] = extra["EDGE_AGENT_SOCKET"]
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.environment = env
        p.currentDirectoryURL = URL(fileURLWithPath: directory)
        let outPath = directory + "/.tool.out", errPath = directory + "/.tool.err"
        FileManager.default.createFile(atPath: outPath, contents: nil)
        FileManager.default.createFile(atPath: errPath, contents: nil)
        guard let out = FileHandle(forWritingAtPath: outPath), let err = FileHandle(forWritingAtPath: errPath) else {
            throw DaemonTestError("cannot open \(outPath)")
        }
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = out
        p.standardError = err
        try p.run()
        try? out.close(); try? err.close()
        let deadline = DaemonDeadline(seconds: seconds)
        while p.isRunning {
            if deadline.expired { kill(p.processIdentifier, SIGKILL); throw DaemonTestError("\(arguments) still runs after \(seconds) s") }
            daemonPause(ms: 10)
        }
        return ToolRun(status: p.terminationStatus, out: DaemonPaths.read(outPath), err: DaemonPaths.read(errPath))
    }
}

/// An installed system configuration takes precedence over everything the
/// lookup tests rely on; they do not run where one exists.
let noSystemConfig = !FileManager.default.fileExists(atPath: BoardLocator.systemConfigPath)

@Suite(.ownThread) struct FindsItsFilesFromAnywhereTests {
    /// Main: `board profile 'simulated' not found (looked in: ./../boards/…)`, exit 1.
    @Test(.enabled(if: noSystemConfig, "an installed /etc/edge-agent/edge-agent.json5 is used instead"))
    func probeRunsOnTheSimulatedBoardFromAnotherDirectory() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-probe")
        defer { DaemonPaths.removeTree(dir) }
        let r = try ToolRun.run(["probe"], in: dir)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("Simulated board"), "\(r.out)")
        #expect(r.out.contains("All configured chips are present."), "\(r.out)")
    }

    /// Main: the scenario is looked for in the working directory only.
    @Test func simulateFindsAScenarioByNameFromAnotherDirectory() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-sim")
        defer { DaemonPaths.removeTree(dir) }
        let r = try ToolRun.run(["simulate", "scenarios/lift-3m.json5", "--duration", "0.05",
                                 "--board", DaemonPaths.packageRoot + "/boards/simulated.json5"], in: dir)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.hasPrefix("t,gx,gy,gz,ax,ay,az"), "\(r.out.prefix(200))")
        let byName = try ToolRun.run(["simulate", "rest-flat", "--duration", "0.05",
                                      "--board", DaemonPaths.packageRoot + "/boards/simulated.json5"], in: dir)
        #expect(byName.status == 0, "\(byName.err)")
    }

    /// A build tree of its own (the real binary behind a symlink in
    /// TREE/.build/debug/), whose configuration puts the socket in the test's
    /// directory: `watch` run elsewhere looks exactly there and says why.
    /// Main: it looked at /run/edge-agent/agent.sock.
    @Test(.enabled(if: noSystemConfig, "an installed /etc/edge-agent/edge-agent.json5 is used instead"))
    func watchLooksForTheSocketRunWouldBindAndSaysWhy() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-watch")
        defer { DaemonPaths.removeTree(dir) }
        let tree = dir + "/tree", elsewhere = dir + "/elsewhere"
        for d in [tree + "/.build/debug", tree + "/config", tree + "/boards", elsewhere] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        }
        try FileManager.default.createSymbolicLink(atPath: tree + "/.build/debug/edge-agent",
                                                   withDestinationPath: DaemonPaths.agentBinary)
        let socket = dir + "/agent.sock"
        try "{ board: \"simulated\", service: { socket_path: \"\(socket)\" } }"
            .write(toFile: tree + "/config/edge-agent.json5", atomically: true, encoding: .utf8)
        let r = try ToolRun.run(["watch", "--count", "1"], in: elsewhere, executable: tree + "/.build/debug/edge-agent")
        #expect(r.status == 1, "\(r.err)")
        #expect(r.err.contains("edge-agent watch: socket \(socket) (service.socket_path of \(tree)/config/edge-agent.json5)"), "\(r.err)")
        #expect(r.err.contains("no agent socket at \(socket)"), "\(r.err)")
    }

    /// The installed layout (deploy/install.sh into a staging prefix): the
    /// installed binary finds the installed boards and scenarios from any
    /// directory. Main: the data went to PREFIX/usr/share, which the binary
    /// in PREFIX/usr/local/bin never looked at.
    @Test func installedBinaryFindsTheInstalledBoardsAndScenarios() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-install")
        defer { DaemonPaths.removeTree(dir) }
        let root = dir + "/root"
        let install = try ToolRun.run([DaemonPaths.packageRoot + "/deploy/install.sh", "--prefix", root,
                                       "--binary", DaemonPaths.agentBinary], in: dir, executable: "/bin/bash")
        try #require(install.status == 0, "install.sh: \(install.out)\(install.err)")
        #expect(FileManager.default.fileExists(atPath: root + "/usr/local/share/edge-agent/boards/simulated.json5"))
        #expect(FileManager.default.fileExists(atPath: root + "/usr/local/share/edge-agent/scenarios/desk-idle.json5"))
        #expect(FileManager.default.fileExists(atPath: root + "/usr/share/doc/edge-agent/config/README.md"))
        let config = dir + "/agent.json5"
        try "{ board: \"simulated\" }".write(toFile: config, atomically: true, encoding: .utf8)
        let probe = try ToolRun.run(["probe", "--config", config], in: dir, executable: root + "/usr/local/bin/edge-agent")
        #expect(probe.status == 0, "\(probe.err)")
        #expect(probe.out.contains("\(root)/usr/local/share/edge-agent/boards/simulated.json5"), "\(probe.out)")
        let sim = try ToolRun.run(["simulate", "lift-3m", "--duration", "0.05", "--config", config], in: dir,
                                  executable: root + "/usr/local/bin/edge-agent")
        #expect(sim.status == 0, "\(sim.err)")
    }

    /// Main: exit 1 and only "not found (looked in: …)".
    @Test func aMissingBoardSaysWhatToPassAndWhereItLooked() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-board")
        defer { DaemonPaths.removeTree(dir) }
        let config = dir + "/agent.json5"
        try "{ board: \"no-such-board\" }".write(toFile: config, atomically: true, encoding: .utf8)
        let (c, _, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "probe", "--config", config], console: c)
        #expect(rc == 2, "a configuration naming a board that is nowhere is bad use: \(err())")
        let first = BoardLocator.normalize(dir + "/../boards") + "/no-such-board.json5"
        #expect(err().contains("board profile 'no-such-board' not found (named by board in \(config); looked in: \(first), \(dir)/boards/no-such-board.json5, "), "\(err())")
        #expect(err().contains("\(repositoryRoot)/boards/no-such-board.json5"), "the build tree is searched: \(err())")
        #expect(err().contains("Pass --board NAME with one of the boards in \(repositoryRoot)/boards: "), "\(err())")
        #expect(err().contains("--config FILE"), "\(err())")
    }

    @Test func dataDirectoriesOfABuildTreeAndOfAnInstall() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-dirs")
        defer { DaemonPaths.removeTree(dir) }
        try FileManager.default.createDirectory(atPath: dir + "/repo/boards", withIntermediateDirectories: true)
        let built = dir + "/repo/.build/x86_64-unknown-linux-gnu/debug/edge-agent"
        #expect(BoardLocator.buildTreeRoot(of: built) == dir + "/repo")
        #expect(BoardLocator.dataDirectories(executablePaths: [built]).first == dir + "/repo")
        #expect(BoardLocator.configCandidates(environment: [:], executablePaths: [built])
                == [BoardLocator.systemConfigPath, "config/edge-agent.json5", dir + "/repo/config/edge-agent.json5"])
        #expect(BoardLocator.configCandidates(environment: ["EDGE_AGENT_CONFIG": "/x.json5"], executablePaths: [built]) == ["/x.json5"])
        // No boards/ at the root: not a repository of ours.
        #expect(BoardLocator.buildTreeRoot(of: dir + "/other/.build/debug/edge-agent") == nil)
        #expect(BoardLocator.dataDirectories(executablePaths: ["/opt/edge/bin/edge-agent"])
                == ["/opt/edge/share/edge-agent", "/usr/local/share/edge-agent", "/usr/share/edge-agent"])
        #expect(BoardLocator.normalize("./../boards") == "../boards")
        #expect(BoardLocator.normalize("/a/b/../../c/./d") == "/c/d")
    }
}

@Suite(.ownThread) struct HintsTests {
    /// Main: "Add yourself (`sudo usermod -aG root $USER` …)".
    @Test func permissionAdviceNeverSuggestsJoiningRoot() {
        let e = WatchError.connect(path: "/tmp/edge-agent.sock", errno: EACCES, socketGroup: "root")
        #expect(!e.description.contains("usermod -aG root"), "\(e)")
        #expect(e.description.contains("belongs to group root"), "\(e)")
        #expect(e.description.contains("socket_group"), "says how to configure a group: \(e)")
        #expect(e.description.contains("sudo usermod -aG edge-motion $USER"), "\(e)")
        let withConfig = WatchError.connect(path: "/tmp/edge-agent.sock", errno: EACCES, socketGroup: "root",
                                            configuredGroup: nil, configPath: "/srv/edge/config/edge-agent.json5")
        #expect(withConfig.description.contains("under service in /srv/edge/config/edge-agent.json5"), "\(withConfig)")
    }

    @Test func permissionAdviceNamesTheRealGroupAndHowToChooseOne() {
        let e = WatchError.connect(path: "/tmp/edge-agent.sock", errno: EACCES, socketGroup: "pi",
                                   configuredGroup: nil, configPath: "/opt/edge/config/edge-agent.json5")
        #expect(e.description.contains("members of group 'pi'"), "\(e)")
        #expect(e.description.contains("sudo usermod -aG pi $USER"), "\(e)")
        #expect(e.description.contains("set service.socket_group in /opt/edge/config/edge-agent.json5"), "\(e)")
    }

    /// Main: "published 0 samples to 0 client connection(s), …" and nothing more.
    @Test func runWithoutClientsSaysWhyNothingWasPublished() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-idle")
        defer { DaemonPaths.removeTree(dir) }
        let (c, out, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "run", "--config", repositoryRoot + "/config/edge-agent.json5",
                                   "--socket", dir + "/a.sock", "--duration", "0.2"], console: c)
        #expect(rc == 0, "\(err())")
        let line = out().split(separator: "\n").first { $0.hasPrefix("edge-agent: published ") }.map(String.init) ?? ""
        #expect(line.hasPrefix("edge-agent: published 0 samples"), "\(out())")
        #expect(line.contains("no client connected, so no stream was asked for and the sensors idled"), "\(line)")
    }

    /// Main: 0 of 26 directions for 90 s, then a failure that names no way out.
    @Test func calibrateMagOnTheSimulatedBoardPointsToScenario() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-cal")
        defer { DaemonPaths.removeTree(dir) }
        let (c, _, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "calibrate", "mag", "--fast", "--duration", "1",
                                   "--config", repositoryRoot + "/config/edge-agent.json5",
                                   "--output", dir + "/cal.json"], console: c)
        #expect(rc == 1)
        #expect(err().hasPrefix("note: the simulated board plays ../scenarios/desk-idle.json5"), "\(err())")
        #expect(err().contains("pass --scenario scenarios/calibrate-mag.json5"), "\(err())")
        #expect(err().hasSuffix("pass --scenario scenarios/calibrate-mag.json5 (add --fast to skip the waiting).\n"),
                "the failure repeats it: \(err())")
    }

    /// Main: no warning; the tail is the board held still, silently.
    @Test func simulateWarnsWhenTheDurationOutlastsTheScenario() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-simdur")
        defer { DaemonPaths.removeTree(dir) }
        let (c, _, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "simulate", repositoryRoot + "/scenarios/lift-3m.json5",
                                   "--duration", "12", "--csv", dir + "/x.csv",
                                   "--config", repositoryRoot + "/config/edge-agent.json5"], console: c)
        #expect(rc == 0, "\(err())")
        #expect(err().contains("warning: --duration 12.000 s goes beyond the end of \(repositoryRoot)/scenarios/lift-3m.json5 (duration_s 10.000 s): the last 2.000 s hold the board still in its final pose"), "\(err())")
    }
}

@Suite(.ownThread) struct ExitStatusTests {
    /// Main: exit 1 for a configuration error, 2 for an option error.
    @Test func aConfigurationErrorIsBadUseInEveryCommand() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-exit")
        defer { DaemonPaths.removeTree(dir) }
        let bad = dir + "/bad.json5"
        try "{ board: \"simulated\", loop: { imu_bach: 1 } }".write(toFile: bad, atomically: true, encoding: .utf8)
        for argv in [["probe", "--config", bad], ["read", "--config", bad], ["run", "--config", bad, "--duration", "0.1"],
                     ["watch", "--config", bad], ["calibrate", "gyro", "--config", bad],
                     ["simulate", "rest-flat", "--config", bad], ["record", dir + "/r.log", "--config", bad]] {
            let (c, _, err) = Console.capturing()
            let rc = EdgeAgentCLI.run(["edge-agent"] + argv, console: c)
            #expect(rc == 2, "\(argv): \(err())")
            #expect(err().contains("\(bad):1:"), "\(argv) names the file and line: \(err())")
        }
    }

    /// Ctrl-C ends `run` as it ends `watch`: a clean stop, exit 0, the same
    /// words. Main: "edge-agent: SIGINT, stopping" (watch: exit 130, silent).
    @Test(.timeLimit(.minutes(2)))
    func ctrlCStopsRunCleanlyInTheWordsWatchUses() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("ux-int")
        defer { DaemonPaths.removeTree(dir) }
        let notify = try FakeSystemdNotify(path: dir + "/notify.sock")
        let agent = AgentProcess(arguments: ["run", "--config", repositoryRoot + "/config/edge-agent.json5",
                                             "--socket", dir + "/a.sock", "--duration", "60", "--quiet"],
                                 environment: AgentProcess.environment(["NOTIFY_SOCKET": notify.path]),
                                 outputDirectory: dir)
        try agent.start()
        defer { agent.kill() }
        try #require(notify.waitFor("READY=1", DaemonDeadline(seconds: 45), while: { agent.isRunning }), "\(agent.transcript)")
        agent.signal(SIGINT)
        let exit = try #require(agent.waitForExit(DaemonDeadline(seconds: 30)), "still runs after SIGINT\n\(agent.transcript)")
        #expect(exit.status == 0 && !exit.bySignal, "\(exit)\n\(agent.transcript)")
        #expect(agent.stdout.contains("edge-agent run: SIGINT (Ctrl-C) received, stopping cleanly\n"), "\(agent.transcript)")
        #expect(EdgeAgentCLI.stopNote(command: "watch", signal: SIGINT) == "edge-agent watch: SIGINT (Ctrl-C) received, stopping cleanly")
    }

    /// Main: `--quiet` silently won.
    @Test func quietWithStatusIsRefused() {
        let (c, _, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "run", "--quiet", "--status", "1", "--duration", "0.1",
                                   "--socket", "/tmp/edge-ux-never-\(getpid()).sock"], console: c)
        #expect(rc == 2)
        #expect(err().contains("--quiet and --status S contradict each other"), "\(err())")
    }

    /// Main: the error went to stderr as text only.
    @Test func probeJSONReportsAFailureAsJSON() throws {
        let (c, out, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "probe", "--bus", "99", "--json"], console: c)
        #expect(rc == 1, "\(err())")
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(out().utf8)) as? [String: Any], "stdout: \(out())")
        #expect(obj["class"] as? String == "error")
        #expect(obj["command"] as? String == "probe")
        #expect((obj["message"] as? String)?.contains("/dev/i2c-99") == true, "\(obj)")
        #expect(obj["exitStatus"] as? Int == 1)
        // Bad usage too, with its own status.
        let (c2, out2, _) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "probe", "--bus", "999", "--json"], console: c2) == 2)
        let obj2 = try #require(try JSONSerialization.jsonObject(with: Data(out2().utf8)) as? [String: Any], "stdout: \(out2())")
        #expect(obj2["exitStatus"] as? Int == 2)
    }

    /// Main: "unknown command '--version'" / "unknown option '--version'".
    @Test func versionAtTopLevelAndPerCommand() {
        for argv in [["--version"], ["run", "--version"], ["watch", "--version"], ["probe", "--version"]] {
            let (c, out, err) = Console.capturing()
            #expect(EdgeAgentCLI.run(["edge-agent"] + argv, console: c) == 0, "\(argv): \(err())")
            #expect(out() == "edge-agent \(ServiceConfiguration().agentVersion) (client protocol \(EdgeProtocolInfo.version), built with Swift \(EdgeAgentCLI.swiftVersion))\n", "\(argv)")
        }
    }

    /// Main: "--count must be between 1 and 9223372036854775807".
    @Test func countSaysASensibleMaximum() {
        for cmd in ["watch", "read"] {
            let (c, _, err) = Console.capturing()
            #expect(EdgeAgentCLI.run(["edge-agent", cmd, "--count", "0"], console: c) == 2)
            #expect(err().contains("--count must be between 1 and 1000000, got 0"), "\(cmd): \(err())")
            let (h, out, _) = Console.capturing()
            _ = EdgeAgentCLI.run(["edge-agent", cmd, "--help"], console: h)
            #expect(out().contains("1 to 1000000"), "\(cmd) --help says the range")
        }
    }

    /// Every command's --help says what its exit statuses mean.
    @Test func everyHelpSaysTheExitStatuses() {
        for cmd in EdgeAgentCLI.commands {
            let (c, out, _) = Console.capturing()
            #expect(EdgeAgentCLI.run(["edge-agent", cmd.name, "--help"], console: c) == 0)
            #expect(out().contains("Exit status"), "\(cmd.name) --help")
            #expect(out().contains("2"), "\(cmd.name) --help")
        }
        let (c, out, _) = Console.capturing()
        _ = EdgeAgentCLI.run(["edge-agent", "--help"], console: c)
        #expect(out().contains(EdgeAgentCLI.exitStatusText))
    }
}
