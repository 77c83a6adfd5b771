// The real edge-mqtt executable's command line: help, a bad configuration
// (the agent's error quality: file, line, key path, did-you-mean, exit 2),
// a password never printed, status with no bridge. No broker, no agent.
import Testing
import Foundation
@testable import EdgeMQTT

@Suite struct CommandLineTests {
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
        #expect(FileManager.default.fileExists(atPath: root + "/usr/share/doc/edge-agent/mqtt.md"))
        let again = try runTool("/bin/bash", args, in: dir)
        #expect(again.status == 0 && again.out.contains("everything was already up to date"), "\(again.out)")
    }
}
