// Issue 16, item 10: from outside the repository `--board simulated-dive`
// (or `simulated-dive.json5`, or `boards/…`) failed, though the README says
// boards are found by name, and the error's own hint failed too. The tools
// run here as processes from a temporary directory.
import Testing
import Foundation
import EdgeConfig
@testable import EdgeAgentCLI
import TestThreads

@Suite(.ownThread) struct BoardsByNameTests {
    /// c7b77b9: exit 2, "board profile 'simulated-dive' not found" for each spelling.
    @Test(.enabled(if: noSystemConfig, "an installed /etc/edge-agent/edge-agent.json5 is used instead"),
          arguments: ["simulated-dive", "simulated-dive.json5", "boards/simulated-dive.json5"])
    func everySpellingOfABoardWorksFromAnotherDirectory(_ spelling: String) throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("byname")
        defer { DaemonPaths.removeTree(dir) }
        let r = try ToolRun.run(["probe", "--board", spelling], in: dir)
        #expect(r.status == 0, "--board \(spelling): \(r.err)")
        #expect(r.out.contains(DaemonPaths.packageRoot + "/boards/simulated-dive.json5"), "\(r.out)")
        #expect(r.out.contains("All configured chips are present."), "\(r.out)")
    }

    /// A configuration elsewhere naming the board by file name or by
    /// `boards/…`: c7b77b9 looked only next to the configuration.
    @Test func aConfigurationElsewhereNamesTheBoardAnyWay() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("byname-cfg")
        defer { DaemonPaths.removeTree(dir) }
        for spelling in ["simulated-dive.json5", "boards/simulated-dive.json5"] {
            let config = dir + "/agent.json5"
            try "{ board: \"\(spelling)\" }".write(toFile: config, atomically: true, encoding: .utf8)
            let r = try ToolRun.run(["probe", "--config", config], in: dir)
            #expect(r.status == 0, "board: \(spelling): \(r.err)")
            #expect(r.out.contains(DaemonPaths.packageRoot + "/boards/simulated-dive.json5"), "\(r.out)")
        }
    }

    /// c7b77b9's hint: "Pass --board FILE (e.g. boards/simulated.json5 of
    /// the repository)", which failed from another directory. Now it lists
    /// the boards and names one; the command it names works.
    @Test(.enabled(if: noSystemConfig, "an installed /etc/edge-agent/edge-agent.json5 is used instead"))
    func theHintOfAMissingBoardNamesOneThatWorks() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("byname-hint")
        defer { DaemonPaths.removeTree(dir) }
        let r = try ToolRun.run(["probe", "--board", "no-such-board"], in: dir)
        #expect(r.status == 2, "\(r.err)")
        let boards = try FileManager.default.contentsOfDirectory(atPath: DaemonPaths.packageRoot + "/boards")
            .filter { $0.hasSuffix(".json5") }.map { String($0.dropLast(6)) }.sorted()
        #expect(r.err.contains("Pass --board NAME with one of the boards in \(DaemonPaths.packageRoot)/boards: \(boards.joined(separator: ", "))"), "\(r.err)")
        let marker = "(e.g. --board "
        let start = try #require(r.err.range(of: marker), "\(r.err)").upperBound
        let suggested = String(r.err[start...].prefix { $0 != ")" })
        #expect(suggested == "simulated")
        let again = try ToolRun.run(["probe", "--board", suggested], in: dir)
        #expect(again.status == 0, "the hint's own suggestion: \(again.err)")
    }
}
