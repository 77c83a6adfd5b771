import Testing
import Foundation
#if canImport(Glibc)
import Glibc
import TestThreads
#endif

/// The fitness history through the real agent: what it committed survives
/// SIGKILL, a restart appends to the same file, and the file is 0600. Read
/// back with the sqlite3 shell (a second reader of the format).
@Suite(.serialized, .ownThread) struct FitnessHistoryDaemonTests {
    func sqlite3(_ db: String, _ sql: String) -> String { sqlite3Shell(db, sql) }

    func activityRows(_ db: String) -> Int { Int(sqlite3(db, "SELECT count(*) FROM activity")) ?? 0 }

    @Test(.timeLimit(.minutes(2)))
    func historySurvivesSIGKILLAndARestart() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("fithist")
        defer { DaemonPaths.removeTree(dir) }
        let db = dir + "/fitness.sqlite3"
        let config = dir + "/agent.json5"
        try """
            { board: "\(DaemonPaths.packageRoot)/boards/simulated.json5",
              loop: { imu_batch: 1 },
              fitness: { enabled: true, history: { path: "fitness.sqlite3", retention_days: 7 } } }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        func start() throws -> AgentProcess {
            let a = AgentProcess(arguments: ["run", "--config", config, "--socket", dir + "/agent.sock", "--duration", "60", "--quiet"],
                                 environment: AgentProcess.environment([:]), outputDirectory: dir)
            try a.start()
            return a
        }
        // first run: the still board is classified stationary; the record is committed within ~2 s
        let first = try start()
        var d = DaemonDeadline(seconds: 40)
        while activityRows(db) < 1 && !d.expired && first.isRunning { daemonPause(ms: 100) }
        try #require(activityRows(db) >= 1, "no activity committed\n\(first.transcript)")
        first.kill()   // SIGKILL: no clean shutdown
        _ = first.waitForExit(DaemonDeadline(seconds: 10))
        #expect(sqlite3(db, "PRAGMA integrity_check") == "ok")
        let kept = activityRows(db)
        #expect(kept >= 1)
        #expect(sqlite3(db, "SELECT flags FROM activity ORDER BY start_ns LIMIT 1") == "1", "stationary (flag 1)")
        var st = stat()
        #expect(stat(db, &st) == 0 && st.st_mode & 0o777 == 0o600)

        // second run: appends to the same file, the first run's rows stay
        let second = try start()
        d = DaemonDeadline(seconds: 40)
        while activityRows(db) <= kept && !d.expired && second.isRunning { daemonPause(ms: 100) }
        #expect(activityRows(db) > kept, "the restarted agent records too\n\(second.transcript)")
        second.signal(SIGTERM)
        let exit = second.waitForExit(DaemonDeadline(seconds: 20))
        #expect(exit?.status == 0 && exit?.bySignal == false, "\(second.transcript)")
        #expect(second.stdout.contains("fitness history: \(db)"), "\(second.stdout)")
        // realtime timestamps, in order, spanning both runs
        let starts = sqlite3(db, "SELECT start_ns FROM activity ORDER BY rowid").split(separator: "\n").compactMap { Int64($0) }
        #expect(starts == starts.sorted() && starts.count == activityRows(db))
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        #expect(starts.allSatisfy { abs($0 - now) < 600 * 1_000_000_000 }, "CLOCK_REALTIME ns: \(starts)")
    }
}
