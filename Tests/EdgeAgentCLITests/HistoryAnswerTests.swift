// The agent's answer to `history` requests counts what its recorder holds
// but has not committed yet: the last flush interval always, and, while the
// disk is full, everything since. It used to read the file alone, so steps
// counted during a full disk were missing from every answer (and the last
// two seconds' from every answer) with no word of it. The sqlite3 shell is
// the second reader that says what the file itself holds.
import Testing
import Foundation
import EdgeProtocol
import EdgeValues
@testable import EdgeHistory
import EdgeSQLite
@testable import EdgeAgentCLI
#if canImport(Glibc)
import Glibc
import EdgeRuntime
import TestThreads
#endif

@Suite(.ownThread) struct HistoryAnswerTests {
    func tempPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("answer-\(UUID().uuidString).sqlite3").path
    }

    func sqlite3(_ path: String, _ sql: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        p.arguments = ["-readonly", path, sql]
        let out = Pipe(); p.standardOutput = out
        try p.run(); p.waitUntilExit()
        return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Totals since the run began at monotonic 1 ns, at `t` s.
    func ped(_ t: UInt64, _ steps: UInt32) -> Sample {
        .pedometer(PedometerSample(timestampNs: t * 1_000_000_000, startNs: 1, steps: steps, distance: Double(steps) * 0.75,
                                   floorsAscended: steps / 100, floorsDescended: 0, currentCadence: 1.8,
                                   currentPace: 0.7, averageActivePace: 0.7))
    }

    func steps(_ source: FitnessHistorySource) throws -> Int {
        guard case .success(.pedometer(let t)) = source.history(.pedometer, fromNs: 0, toNs: 1_000_000_000_000_000_000, maxRows: 500) else {
            throw HistoryAnswerFailure("no pedometer answer")
        }
        return t.steps
    }

    func activityStarts(_ source: FitnessHistorySource, from: Double = 0, to: Double = 1e9) throws -> [Double] {
        guard case .success(.activities(let a, _)) = source.history(.activity, fromNs: Int64(from * 1e9), toNs: Int64(to * 1e9),
                                                                    maxRows: 500) else {
            throw HistoryAnswerFailure("no activity answer")
        }
        return a.map(\.startS)
    }

    @Test func whileCommitsFailTheAnswerCountsWhatWaitsInMemory() throws {
        let path = tempPath()
        defer { unlink(path); unlink(path + "-wal"); unlink(path + "-shm") }
        let h = try FitnessHistory(path: path, retentionSeconds: 86400)
        let r = HistoryRecorder(history: h, nowUnixNs: { 1 }, clockOffsetNs: { 0 })
        let source = try FitnessHistorySource(path: path, retentionSeconds: 86400, recorder: r)
        defer { source.close() }

        r.offer(ped(10, 100))
        r.offer(.activity(ActivitySample(timestampNs: 10_000_000_000, startNs: 5_000_000_000, flags: .walking, confidence: .high)))
        #expect(try steps(source) == 100, "not flushed yet: the open interval is in the answer")
        #expect(r.flush())
        #expect(try sqlite3(path, "SELECT sum(steps) FROM pedometer") == "100")
        #expect(try steps(source) == 100, "flushed: counted once")

        // Commits fail from here on. (Another writer holds the file's write
        // lock; to the recorder that is what a full disk is: a commit that
        // fails and is retried, `aFullDiskIsReportedOnce…` in EdgeHistoryTests.)
        try h.db.execute("PRAGMA busy_timeout=10")
        let other = try SQLiteConnection(path: path)
        try other.execute("PRAGMA busy_timeout=0; BEGIN IMMEDIATE")
        for k in UInt64(1)...300 {
            r.offer(ped(10 + k, 100 + UInt32(k) * 2))
            if k % 50 == 0 {
                r.offer(.activity(ActivitySample(timestampNs: (10 + k) * 1_000_000_000, startNs: (10 + k) * 1_000_000_000,
                                                 flags: k % 100 == 0 ? .walking : .stationary, confidence: .high)))
            }
        }
        #expect(!r.flush())
        #expect(r.health.error != nil)
        #expect(try sqlite3(path, "SELECT sum(steps) FROM pedometer") == "100", "the file holds only what was committed")
        #expect(try steps(source) == 700, "the answer has every step: 100 + 300 × 2")
        #expect(try activityStarts(source) == [5, 60, 110, 160, 210, 260, 310])
        // A range that begins inside an uncommitted activity starts with it.
        #expect(try activityStarts(source, from: 200, to: 270) == [160, 210, 260])

        // Commits work again: the records go to the file, and are still counted once.
        try other.execute("COMMIT")
        other.close()
        #expect(r.flush())
        #expect(try sqlite3(path, "SELECT sum(steps) FROM pedometer") == "700")
        #expect(try steps(source) == 700)
        #expect(try activityStarts(source) == [5, 60, 110, 160, 210, 260, 310])
    }

    /// Answers during commits: each sees every record exactly once (the
    /// commit and the answer exclude each other). A race, so this can only
    /// miss a fault, never invent one.
    @Test func anAnswerDuringACommitCountsEveryRecordOnce() throws {
        let path = tempPath()
        defer { unlink(path); unlink(path + "-wal"); unlink(path + "-shm") }
        let r = HistoryRecorder(history: try FitnessHistory(path: path, retentionSeconds: 86400),
                                nowUnixNs: { 1 }, clockOffsetNs: { 0 })
        let source = try FitnessHistorySource(path: path, retentionSeconds: 86400, recorder: r)
        defer { source.close() }
        var wrong: [Int] = []
        for round in UInt64(0)..<20 {
            for k in UInt64(1)...20 { r.offer(ped(round * 100 + k, UInt32(round * 20 + k))) }
            let expected = Int(round * 20 + 20)
            let done = DispatchSemaphore(value: 0)
            Thread { r.flush(); done.signal() }.start()
            for _ in 0..<20 {
                let n = try steps(source)
                if n != expected { wrong.append(n) }
            }
            done.wait()
        }
        #expect(wrong.isEmpty, "answers that missed or double-counted records: \(wrong.prefix(10))")
        #expect(try sqlite3(path, "SELECT sum(steps) FROM pedometer") == "400")
    }
}

struct HistoryAnswerFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
