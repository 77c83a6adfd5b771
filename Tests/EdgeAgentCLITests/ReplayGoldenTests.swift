import Testing
import Foundation
@testable import EdgeAgentCLI

/// Every committed recording is replayed through the real drivers and
/// pipeline and diffed with its committed expected output (gpsd's habit).
/// Regenerate: `REPLAY_REGENERATE_GOLDENS=1 swift test --filter ReplayGolden`,
/// and explain each changed golden in the commit.
@Suite struct ReplayGoldenTests {
    static let directory = repositoryRoot + "/Tests/Fixtures/recordings"
    static let recordings: [String] = {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".log") || $0.hasSuffix(".csv") }.sorted()
    }()

    static let regenerateCommand = "`REPLAY_REGENERATE_GOLDENS=1 swift test --filter ReplayGolden`"

    @Test func thereAreRecordingsOfBothKinds() {
        #expect(Self.recordings.contains { $0.hasSuffix(".log") })
        #expect(Self.recordings.contains { $0.hasSuffix(".csv") })
    }

    /// A golden whose recording is gone would be compared with nothing: the
    /// pair is deleted together, or the recording is restored.
    @Test func everyGoldenHasItsRecording() throws {
        let goldens = try FileManager.default.contentsOfDirectory(atPath: Self.directory)
            .filter { $0.hasSuffix(".expected.jsonl") }
        #expect(!goldens.isEmpty)
        for g in goldens {
            let recording = String(g.dropLast(".expected.jsonl".count))
            #expect(Self.recordings.contains(recording),
                    "Tests/Fixtures/recordings/\(g) has no recording \(recording) beside it: restore the recording or delete the golden too")
        }
    }

    @Test(arguments: recordings)
    func replayMatchesGolden(_ name: String) throws {
        let (c, out, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "replay", Self.directory + "/" + name], console: c)
        #expect(rc == 0, "replay failed: \(err())")
        let golden = Self.directory + "/" + name + ".expected.jsonl"
        if ProcessInfo.processInfo.environment["REPLAY_REGENERATE_GOLDENS"] == "1" {
            try out().write(toFile: golden, atomically: true, encoding: .utf8)
            return
        }
        guard let expected = try? String(contentsOfFile: golden, encoding: .utf8) else {
            Issue.record("""
                Tests/Fixtures/recordings/\(name).expected.jsonl is missing or unreadable. Re-record it with \(Self.regenerateCommand) \
                (Tests/Fixtures/recordings/README.md) and say in the commit why it changed.
                """)
            return
        }
        let a = out().split(separator: "\n", omittingEmptySubsequences: false)
        let b = expected.split(separator: "\n", omittingEmptySubsequences: false)
        if let i = (0..<min(a.count, b.count)).first(where: { a[$0] != b[$0] }) {
            Issue.record("\(name): line \(i + 1) differs from the golden\n  got:      \(a[i])\n  expected: \(b[i])")
        } else {
            #expect(a.count == b.count, "\(name): \(a.count) lines, golden has \(b.count)")
        }
    }

    @Test func theTransactionGoldenSeesTheChipLossAndReturn() throws {
        let golden = try String(contentsOfFile: Self.directory + "/sim-maglost.log.expected.jsonl", encoding: .utf8)
        let events = golden.split(separator: "\n").filter { $0.contains("\"class\":\"connection\"") }
        #expect(events.count == 2)
        #expect(events.first?.contains("\"connected\":false") == true)
        #expect(events.last?.contains("\"connected\":true") == true)
        #expect(golden.contains("\"frame\":\"xArbitraryZVertical\""), "6D while the magnetometer is gone")
    }

    /// The other chips' recording: each chip's loss and return is in the
    /// golden, the BME280's humidity is published (the simulated world's
    /// relative humidity, a plausible percentage), and device motion falls
    /// back to 6D while the HMC5883L is gone.
    @Test func theOtherChipsGoldenSeesBothChipsLostAndBack() throws {
        let golden = try String(contentsOfFile: Self.directory + "/sim-other-chips.log.expected.jsonl", encoding: .utf8)
        let lines = golden.split(separator: "\n")
        for id in ["hmc5883l@0x1e", "bme280@0x76"] {
            let events = lines.filter { $0.contains("\"class\":\"connection\"") && $0.contains("\"\(id)\"") }
            #expect(events.count == 2, "\(id): \(events)")
            #expect(events.first?.contains("\"connected\":false") == true && events.last?.contains("\"connected\":true") == true)
        }
        let humidity = lines.filter { $0.contains("\"stream\":\"humidity\"") }
        #expect(humidity.count >= 20, "\(humidity.count) humidity samples")
        for h in humidity {
            let obj = try #require(JSONSerialization.jsonObject(with: Data(h.utf8)) as? [String: Any])
            let v = try #require(obj["relativeHumidity_pct"] as? Double, "\(h)")
            #expect(v > 0 && v < 100)
        }
        #expect(golden.contains("\"frame\":\"xArbitraryZVertical\""), "6D while the magnetometer is gone")
        #expect(lines.contains { $0.contains("\"stream\":\"magnetometer\"") })
    }

    @Test func aRecordingThatDoesNotMatchTheDriversIsAClearError() throws {
        // Change one recorded write (the MPU-6050's SMPLRT_DIV) so the drivers leave the recording.
        let log = try String(contentsOfFile: Self.directory + "/sim-maglost.log", encoding: .utf8)
        var lines = log.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let i = try #require(lines.firstIndex { $0.contains(" 0x68 w 19") })
        let parts = lines[i].split(separator: " ")
        lines[i] = parts.enumerated().map { $0.offset == 3 ? "19ff" : String($0.element) }.joined(separator: " ")
        let path = NSTemporaryDirectory() + "edge-replay-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (c, _, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "replay", path], console: c)
        #expect(rc == 1)
        #expect(err().contains(":\(i + 1):"), "names the recording's line: \(err())")
        #expect(err().contains("0x68 write [19"))
    }

    @Test func notARecordingIsAClearError() throws {
        let (c, _, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent", "replay", repositoryRoot + "/README.md"], console: c)
        #expect(rc == 1)
        #expect(err().contains("neither a transaction log"))
    }
}
