// The real edge-mqtt executable's command line: help, a bad configuration
// (the agent's error quality: file, line, key path, did-you-mean, exit 2),
// a password never printed, status with no bridge. No broker, no agent.
import Testing
import Foundation
@testable import EdgeMQTT
import TestThreads

@Suite(.ownThread) struct CommandLineTests {
    func run(_ args: [String], in dir: String) throws -> (status: Int32, out: String, err: String) {
        try runTool(Paths.bridgeBinary, args, in: dir)
    }

    @Test func helpListsTheCommandsAndEachHasItsOwn() throws {
        let dir = try Paths.temporaryDirectory("cli")
        defer { Paths.remove(dir) }
        let h = try run(["--help"], in: dir)
        #expect(h.status == 0)
        for c in ["run", "check", "status"] { #expect(h.out.contains("  \(c) "), "\(h.out)") }
        let s = try run(["status", "--help"], in: dir)
        #expect(s.status == 0 && s.out.contains("Usage: edge-mqtt status"))
        let typo = try run(["chek"], in: dir)
        #expect(typo.status == 2 && typo.err.contains("did you mean 'check'?"), "\(typo.err)")
    }

    /// From another directory, with no --config and no variable, `run`
    /// finds the configuration the way `edge-agent run` finds its own (the
    /// build tree the executable belongs to, when nothing is installed) and
    /// the agent's socket the way the agent's clients do, and says which
    /// and why (issue 16 item 11; on c7b77b9 it looked only for
    /// ./config/edge-mqtt.json5 and exited 2).
    @Test func runFindsItsConfigurationAndTheAgentsSocketFromAnotherDirectory() throws {
        let dir = try Paths.temporaryDirectory("find")
        defer { Paths.remove(dir) }
        let installed = FileManager.default.fileExists(atPath: "/etc/edge-mqtt/edge-mqtt.json5")
        let expectedConfig = installed ? "/etc/edge-mqtt/edge-mqtt.json5 (installed)"
                                       : Paths.root + "/config/edge-mqtt.json5 (the data directory of this executable, \(Paths.root))"
        let agentInstalled = FileManager.default.fileExists(atPath: "/etc/edge-agent/edge-agent.json5")
        let expectedAgent = agentInstalled ? "(service.socket_path of /etc/edge-agent/edge-agent.json5)"
                                           : "(service.socket_path of \(Paths.root)/config/edge-agent.json5)"
        for (env, agentLine) in [([String: String](), expectedAgent),
                                 (["EDGE_AGENT_SOCKET": dir + "/agent.sock"], "agent socket \(dir)/agent.sock ($EDGE_AGENT_SOCKET)")] {
            let c = Child("find-\(env.count)", executable: Paths.bridgeBinary,
                          arguments: ["run", "--status-socket", dir + "/status-\(env.count).sock", "--node", "findtest"],
                          directory: dir, environment: env)
            c.process.currentDirectoryURL = URL(fileURLWithPath: dir)
            try c.start()
            defer { c.stop() }
            #expect(waitUntil(20) { c.stderr.contains("agent socket") || !c.isRunning }, "\(c.transcript)")
            #expect(c.stderr.contains("config " + expectedConfig), "\(c.transcript)")
            #expect(c.stderr.contains(agentLine), "\(c.transcript)")
            c.signal(SIGTERM)
            _ = c.waitForExit(10)
        }
    }

    @Test func aBadConfigurationNamesFileLineAndKeyAndExits2() throws {
        let dir = try Paths.temporaryDirectory("cli")
        defer { Paths.remove(dir) }
        let path = dir + "/bad.json5"
        try Paths.write("""
            {
              broker: {
                host: "127.0.0.1",
                keepalive: 30,
              },
            }
            """, to: path)
        let r = try run(["run", "--config", path], in: dir)
        #expect(r.status == 2)
        #expect(r.err.contains(path + ":4:16: broker.keepalive: unknown key 'keepalive'"), "\(r.err)")
        #expect(r.err.contains("    keepalive: 30,\n               ^"), "the line, with a caret under the key: \(r.err)")
        #expect(r.err.contains("did you mean 'keepalive_s'?"), "\(r.err)")
    }

    @Test func aPasswordInTheConfigurationIsRefusedAndNotPrinted() throws {
        let dir = try Paths.temporaryDirectory("cli")
        defer { Paths.remove(dir) }
        let path = dir + "/pw.json5"
        try Paths.write(#"{ broker: { username: "edge", password: "s3cr3t-in-config" } }"#, to: path)
        let r = try run(["check", "--config", path], in: dir)
        #expect(r.status == 2)
        #expect(r.err.contains("password_file") && !r.err.contains("s3cr3t-in-config"), "\(r.err)")
    }

    /// A CA file the bridge cannot read is named, with why, and `check`
    /// exits 1. The failed set-up used to free the libmosquitto client twice:
    /// a plain build often went on regardless (with a corrupt heap), the
    /// AddressSanitizer run's edge-mqtt stops at it; SessionSetupTests, which
    /// fails many set-ups in one process, aborted in a plain build too.
    @Test func checkWithAnUnreadableCAFileSaysWhichAndExits1() throws {
        let dir = try Paths.temporaryDirectory("cli")
        defer { Paths.remove(dir) }
        let path = dir + "/tls.json5"
        let ca = dir + "/missing-ca.pem"
        try Paths.write("{ broker: { host: \"127.0.0.1\", port: 8883, tls: { ca_file: \"\(ca)\" } } }", to: path)
        let r = try run(["check", "--config", path, "--timeout", "1"], in: dir)
        #expect(r.status == 1, "\(r.out)\(r.err)")
        #expect((r.out + r.err).contains("broker.tls.ca_file \(ca): No such file or directory (errno 2)"), "\(r.out)\(r.err)")
    }

    @Test func statusWithNoBridgeSaysSoAndExits1() throws {
        let dir = try Paths.temporaryDirectory("cli")
        defer { Paths.remove(dir) }
        let r = try run(["status", "--socket", dir + "/none.sock"], in: dir)
        #expect(r.status == 1)
        #expect(r.err.contains("no bridge answers on \(dir)/none.sock") && r.err.contains("is edge-mqtt running?"), "\(r.err)")
    }

    /// deploy/install.sh --mqtt into a staging prefix: the unit's ExecStart
    /// names the installed binary and configuration, the configuration
    /// loads, a second run changes nothing.
    @Test func installShInstallsTheBridgeWhereItsUnitLooks() throws {
        let dir = try Paths.temporaryDirectory("install")
        defer { Paths.remove(dir) }
        let root = dir + "/root"
        let args = [Paths.root + "/deploy/install.sh", "--prefix", root, "--binary", Paths.agentBinary, "--mqtt", Paths.bridgeBinary]
        let first = try runTool("/bin/bash", args, in: dir)
        try #require(first.status == 0, "\(first.out)\(first.err)")
        let unit = Paths.read(root + "/etc/systemd/system/edge-mqtt.service")
        let exec = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let words = exec.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        #expect(words.count == 4 && words[1] == "run" && words[2] == "--config", "\(exec)")
        #expect(FileManager.default.isExecutableFile(atPath: root + words[0]), "\(words[0]) installed")
        let config = try BridgeConfig.load(from: root + words[3])
        #expect(config.agent.socketPath == "/run/edge-agent/agent.sock" && config.statusSocket == "/run/edge-mqtt/status.sock")
        #expect(FileManager.default.fileExists(atPath: root + "/usr/share/doc/edge-mqtt/mqtt.md"))
        let again = try runTool("/bin/bash", args, in: dir)
        #expect(again.status == 0 && again.out.contains("everything was already up to date"), "\(again.out)")
    }
}
