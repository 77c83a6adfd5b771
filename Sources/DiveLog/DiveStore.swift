// The dive log in SQLite.
//
// Durability: WAL journal with synchronous=FULL. In WAL mode FULL fsyncs
// the write-ahead log at every commit, so a committed batch survives a power
// cut; NORMAL would sync only at checkpoints and could lose the last commits
// (never corrupt). The recorder commits one batch per second of dive time,
// so a power cut or a SIGKILL loses at most the last second of samples, and
// SQLite's journal keeps the file consistent either way.
//
// Numbering: dives are numbered 1, 2, 3 ... in the order they started
// (INTEGER PRIMARY KEY AUTOINCREMENT: a number is never reused, even after
// the last dive is deleted by hand).
#if canImport(Glibc)
import Glibc
#endif
import EdgeValues
import EdgeSQLite

public enum DiveLogError: Error, Sendable, Equatable, CustomStringConvertible {
    case noSuchDive(Int64, available: ClosedRange<Int64>?)
    case notADatabase(path: String)
    /// An SQLite database without the dive log's tables.
    case notADiveLog(path: String)
    /// An SQLite database another program made (another application_id or
    /// user_version, or tables a dive log has not): never written.
    case foreignDatabase(path: String, reason: String)
    case lockedByAnotherLogger(path: String, holder: String)
    case cannotOpen(path: String, reason: String)
    case sqlite(SQLiteError)

    public var description: String {
        switch self {
        case let .noSuchDive(n, r):
            return "there is no dive \(n) in the log" + (r.map { ": dives are numbered \($0.lowerBound)…\($0.upperBound) (see `dive-logger list`)" } ?? ": the log is empty")
        case let .notADatabase(p):
            return "\(p) is not a dive log (not an SQLite database); nothing was changed. Give another --db FILE, or move this file away"
        case let .notADiveLog(p):
            return "\(p) is an SQLite database but not a dive log (it has no dives and samples tables); nothing was changed. Give another --db FILE"
        case let .foreignDatabase(p, r):
            return "\(p) is an SQLite database of another program, not a dive log (\(r)); nothing was written to it. Give another --db FILE (a new file is made a dive log)"
        case let .lockedByAnotherLogger(p, h):
            return "\(p) is being written by another dive-logger (\(h)); stop it first, or give another --db FILE. Reading (list, show, export, plot) works meanwhile"
        case let .cannotOpen(p, r):
            return "cannot open \(p): \(r)"
        case let .sqlite(e):
            return "dive log: \(e)"
        }
    }
}

/// The dive log database.
public final class DiveStore: @unchecked Sendable {
    public let path: String
    let db: SQLiteConnection
    var lockFD: Int32 = -1
    /// The lock file's device and inode while this store holds it (in ``heldLocks``).
    private var lockKey: LockKey?

    struct LockKey: Hashable { var device: UInt64; var inode: UInt64 }
    /// The lock files writers of this process hold.
    private static let heldLocks = Locked<Set<LockKey>>([])

    /// Takes the writer's lock (a flock on the lock file `fd`) and notes it
    /// in ``heldLocks``; nil when it is held elsewhere.
    ///
    /// A flock belongs to the open file description, and a child that
    /// another thread of this process is starting holds a copy of every
    /// descriptor until it execs (O_CLOEXEC closes them only then): a lock
    /// this process let go of stays held for as long as that child waits
    /// for a processor. So when the lock file names this process and none
    /// of its writers holds the file, the flock is tried again for up to
    /// 2 s. (Seen in the tests, which open a log again in the process that
    /// closed it while other tests start programs; a dive-logger opens its
    /// log once.)
    static func takeLock(_ fd: Int32) -> LockKey? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let key = LockKey(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        var waitedMs = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let ours = holder(fd) == "pid \(getpid())" && !heldLocks.withLock { $0.contains(key) }
            guard ours, waitedMs < 2000 else { return nil }
            _ = poll(nil, 0, 5)
            waitedMs += 5
        }
        heldLocks.withLock { _ = $0.insert(key) }
        return key
    }

    /// Who the lock file says holds it ("pid N").
    static func holder(_ fd: Int32) -> String {
        var buf = [UInt8](repeating: 0, count: 64)
        let n = pread(fd, &buf, 63, 0)
        return n > 0 ? String(decoding: buf[0..<n], as: UTF8.self).trimmingWhitespace : "unknown pid"
    }

    /// Lets go of the writer's lock (closes the lock file).
    func releaseLock() { Self.release(&lockFD, &lockKey) }
    /// The same, for `init`'s failures (before `self` is whole).
    private static func release(_ fd: inout Int32, _ key: inout LockKey?) {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
        if let k = key { _ = heldLocks.withLock { $0.remove(k) }; key = nil }
    }

    /// Opens the log. `writer`: creates it if need be and takes the
    /// writer's lock (one logger at a time records into a log). A reader
    /// opens it read-only (SQLITE_OPEN_READONLY) and changes nothing: a file
    /// that is not a dive log is refused as it is.
    /// `PRAGMA application_id` of a dive log: "DVLG" (SQLite's file
    /// header offset 68, for `file(1)` and other programs to tell it by).
    public static let applicationID: Int64 = 0x4456_4C47
    /// `PRAGMA user_version`: the schema of this logger's tables.
    public static let schemaVersion: Int64 = 1

    /// Whether the open database is a dive log this logger may write:
    /// nil when it is (or is empty: a new log), else why not. A log written
    /// before the application_id was set (0, user_version 0, exactly the
    /// dives and samples tables) is a dive log.
    static func foreignReason(_ db: SQLiteConnection) throws(SQLiteError) -> String? {
        let app = Int64(try db.scalarText("PRAGMA application_id") ?? "0") ?? 0
        let version = Int64(try db.scalarText("PRAGMA user_version") ?? "0") ?? 0
        var objects: [String] = []
        let s = try db.prepare("SELECT type || ' ' || name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
        while try s.step() { objects.append(s.text(0) ?? "") }
        if app != 0 && app != applicationID {
            return "its application_id is \(app) (0x\(String(app, radix: 16))), a dive log's is \(applicationID) (0x\(String(applicationID, radix: 16)))"
        }
        if version > schemaVersion && app == applicationID {
            return "a newer dive-logger wrote it (schema \(version), this one knows \(schemaVersion))"
        }
        if version != 0 && version != schemaVersion {
            return "its user_version is \(version), a dive log's is \(schemaVersion)"
        }
        if objects.isEmpty { return nil }
        let ours: Set<String> = ["table dives", "table samples"]
        let others = objects.filter { !ours.contains($0) }
        if !others.isEmpty { return "it holds \(others.prefix(5).joined(separator: ", "))\(others.count > 5 ? " …" : ""), which a dive log has not" }
        if objects.count != 2 { return "it holds \(objects.joined(separator: ", ")) but not both the dives and samples tables" }
        return nil
    }

    public init(path: String, writer: Bool) throws(DiveLogError) {
        self.path = path
        var createdLock = false
        if writer {
            let lockPath = path + ".lock"
            var fd = open(lockPath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if fd >= 0 { createdLock = true } else if errno == EEXIST { fd = open(lockPath, O_RDWR | O_CLOEXEC) }
            guard fd >= 0 else { throw .cannotOpen(path: lockPath, reason: String(cString: strerror(errno))) }
            guard let key = Self.takeLock(fd) else {
                let holder = Self.holder(fd)
                Glibc.close(fd)
                throw .lockedByAnotherLogger(path: path, holder: holder)
            }
            lockKey = key
            let me = "pid \(getpid())"
            _ = ftruncate(fd, 0)
            _ = me.withCString { pwrite(fd, $0, strlen($0), 0) }
            lockFD = fd
        }
        if !writer {
            do {
                db = try SQLiteConnection(path: path, readOnly: true, fileKind: "dive log")
                let tables = try db.scalarText("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('dives', 'samples')")
                guard tables == "2" else { throw DiveLogError.notADiveLog(path: path) }
                if let why = try Self.foreignReason(db) { throw DiveLogError.foreignDatabase(path: path, reason: why) }
            } catch let e as DiveLogError {
                throw e
            } catch let e as SQLiteError {
                if e.isNotADatabase { throw .notADatabase(path: path) }
                throw .sqlite(e)
            } catch {
                throw .cannotOpen(path: path, reason: "\(error)")
            }
            return
        }
        do {
            db = try SQLiteConnection(path: path, readOnly: false, fileKind: "dive log")
            // The first read tells a database from another file; nothing
            // is written (not even the WAL switch) to another program's.
            _ = try db.scalarText("PRAGMA schema_version")
            if let why = try Self.foreignReason(db) {
                Self.release(&lockFD, &lockKey)
                if createdLock { unlink(path + ".lock") }
                throw DiveLogError.foreignDatabase(path: path, reason: why)
            }
            try db.execute("PRAGMA journal_mode=WAL")
            try db.execute("PRAGMA synchronous=FULL")
            try db.execute("""
                CREATE TABLE IF NOT EXISTS dives (
                  number INTEGER PRIMARY KEY AUTOINCREMENT,
                  start_unix_ns INTEGER NOT NULL,
                  start_monotonic_ns INTEGER NOT NULL,
                  end_s REAL,
                  surface_pressure_pa REAL NOT NULL,
                  water TEXT NOT NULL
                );
                CREATE TABLE IF NOT EXISTS samples (
                  dive INTEGER NOT NULL REFERENCES dives(number),
                  time_s REAL NOT NULL,
                  depth_m REAL,
                  temperature_c REAL,
                  pressure_pa REAL,
                  ascent_rate_m_min REAL,
                  ascent_warning INTEGER NOT NULL,
                  PRIMARY KEY (dive, time_s)
                ) WITHOUT ROWID;
                """)
            try db.execute("PRAGMA application_id = \(Self.applicationID); PRAGMA user_version = \(Self.schemaVersion)")
        } catch let e as DiveLogError {
            throw e
        } catch let error as SQLiteError {
            Self.release(&lockFD, &lockKey)
            if createdLock, error.isNotADatabase { unlink(path + ".lock") }
            if error.isNotADatabase { throw .notADatabase(path: path) }
            throw .sqlite(error)
        } catch {
            Self.release(&lockFD, &lockKey)
            throw .cannotOpen(path: path, reason: "\(error)")
        }
    }

    deinit { releaseLock() }

    func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(DiveLogError) -> T {
        do { return try body() } catch { throw error.isNotADatabase ? .notADatabase(path: path) : .sqlite(error) }
    }

    public func beginDive(startUnixNanoseconds: Int64, startMonotonicNanoseconds: UInt64, surfacePressure: Double,
                          water: String) throws(DiveLogError) -> Int64 {
        try wrap { () throws(SQLiteError) -> Int64 in
            let s = try db.prepare("INSERT INTO dives (start_unix_ns, start_monotonic_ns, surface_pressure_pa, water) VALUES (?, ?, ?, ?)")
            try s.run([.int(startUnixNanoseconds), .int(Int64(bitPattern: startMonotonicNanoseconds)), .double(surfacePressure), .text(water)])
            return db.lastInsertRowID
        }
    }

    /// One batch in one transaction (one WAL sync). With `end` the dive is
    /// closed there (samples after it, logged during the final surface
    /// interval, are removed).
    public func append(dive: Int64, _ samples: [DiveSample], end: Double? = nil) throws(DiveLogError) {
        try wrap { () throws(SQLiteError) in
            try db.execute("BEGIN IMMEDIATE")
            do throws(SQLiteError) {
                let s = try db.prepare("INSERT OR REPLACE INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)")
                for x in samples {
                    try s.run([.int(dive), .double(x.time), .double(x.depth), .double(x.temperature), .double(x.pressure),
                               .double(x.ascentRate), .int(x.ascentWarning ? 1 : 0)])
                }
                if let end {
                    try db.prepare("UPDATE dives SET end_s = ? WHERE number = ?").run([.double(end), .int(dive)])
                    // The surface interval that ended the dive is not part of it.
                    try db.prepare("DELETE FROM samples WHERE dive = ? AND time_s > ?").run([.int(dive), .double(end + 1e-9)])
                }
                try db.execute("COMMIT")
            } catch let e {
                try? db.execute("ROLLBACK")
                throw e
            }
        }
    }

    public struct DiveRecord: Sendable, Equatable {
        public var number: Int64
        public var startUnixNanoseconds: Int64
        public var startMonotonicNanoseconds: UInt64
        public var endSeconds: Double?
        public var surfacePressure: Double
        public var water: String
    }

    public func records() throws(DiveLogError) -> [DiveRecord] {
        try wrap { () throws(SQLiteError) -> [DiveRecord] in
            let s = try db.prepare("SELECT number, start_unix_ns, start_monotonic_ns, end_s, surface_pressure_pa, water FROM dives ORDER BY number")
            var out: [DiveRecord] = []
            while try s.step() {
                out.append(DiveRecord(number: s.int(0), startUnixNanoseconds: s.int(1),
                                      startMonotonicNanoseconds: UInt64(bitPattern: s.int(2)),
                                      endSeconds: s.isNull(3) ? nil : s.double(3), surfacePressure: s.double(4),
                                      water: s.text(5) ?? ""))
            }
            return out
        }
    }

    public func samples(dive: Int64) throws(DiveLogError) -> [DiveSample] {
        try wrap { () throws(SQLiteError) -> [DiveSample] in
            let s = try db.prepare("SELECT time_s, depth_m, temperature_c, pressure_pa, ascent_rate_m_min, ascent_warning FROM samples WHERE dive = ? ORDER BY time_s")
            try s.bind([.int(dive)])
            var out: [DiveSample] = []
            while try s.step() {
                out.append(DiveSample(time: s.double(0), depth: s.double(1), temperature: s.double(2), pressure: s.double(3),
                                      ascentRate: s.double(4), ascentWarning: s.int(5) != 0))
            }
            return out
        }
    }

    public func summaries() throws(DiveLogError) -> [DiveSummary] {
        try records().map { r throws(DiveLogError) in try summary(r) }
    }

    func summary(_ r: DiveRecord) throws(DiveLogError) -> DiveSummary {
        DiveSummary.compute(number: r.number, startUnixNanoseconds: r.startUnixNanoseconds, endSeconds: r.endSeconds,
                            surfacePressure: r.surfacePressure, water: r.water, complete: r.endSeconds != nil,
                            samples: try samples(dive: r.number))
    }

    /// A dive and its samples; ``DiveLogError/noSuchDive`` names the range there is.
    public func dive(_ n: Int64) throws(DiveLogError) -> (DiveRecord, DiveSummary, [DiveSample]) {
        let all = try records()
        guard let r = all.first(where: { $0.number == n }) else {
            throw .noSuchDive(n, available: all.isEmpty ? nil : all.first!.number...all.last!.number)
        }
        let xs = try samples(dive: n)
        return (r, try summary(r), xs)
    }

    /// The dive that started at `startMonotonicNanoseconds` (the agent's
    /// clock) with this surface pressure, if the log has it: the same dive,
    /// read again.
    public func dive(startMonotonicNanoseconds: UInt64, surfacePressure: Double) throws(DiveLogError) -> DiveRecord? {
        let n = try wrap { () throws(SQLiteError) -> Int64? in
            let s = try db.prepare("SELECT number FROM dives WHERE start_monotonic_ns = ? AND surface_pressure_pa = ? ORDER BY number LIMIT 1")
            try s.bind([.int(Int64(bitPattern: startMonotonicNanoseconds)), .double(surfacePressure)])
            return try s.step() ? s.int(0) : nil
        }
        guard let n else { return nil }
        return try records().first { $0.number == n }
    }

    /// The last dive if it was never closed (the logger or the agent stopped mid-dive).
    public func openDive() throws(DiveLogError) -> DiveRecord? {
        guard let last = try records().last, last.endSeconds == nil else { return nil }
        return last
    }

    /// Closes a dive at its last sample (when it cannot be continued).
    public func close(dive: Int64) throws(DiveLogError) {
        let end = try samples(dive: dive).last?.time ?? 0
        try append(dive: dive, [], end: end)
    }
}

extension String {
    var trimmingWhitespace: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\n" || c == "\r" || c == "\t" || c == "\0" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\n" || c == "\r" || c == "\t" || c == "\0" { s.removeLast() }
        return String(s)
    }
}
