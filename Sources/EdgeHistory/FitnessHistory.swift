#if canImport(Glibc)
import Glibc
#endif
import EdgeSQLite
import EdgeValues
import EdgeProtocol

/// The history's errors are the SQLite layer's: the file, the call, SQLite's
/// code and message, errno, and what to do.
public typealias HistoryError = SQLiteError

/// One stored interval: what the pedometer added up to `endUnixNs`.
public struct PedometerRecord: Sendable, Equatable {
    public var endUnixNs: Int64
    public var totals: PedometerTotals
    public init(endUnixNs: Int64, totals: PedometerTotals) { self.endUnixNs = endUnixNs; self.totals = totals }
}

/// An activity as it began.
public struct ActivityRecord: Sendable, Equatable {
    public var startUnixNs: Int64
    public var flags: ActivityFlags
    public var confidence: ActivityConfidence
    public init(startUnixNs: Int64, flags: ActivityFlags, confidence: ActivityConfidence) {
        self.startUnixNs = startUnixNs; self.flags = flags; self.confidence = confidence
    }
}

public struct PedometerEventRecord: Sendable, Equatable {
    public var unixNs: Int64
    public var type: PedometerEventType
    public init(unixNs: Int64, type: PedometerEventType) { self.unixNs = unixNs; self.type = type }
}

/// The fitness history: an SQLite database (the system's libsqlite3) in WAL
/// mode with synchronous=FULL, so each committed batch survives a power cut
/// (the WAL is synced on every commit) and a killed agent loses only what
/// it had not committed yet. Times are CLOCK_REALTIME ns (they survive a
/// reboot, unlike the monotonic clock). The file and its -wal/-shm are mode 0600.
///
/// Tables (a second reader, e.g. the `sqlite3` shell, reads them directly):
///   pedometer(end_ns, steps, distance_m, floors_up, floors_down, active_s)
///             what was added in the interval ending at end_ns
///   activity(start_ns, flags, confidence)   one row per change
///   pedometer_event(t_ns, type)             0 pause, 1 resume
public final class FitnessHistory {
    public static let schemaVersion = 1
    let db: SQLiteConnection
    public var path: String { db.path }
    /// Records older than this are deleted, s.
    public let retentionSeconds: Double
    private let insertPedometer: SQLiteStatement
    private let insertActivity: SQLiteStatement
    private let insertEvent: SQLiteStatement

    /// Opens (creating when `create`) the history at `path`.
    public init(path: String, retentionSeconds: Double, create: Bool = true) throws(HistoryError) {
        precondition(retentionSeconds > 0, "FitnessHistory: retention must be positive")
        db = try SQLiteConnection(path: path, create: create, fileMode: 0o600, fileKind: "history database")
        self.retentionSeconds = retentionSeconds
        try db.makeDurable(knowingSchema: Self.schemaVersion)
        try db.execute("""
            BEGIN;
            CREATE TABLE IF NOT EXISTS pedometer(end_ns INTEGER NOT NULL, steps INTEGER NOT NULL, distance_m REAL NOT NULL,
                floors_up INTEGER NOT NULL, floors_down INTEGER NOT NULL, active_s REAL NOT NULL);
            CREATE INDEX IF NOT EXISTS pedometer_end ON pedometer(end_ns);
            CREATE TABLE IF NOT EXISTS activity(start_ns INTEGER NOT NULL, flags INTEGER NOT NULL, confidence INTEGER NOT NULL);
            CREATE INDEX IF NOT EXISTS activity_start ON activity(start_ns);
            CREATE TABLE IF NOT EXISTS pedometer_event(t_ns INTEGER NOT NULL, type INTEGER NOT NULL);
            CREATE INDEX IF NOT EXISTS pedometer_event_t ON pedometer_event(t_ns);
            PRAGMA user_version=\(Self.schemaVersion);
            COMMIT;
            """)
        for suffix in ["-wal", "-shm"] { chmod(path + suffix, 0o600) }
        insertPedometer = try db.prepare("INSERT INTO pedometer VALUES(?1, ?2, ?3, ?4, ?5, ?6)", persistent: true)
        insertActivity = try db.prepare("INSERT INTO activity VALUES(?1, ?2, ?3)", persistent: true)
        insertEvent = try db.prepare("INSERT INTO pedometer_event VALUES(?1, ?2)", persistent: true)
    }

    public func close() { db.close() }

    /// Writes the records in one transaction and deletes what is past the
    /// retention before `nowUnixNs`.
    public func commit(pedometer: [PedometerRecord], activities: [ActivityRecord], events: [PedometerEventRecord],
                       nowUnixNs: Int64) throws(HistoryError) {
        try db.execute("BEGIN IMMEDIATE")
        do {
            for r in pedometer {
                insertPedometer.bind(1, r.endUnixNs); insertPedometer.bind(2, Int64(r.totals.steps))
                insertPedometer.bind(3, r.totals.distanceMeters)
                insertPedometer.bind(4, Int64(r.totals.floorsAscended)); insertPedometer.bind(5, Int64(r.totals.floorsDescended))
                insertPedometer.bind(6, r.totals.activeSeconds)
                try insertPedometer.run()
            }
            for a in activities {
                insertActivity.bind(1, a.startUnixNs); insertActivity.bind(2, Int64(a.flags.rawValue))
                insertActivity.bind(3, Int64(a.confidence.rawValue))
                try insertActivity.run()
            }
            for e in events {
                insertEvent.bind(1, e.unixNs); insertEvent.bind(2, Int64(e.type.rawValue))
                try insertEvent.run()
            }
            let cutoff = nowUnixNs - Int64(retentionSeconds * 1e9)
            try db.execute("DELETE FROM pedometer WHERE end_ns < \(cutoff); DELETE FROM pedometer_event WHERE t_ns < \(cutoff);"
                + " DELETE FROM activity WHERE start_ns < \(cutoff) AND start_ns < (SELECT max(start_ns) FROM activity WHERE start_ns < \(cutoff))")
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    /// What the pedometer added in the intervals that ended in [from, to].
    public func pedometer(fromUnixNs from: Int64, toUnixNs to: Int64) throws(HistoryError) -> PedometerTotals {
        let s = try db.prepare("""
            SELECT coalesce(sum(steps),0), coalesce(sum(distance_m),0), coalesce(sum(floors_up),0),
                   coalesce(sum(floors_down),0), coalesce(sum(active_s),0)
            FROM pedometer WHERE end_ns >= ?1 AND end_ns <= ?2
            """, persistent: true)
        defer { s.finalize() }
        s.bind(1, from); s.bind(2, to)
        var t = PedometerTotals()
        if try s.step() {
            t.steps = Int(s.int(0)); t.distanceMeters = s.double(1)
            t.floorsAscended = Int(s.int(2)); t.floorsDescended = Int(s.int(3)); t.activeSeconds = s.double(4)
        }
        return t
    }

    /// The activities of [from, to]: the one going on at `from` (if any)
    /// and every one that began after it, oldest first.
    public func activities(fromUnixNs from: Int64, toUnixNs to: Int64) throws(HistoryError) -> [ActivityRecord] {
        try activities(fromUnixNs: from, toUnixNs: to, limit: nil)
    }

    /// ``activities(fromUnixNs:toUnixNs:)``, the first `limit` of them (nil: all).
    public func activities(fromUnixNs from: Int64, toUnixNs to: Int64, limit: Int?) throws(HistoryError) -> [ActivityRecord] {
        let s = try db.prepare("""
            SELECT start_ns, flags, confidence FROM activity
            WHERE start_ns >= (SELECT coalesce(max(start_ns), ?1) FROM activity WHERE start_ns <= ?1) AND start_ns <= ?2
            ORDER BY start_ns LIMIT ?3
            """, persistent: true)
        defer { s.finalize() }
        s.bind(1, from); s.bind(2, to); s.bind(3, Int64(limit ?? -1))   // SQLite: a negative LIMIT is none
        var out: [ActivityRecord] = []
        while try s.step() {
            out.append(ActivityRecord(startUnixNs: s.int(0), flags: ActivityFlags(rawValue: UInt8(truncatingIfNeeded: s.int(1))),
                                      confidence: ActivityConfidence(rawValue: UInt8(clamping: s.int(2))) ?? .low))
        }
        return out
    }

    public func events(fromUnixNs from: Int64, toUnixNs to: Int64) throws(HistoryError) -> [PedometerEventRecord] {
        let s = try db.prepare("SELECT t_ns, type FROM pedometer_event WHERE t_ns >= ?1 AND t_ns <= ?2 ORDER BY t_ns", persistent: true)
        defer { s.finalize() }
        s.bind(1, from); s.bind(2, to)
        var out: [PedometerEventRecord] = []
        while try s.step() {
            out.append(PedometerEventRecord(unixNs: s.int(0), type: s.int(1) == 0 ? .pause : .resume))
        }
        return out
    }

    /// `PRAGMA integrity_check` says "ok".
    public func isIntact() throws(HistoryError) -> Bool { try db.scalarText("PRAGMA integrity_check") == "ok" }
}
