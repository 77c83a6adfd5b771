import Foundation
import Testing
@testable import EdgeSim

/// Every library scenario's truth log is committed in scenarios/truth/; a
/// change to the world model shows up as a diff there. Regenerate with
/// SCENARIO_REGENERATE_GOLDENS=1 and explain the change in the commit.
@Suite("ScenarioGolden truth logs")
struct ScenarioGoldenTests {
    /// Every scenario in the library (the required ones and any others).
    static let names: [String] = {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: scenarioDirectory.path)) ?? []
        return Set(ScenarioLibraryTests.required + files.filter { $0.hasSuffix(".json5") }.map { String($0.dropLast(6)) }).sorted()
    }()

    /// The truth log of `world`: 2 rows a second, or one every 10 s for
    /// scenarios longer than two minutes, through one second past the end.
    static func truthLog(_ world: ScenarioWorld) -> String {
        let step: UInt64 = world.durationSeconds > 120 ? 10_000_000_000 : 500_000_000
        var text = ScenarioTruthCSV.header + "\n"
        var t: UInt64 = 0
        while t <= ns(world.durationSeconds + 1) {
            text += ScenarioTruthCSV.row(world, atNanoseconds: t) + "\n"
            t += step
        }
        return text
    }

    /// A truth log whose scenario is gone would be compared with nothing.
    @Test func everyTruthLogHasItsScenario() throws {
        let logs = try FileManager.default.contentsOfDirectory(atPath: scenarioDirectory.appendingPathComponent("truth").path)
            .filter { $0.hasSuffix(".csv") }
        #expect(!logs.isEmpty)
        for log in logs {
            #expect(Self.names.contains(String(log.dropLast(4))),
                    "scenarios/truth/\(log) has no scenario scenarios/\(log.dropLast(4)).json5: restore it or delete the truth log too")
        }
    }

    @Test("truth log matches scenarios/truth/<name>.csv", arguments: names)
    func golden(name: String) throws {
        let text = Self.truthLog(try world(name))
        let url = scenarioDirectory.appendingPathComponent("truth").appendingPathComponent(name + ".csv")
        if ProcessInfo.processInfo.environment["SCENARIO_REGENERATE_GOLDENS"] != nil {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        guard let expected = try? String(contentsOf: url, encoding: .utf8) else {
            Issue.record("""
                scenarios/truth/\(name).csv is missing or unreadable. Re-record it with \
                `SCENARIO_REGENERATE_GOLDENS=1 swift test --filter ScenarioGolden` (scenarios/README.md) \
                and say in the commit why it changed.
                """)
            return
        }
        if expected != text {
            let a = expected.split(separator: "\n", omittingEmptySubsequences: false)
            let b = text.split(separator: "\n", omittingEmptySubsequences: false)
            let i = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
            Issue.record("""
                scenarios/truth/\(name).csv differs at line \(i + 1):
                  committed: \(i < a.count ? String(a[i]) : "<end>")
                  now:       \(i < b.count ? String(b[i]) : "<end>")
                """)
        }
    }
}
