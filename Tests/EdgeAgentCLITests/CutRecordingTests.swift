import Testing
import Foundation
@testable import EdgeAgentCLI

/// A recording cut off part-way through a line (what a power loss or a full
/// disk leaves) replays up to its last complete line, with a warning naming
/// the line and the time, instead of replaying nothing. The independent
/// check: a replay is causal, so the cut recording's output is exactly the
/// beginning of the whole recording's output (computed here, not a golden).
@Suite struct CutRecordingTests {
    static let directory = repositoryRoot + "/Tests/Fixtures/recordings"

    func run(_ args: [String]) -> (Int32, String, String) {
        let (c, out, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent"] + args, console: c)
        return (rc, out(), err())
    }

    /// `bytes` cut at the middle of the line that `fraction` of the file falls in;
    /// the file's path and the 1-based number of that line.
    func cut(_ bytes: [UInt8], at fraction: Double, suffix: String) throws -> (path: String, line: Int) {
        var offset = Int(Double(bytes.count) * fraction)
        while bytes[offset] != 0x0A { offset += 1 }          // the end of that line
        var start = offset - 1
        while bytes[start] != 0x0A { start -= 1 }            // its start
        let mid = (start + 1 + offset) / 2
        let path = NSTemporaryDirectory() + "edge-cut-\(UUID().uuidString)." + suffix
        try Data(bytes[..<mid]).write(to: URL(fileURLWithPath: path))
        let line = bytes[..<mid].filter { $0 == 0x0A }.count + 1
        return (path, line)
    }

    func lines(_ s: String) -> [Substring] { s.split(separator: "\n") }

    @Test(arguments: [0.3, 0.55, 0.8])
    func aCutTransactionLogReplaysItsCompleteLines(_ fraction: Double) throws {
        let file = Self.directory + "/sim-maglost.log"
        let (rcFull, full, _) = run(["replay", file])
        #expect(rcFull == 0)
        let (path, line) = try cut(Array(try Data(contentsOf: URL(fileURLWithPath: file))), at: fraction, suffix: "log")
        let (rc, out, err) = run(["replay", path])
        #expect(rc == 0, "\(err)")
        let got = lines(out), all = lines(full)
        #expect(got.count > 50, "samples before the cut are replayed")
        #expect(got.count < all.count)
        #expect(Array(all.prefix(got.count)) == got, "the cut recording replays as the beginning of the whole one")
        #expect(err.contains("warning") && err.contains("\(path):\(line):") && err.contains("cut off"), "\(err)")
        // the time where it ends: the last complete record's
        let lastRecord = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").dropLast().last!
        #expect(err.contains("monotonic \(lastRecord.split(separator: " ")[0]) ns"), "\(err)")
    }

    @Test func aTransactionLogCutInItsHeaderIsAnErrorNamingTheLine() throws {
        let file = Self.directory + "/sim-maglost.log"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let all = text.split(separator: "\n", omittingEmptySubsequences: false)
        let i = try #require(all.firstIndex { $0.hasPrefix("@board-json") })
        let path = NSTemporaryDirectory() + "edge-cut-\(UUID().uuidString).log"
        try (all[..<i].joined(separator: "\n") + "\n" + all[i].prefix(all[i].count / 2)).write(toFile: path, atomically: true, encoding: .utf8)
        let (rc, out, err) = run(["replay", path])
        #expect(rc == 1)
        #expect(out.isEmpty)
        #expect(err.contains("\(path):\(i + 1):") && err.contains("header"), "\(err)")
    }

    @Test(arguments: [0.4, 0.9])
    func aCutSampleCSVReplaysItsCompleteRows(_ fraction: Double) throws {
        let file = Self.directory + "/sim-maglost.csv"
        let (_, full, _) = run(["replay", file])
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        let (path, line) = try cut(bytes, at: fraction, suffix: "csv")
        let (rc, out, err) = run(["replay", path])
        #expect(rc == 0, "\(err)")
        let got = lines(out)
        #expect(got.count > 20)
        #expect(Array(lines(full).prefix(got.count)) == got)
        #expect(err.contains("\(path):\(line):") && err.contains("\(line - 2) complete rows"), "\(err)")
    }

    @Test func fuseFusesTheCompleteRowsOfACutFile() throws {
        // both layouts: fuse's own (t,gx,...) and record --csv's
        for file in [repositoryRoot + "/Tests/Fixtures/fusion/synthetic_turns.csv", Self.directory + "/sim-maglost.csv"] {
            let whole = NSTemporaryDirectory() + "edge-fuse-\(UUID().uuidString).csv"
            #expect(run(["fuse", "--input", file, "--output", whole]).0 == 0)
            let (path, line) = try cut(Array(try Data(contentsOf: URL(fileURLWithPath: file))), at: 0.6, suffix: "csv")
            let output = path + ".fused.csv"
            let (rc, _, err) = run(["fuse", "--input", path, "--output", output])
            #expect(rc == 0, "\(err)")
            #expect(err.contains("warning") && err.contains("\(path):\(line):") && err.contains("cut off"), "\(err)")
            let got = lines(try String(contentsOfFile: output, encoding: .utf8))
            let all = lines(try String(contentsOfFile: whole, encoding: .utf8))
            #expect(got.count == line - 1, "the header and every complete row")
            // fuse sizes its filter from the mean interval of the whole input,
            // so the values may differ in the last digits: compare the rows' times
            let t = { (rows: [Substring]) in rows.map { $0.prefix { $0 != "," } } }
            #expect(t(Array(all.prefix(got.count))) == t(got))
        }
    }
}
