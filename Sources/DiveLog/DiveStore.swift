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
import CSQLite

public enum DiveLogError: Error, Sendable, Equatable, CustomStringConvertible {
    case noSuchDive(Int64, available: ClosedRange<Int64>?)
    case notADatabase(path: String)
    /// An SQLite database without the dive log's tables.
    case notADiveLog(path: String)
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
    let db: SQLiteDatabase
    var lockFD: Int32 = -1

    /// Opens the log. `writer`: creates it if need be and takes the
    /// writer's lock (one logger at a time records into a log). A reader
    /// opens it read-only (SQLITE_OPEN_READONLY) and changes nothing: a file
    /// that is not a dive log is refused as it is.
    public init(path: String, writer: Bool) throws(DiveLogError) {
        self.path = path
        if writer {
            let lockPath = path + ".lock"
            let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw .cannotOpen(path: lockPath, reason: String(cString: strerror(errno))) }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                var buf = [UInt8](repeating: 0, count: 64)
                let n = pread(fd, &buf, 63, 0)
                Glibc.close(fd)
                let holder = n > 0 ? String(decoding: buf[0..<n], as: UTF8.self).trimmingWhitespace : "unknown pid"
                throw .lockedByAnotherLogger(path: path, holder: holder)
            }
            let me = "pid \(getpid())"
            _ = ftruncate(fd, 0)
            _ = me.withCString { pwrite(fd, $0, strlen($0), 0) }
            lockFD = fd
        }
        if !writer {
            do {
                db = try SQLiteDatabase(path: path, readOnly: true)
                let tables = try db.scalarText("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('dives', 'samples')")
                guard tables == "2" else { throw DiveLogError.notADiveLog(path: path) }
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
            db = try SQLiteDatabase(path: path, readOnly: false)
            // The first read tells a database from another file.
            _ = try db.scalarText("PRAGMA schema_version")
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
        } catch {
            if lockFD >= 0 { Glibc.close(lockFD); lockFD = -1 }
            if error.isNotADatabase { throw .notADatabase(path: path) }
            throw .sqlite(error)
        }
    }

    deinit { if lockFD >= 0 { Glibc.close(lockFD) } }

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
