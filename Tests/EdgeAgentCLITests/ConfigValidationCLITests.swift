import Testing
import Foundation
@testable import EdgeAgentCLI

/// The configuration checks seen from the command line: a bad value is a
/// clear error and a non-zero exit, never a crash further down.
@Suite struct ConfigValidationCLITests {
    static func tempPath(_ name: String) -> String {
        NSTemporaryDirectory() + "edge-cfg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-" + name
    }

    /// A recording embeds the configuration text; on today's main a
    /// `reprobe_interval_s` of 1e11 in it trapped (SIGILL) in
    /// SensorHub.start() when replayed. Replay decodes it with the loader's
    /// checks, so it is an error naming the header record and the key.
    @Test func replayRejectsAnEmbeddedConfigOutOfRange() throws {
        let log = try String(contentsOfFile: repositoryRoot + "/Tests/Fixtures/recordings/sim-maglost.log", encoding: .utf8)
        #expect(log.contains("reprobe_interval_s: 0.25"))
        let path = Self.tempPath("reprobe.log")
        try log.replacingOccurrences(of: "reprobe_interval_s: 0.25", with: "reprobe_interval_s: 1e11")
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (c, _, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "replay", path], console: c)
        #expect(rc == 1)
        #expect(err().contains("@config-json"), "\(err())")
        #expect(err().contains("faults.reprobe_interval_s"), "\(err())")
        #expect(err().contains("0.01 to 3600"), "\(err())")
    }

    /// A `clients` entry naming a user the system does not know: the error
    /// names the file, the line and the entry (on today's main only
    /// "clients: unknown user ...").
    @Test func runNamesTheFileAndLineOfAnUnknownClientUser() throws {
        let config = Self.tempPath("agent.json5")
        try """
        {
          board: "\(repositoryRoot)/boards/simulated.json5",
          clients: [
            { uid: 0, entitlements: ["motion"] },
            { user: "no-such-user-7f3a", entitlements: ["motion"] },
          ],
        }
        """.write(toFile: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let (c, out, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "run", "--config", config, "--socket", Self.tempPath("s.sock"),
                                   "--duration", "0.1", "--quiet"], console: c)
        #expect(rc == 2)   // a configuration error is bad use (README: exit status 2)
        #expect(err().contains("\(config):5:13: clients[1].user: "), "\(err())")
        #expect(err().contains("no user named 'no-such-user-7f3a'"), "\(err())")
        #expect(!out().contains("edge-agent: config "), "refused before the startup line: \(out())")
    }
}
