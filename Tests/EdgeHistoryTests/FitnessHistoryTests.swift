import Testing
import Foundation
import EdgeProtocol
import EdgeValues
@testable import EdgeHistory
import EdgeSQLite
import TestThreads

@Suite(.ownThread) struct FitnessHistoryTests {
    func tempPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("hist-\(UUID().uuidString).sqlite3").path
    }
    let s = 1_000_000_000 as Int64

    /// The sqlite3 shell, a second reader of the file.
    func sqlite3(_ path: String, _ sql: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        p.arguments = [path, sql]
        let out = Pipe(); p.standardOutput = out
        try p.run(); p.waitUntilExit()
        return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func rangesSumWhatWasAddedAndSurviveReopening() throws {
        let path = tempPath()
        var h = try FitnessHistory(path: path, retentionSeconds: 7 * 86400)
        var t = PedometerTotals(); t.steps = 10; t.distanceMeters = 7; t.floorsAscended = 1; t.activeSeconds = 6
        var t2 = t; t2.steps = 5; t2.floorsAscended = 0; t2.floorsDescended = 2
        let base: Int64 = 1_800_000_000 * s
        try h.commit(pedometer: [.init(endUnixNs: base + 2 * s, totals: t), .init(endUnixNs: base + 60 * s, totals: t2)],
                     activities: [.init(startUnixNs: base, flags: .walking, confidence: .high),
                                  .init(startUnixNs: base + 70 * s, flags: [.stationary, .automotive], confidence: .low)],
                     events: [.init(unixNs: base + 1 * s, type: .resume)], nowUnixNs: base + 100 * s)
        h.close()
        h = try FitnessHistory(path: path, retentionSeconds: 7 * 86400)   // an agent restart
        #expect(try h.isIntact())
        #expect(try h.pedometer(fromUnixNs: base, toUnixNs: base + 100 * s).steps == 15)
        let first = try h.pedometer(fromUnixNs: base, toUnixNs: base + 10 * s)
        #expect(first.steps == 10 && first.floorsAscended == 1 && first.distanceMeters == 7 && first.averageActivePace == 6.0 / 7)
        #expect(try h.pedometer(fromUnixNs: base + 10 * s, toUnixNs: base + 100 * s).floorsDescended == 2)
        // the activity going on at `from`, then those after
        let acts = try h.activities(fromUnixNs: base + 30 * s, toUnixNs: base + 100 * s)
        #expect(acts.map(\.flags) == [.walking, [.stationary, .automotive]])
        #expect(try h.events(fromUnixNs: base, toUnixNs: base + 5 * s).map(\.type) == [.resume])
        // a second reader sees the same rows
        #expect(try sqlite3(path, "SELECT sum(steps) FROM pedometer") == "15")
        #expect(try sqlite3(path, "PRAGMA journal_mode") == "wal")
    }

    @Test func theFilesAreReadableOnlyByTheAgentsUser() throws {
        let path = tempPath()
        let old = umask(0o022); defer { umask(old) }
        let h = try FitnessHistory(path: path, retentionSeconds: 86400)
        try h.commit(pedometer: [], activities: [.init(startUnixNs: 1, flags: .stationary, confidence: .high)], events: [],
                     nowUnixNs: 2)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            var st = stat()
            #expect(stat(path + suffix, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o600, "\(path + suffix): \(String(st.st_mode & 0o777, radix: 8))")
        }
    }

    @Test func retentionDeletesOldRecordsButKeepsTheActivityInEffect() throws {
        let h = try FitnessHistory(path: tempPath(), retentionSeconds: 3600)
        var t = PedometerTotals(); t.steps = 3
        let now: Int64 = 1_800_000_000 * s
        try h.commit(pedometer: [.init(endUnixNs: now - 7200 * s, totals: t), .init(endUnixNs: now - 60 * s, totals: t)],
                     activities: [.init(startUnixNs: now - 9000 * s, flags: .walking, confidence: .high),
                                  .init(startUnixNs: now - 8000 * s, flags: .stationary, confidence: .high)],
                     events: [.init(unixNs: now - 7200 * s, type: .pause)], nowUnixNs: now)
        #expect(try h.pedometer(fromUnixNs: 0, toUnixNs: now).steps == 3)
        #expect(try h.events(fromUnixNs: 0, toUnixNs: now).isEmpty)
        // the stationary that began 8000 s ago is still what was going on an hour ago
        #expect(try h.activities(fromUnixNs: now - 3600 * s, toUnixNs: now).map(\.flags) == [.stationary])
    }

    @Test func aFileThatIsNotADatabaseIsAClearError() throws {
        let path = tempPath()
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try FitnessHistory(path: path, retentionSeconds: 60)
        } throws: { e in "\(e)".contains(path) && "\(e)".contains("not a history database") }
        #expect(throws: HistoryError.self) { _ = try FitnessHistory(path: "/nonexistent/dir/h.sqlite3", retentionSeconds: 60) }
    }

    @Test func theRecorderStoresWhatEachIntervalAdded() throws {
        let path = tempPath()
        // samples carry CLOCK_MONOTONIC ns; the history stores CLOCK_REALTIME ns
        let offset = HistoryRecorder.realtimeNs() - HistoryRecorder.monotonicNs()
        let r = HistoryRecorder(history: try FitnessHistory(path: path, retentionSeconds: 86400), clockOffsetNs: { offset })
        func ped(_ t: UInt64, _ steps: UInt32, start: UInt64 = 1) -> Sample {
            .pedometer(PedometerSample(timestampNs: t, startNs: start, steps: steps, distance: Double(steps) * 0.7,
                                       floorsAscended: steps / 20, floorsDescended: 0, currentCadence: 1.8,
                                       currentPace: 0.8, averageActivePace: 0.8))
        }
        r.offer(ped(10, 4)); r.offer(ped(11, 9))
        r.offer(.activity(ActivitySample(timestampNs: 11, startNs: 5, flags: .walking, confidence: .high)))
        #expect(r.flush())
        r.offer(ped(20, 25))
        r.offer(.pedometerEvent(PedometerEventSample(timestampNs: 21, type: .pause)))
        #expect(r.flush())
        // the agent restarts: totals begin again from zero
        r.offer(ped(30, 6, start: 29))
        #expect(r.flush())
        let h = try FitnessHistory(path: path, retentionSeconds: 86400)
        let all = try h.pedometer(fromUnixNs: 0, toUnixNs: Int64.max)
        #expect(all.steps == 31 && all.floorsAscended == 1)
        #expect(abs(all.distanceMeters - 31 * 0.7) < 1e-9)
        #expect(try sqlite3(path, "SELECT count(*) FROM pedometer") == "3")
        let acts = try h.activities(fromUnixNs: 0, toUnixNs: Int64.max)
        #expect(acts.count == 1)
        #expect(acts[0].startUnixNs == offset + 5)
        #expect(r.health.commits == 3 && r.health.error == nil)
    }

    /// A Pi without a battery clock: the agent starts in 1970 (or at the
    /// last saved time) and NTP sets the clock an hour in. Records made
    /// after that carry the real date; retention keeps them.
    @Test func recordsMadeAfterTheClockIsSetCarryTheRealDate() throws {
        let path = tempPath()
        let h = try FitnessHistory(path: path, retentionSeconds: 86400)
        let boot: Int64 = 3_600_000_000_000              // the clock at boot: 1970-01-01 01:00
        let real: Int64 = 1_796_000_000_000_000_000      // 2026-12 (Unix ns)
        let offset = Locked(boot)
        let now = Locked(boot)
        let r = HistoryRecorder(history: h, nowUnixNs: { now.withLock { $0 } }, clockOffsetNs: { offset.withLock { $0 } })
        r.offer(.activity(ActivitySample(timestampNs: 1_000, startNs: 1_000, flags: .walking, confidence: .high)))
        #expect(r.flush())
        // NTP sets the clock
        offset.withLock { $0 = real }; now.withLock { $0 = real + 2_000_000_000 }
        r.offer(.activity(ActivitySample(timestampNs: 2_000_000_000, startNs: 2_000_000_000, flags: .stationary, confidence: .high)))
        #expect(r.flush())
        // (a range's answer begins with the activity in effect at its start: the one of 1970)
        let recent = try h.activities(fromUnixNs: real, toUnixNs: real + 3_000_000_000)
        #expect(recent.map(\.startUnixNs) == [boot + 1_000, real + 2_000_000_000])
        #expect(recent.last?.flags == .stationary)
        // the new record is in the file with the real date (a second reader: the sqlite3 CLI)
        #expect(try sqlite3(path, "SELECT count(*) FROM activity WHERE start_ns = \(real + 2_000_000_000)") == "1")
        // with a clock fixed at start, it would have been stamped 1970 + 2 s
        #expect(try sqlite3(path, "SELECT count(*) FROM activity WHERE start_ns < \(real)") == "1")
    }

    /// The disk fills (the file may not grow: SQLITE_FULL), then has room
    /// again: the failure is reported once, the records wait in memory,
    /// and all of them are in the file afterwards.
    @Test func aFullDiskIsReportedOnceAndNothingIsLostWhenThereIsRoomAgain() throws {
        let path = tempPath()
        let h = try FitnessHistory(path: path, retentionSeconds: 86400)
        let changes = Locked<[HistoryRecorder.HealthChange]>([])
        let r = HistoryRecorder(history: h, nowUnixNs: { 1 }, clockOffsetNs: { 0 })
        r.onHealthChange = { c in changes.withLock { $0.append(c) } }
        func activities(_ range: Range<UInt64>) {
            for i in range {
                r.offer(.activity(ActivitySample(timestampNs: i, startNs: i, flags: i % 2 == 0 ? .walking : .stationary, confidence: .high)))
            }
        }
        activities(1..<2)
        #expect(r.flush())
        let pages = try sqlite3(path, "PRAGMA page_count")
        try h.db.execute("PRAGMA max_page_count=\(pages)")
        activities(2..<3002)
        #expect(!r.flush())
        activities(3002..<3004)
        #expect(!r.flush())
        let failing = changes.withLock { $0 }
        #expect(failing.count == 1, "reported once: \(failing)")
        guard case .failing(let e, let pending)? = failing.first else { Issue.record("no failure reported"); return }
        #expect(e.description.lowercased().contains("full"), "\(e)")
        #expect(pending == 3000)
        #expect(r.health.error != nil)
        #expect(try sqlite3(path, "SELECT count(*) FROM activity") == "1")
        // room again
        try h.db.execute("PRAGMA max_page_count=1073741823")
        #expect(r.flush())
        #expect(changes.withLock { $0 }.last == .recovered(failedCommits: 2, dropped: 0))
        #expect(try sqlite3(path, "SELECT count(*) FROM activity") == "3003")
        #expect(try sqlite3(path, "SELECT count(DISTINCT start_ns) FROM activity") == "3003")
        #expect(r.health.error == nil && r.health.dropped == 0)
    }

    @Test func aFailingCommitKeepsTheRecordsForTheNextTry() throws {
        let path = tempPath()
        let h = try FitnessHistory(path: path, retentionSeconds: 86400)
        let r = HistoryRecorder(history: h, nowUnixNs: { 1 })
        r.offer(.activity(ActivitySample(timestampNs: 1, startNs: 1, flags: .walking, confidence: .high)))
        // another connection holds the write lock: the commit fails, nothing is lost
        let other = try SQLiteConnection(path: path)
        try other.execute("PRAGMA busy_timeout=0; BEGIN IMMEDIATE")
        sqlite3_busy_timeout_for_tests(h)
        #expect(!r.flush())
        #expect(r.health.error != nil)
        try other.execute("COMMIT")
        #expect(r.flush())
        #expect(try h.activities(fromUnixNs: 0, toUnixNs: Int64.max).count == 1)
    }
}

/// The history's own connection waits briefly for a lock; shorten it so the test is quick.
func sqlite3_busy_timeout_for_tests(_ h: FitnessHistory) {
    try? h.db.execute("PRAGMA busy_timeout=10")
}
