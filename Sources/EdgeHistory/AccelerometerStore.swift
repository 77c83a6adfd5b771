#if canImport(Glibc)
import Glibc
#endif
import EdgeSQLite
import EdgeValues
import EdgeProtocol

// RecordedAccelerometerSample and RecordingWindow are EdgeProtocol's (one definition for the store and the wire).

extension RecordingWindow {
    /// `uid`'s window after it asks at `nowUnixNs` to record for
    /// `durationNs`: its window `current`, when still open (ending at or
    /// after now), extended and never shortened; otherwise a new one from now.
    public static func asked(uid: UInt32, nowUnixNs now: Int64, durationNs: Int64, current: RecordingWindow?) -> RecordingWindow {
        let end = now + max(0, durationNs)
        if let c = current, c.uid == uid, c.endUnixNs >= now {
            return RecordingWindow(uid: uid, startUnixNs: c.startUnixNs, endUnixNs: max(c.endUnixNs, end))
        }
        return RecordingWindow(uid: uid, startUnixNs: now, endUnixNs: end)
    }
}

/// The sensor recorder's store: 50 Hz accelerometer samples and the
/// recording windows users asked for, in an SQLite file (the system's
/// libsqlite3; WAL, synchronous=FULL, mode 0600 as the fitness history).
///
/// Tables (a second reader, e.g. the `sqlite3` shell, reads them directly):
///
///     accel(id INTEGER PRIMARY KEY AUTOINCREMENT, start_ns INTEGER, n INTEGER, samples BLOB)
///         at most ``maxSamplesPerRow`` samples captured within one second
///         from start_ns (CLOCK_REALTIME ns); `samples` is n records of 8
///         bytes, little-endian: UInt16 offset from start_ns in units of
///         ``timeQuantumNs`` (100 µs), then Int16 x, y, z in units of
///         1/2048 g (g = 9.80665 m/s²: the MPU-6050's ±16 g scale,
///         PS-MPU-6000A-00 rev 3.4 §6.2, so every reading the chip can
///         give fits).
///     record_window(uid INTEGER, start_ns INTEGER, end_ns INTEGER)
///
/// Samples and windows older than ``retentionSeconds`` (Apple keeps three
/// days) go at each commit, and the oldest samples go when the database
/// holds more than `maxBytes` (pages in use).
public final class AccelerometerStore {
    public static let schemaVersion = 1
    /// Apple: "The collected data remains accessible to your app for up to
    /// three days" (CMSensorRecorder.recordAccelerometer(forDuration:)).
    public static let defaultRetentionSeconds: Double = 3 * 86400
    public static let maxSamplesPerRow = 64
    public static let bytesPerSample = 8
    /// Resolution of a stored sample's time, ns.
    public static let timeQuantumNs: Int64 = 100_000
    /// One count of a stored acceleration, m/s² (1/2048 g).
    public static let accelerationQuantumMps2 = standardGravity / 2048
    /// A row spans less than this, ns.
    public static let rowSpanNs: Int64 = 1_000_000_000

    let db: SQLiteConnection
    public var path: String { db.path }
    public let retentionSeconds: Double
    /// Most bytes of database pages in use (the file does not grow beyond
    /// it by more than a commit: freed pages are reused).
    public let maxBytes: Int
    private let insertRow: SQLiteStatement

    public init(path: String, retentionSeconds: Double = AccelerometerStore.defaultRetentionSeconds,
                maxBytes: Int, create: Bool = true) throws(SQLiteError) {
        precondition(retentionSeconds > 0 && maxBytes > 0, "AccelerometerStore: retention and size bound must be positive")
        db = try SQLiteConnection(path: path, create: create, fileMode: 0o600, fileKind: "sensor recording database")
        self.retentionSeconds = retentionSeconds
        self.maxBytes = maxBytes
        try db.makeDurable(knowingSchema: Self.schemaVersion)
        try db.execute("""
            BEGIN;
            CREATE TABLE IF NOT EXISTS accel(id INTEGER PRIMARY KEY AUTOINCREMENT, start_ns INTEGER NOT NULL,
                n INTEGER NOT NULL, samples BLOB NOT NULL);
            CREATE INDEX IF NOT EXISTS accel_start ON accel(start_ns);
            CREATE TABLE IF NOT EXISTS record_window(uid INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
            CREATE INDEX IF NOT EXISTS record_window_uid ON record_window(uid, end_ns);
            PRAGMA user_version=\(Self.schemaVersion);
            COMMIT;
            """)
        for suffix in ["-wal", "-shm"] { chmod(path + suffix, 0o600) }
        insertRow = try db.prepare("INSERT INTO accel(start_ns, n, samples) VALUES(?1, ?2, ?3)", persistent: true)
    }

    public func close() { db.close() }

    /// What a commit did.
    public struct CommitResult: Sendable, Equatable {
        public var rowsWritten = 0
        /// Rows (of up to a second each) deleted past the retention.
        public var rowsExpired = 0
        /// Rows deleted, oldest first, to keep within `maxBytes`.
        public var rowsTrimmedForSize = 0
    }

    /// Writes `samples` (oldest first; CLOCK_REALTIME ns and m/s²) and
    /// `windows` (each replacing the one of its uid that began at the same
    /// time) in one transaction, the samples packed into rows of at most a
    /// second, then deletes what is past the retention before `nowUnixNs`
    /// and, oldest first, what exceeds `maxBytes`.
    @discardableResult
    public func commit(_ samples: [(unixNs: Int64, acceleration: Vector3)], windows: [RecordingWindow] = [],
                       nowUnixNs: Int64) throws(SQLiteError) -> CommitResult {
        var result = CommitResult()
        try db.execute("BEGIN IMMEDIATE")
        do {
            for w in windows { try save(w) }
            var i = 0
            var blob: [UInt8] = []
            blob.reserveCapacity(Self.maxSamplesPerRow * Self.bytesPerSample)
            while i < samples.count {
                let start = samples[i].unixNs
                blob.removeAll(keepingCapacity: true)
                var n = 0
                while i < samples.count, n < Self.maxSamplesPerRow,
                      samples[i].unixNs >= start, samples[i].unixNs - start < Self.rowSpanNs {
                    Self.pack(offsetNs: samples[i].unixNs - start, samples[i].acceleration, into: &blob)
                    n += 1; i += 1
                }
                // (n ≥ 1: a sample older than the one before - the wall
                // clock stepped back - begins a row of its own)
                try insertRow.bind([.int(start), .int(Int64(n))])
                try insertRow.bindBlob(3, blob)
                try insertRow.run()
                result.rowsWritten += 1
            }
            let cutoff = nowUnixNs - Int64(retentionSeconds * 1e9)
            try db.execute("DELETE FROM accel WHERE start_ns < \(cutoff)")
            result.rowsExpired = db.changes
            try db.execute("DELETE FROM record_window WHERE end_ns < \(cutoff)")
            result.rowsTrimmedForSize = try trimToSize()
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
        return result
    }

    /// Bytes of pages in use: (page_count − freelist_count) × page_size.
    public func usedBytes() throws(SQLiteError) -> Int {
        let pages = Int(try db.scalarText("PRAGMA page_count") ?? "0") ?? 0
        let free = Int(try db.scalarText("PRAGMA freelist_count") ?? "0") ?? 0
        let size = Int(try db.scalarText("PRAGMA page_size") ?? "4096") ?? 4096
        return (pages - free) * size
    }

    /// Deletes the oldest rows while more than `maxBytes` are in use.
    private func trimToSize() throws(SQLiteError) -> Int {
        var trimmed = 0
        while true {
            let used = try usedBytes()
            guard used > maxBytes else { return trimmed }
            let rows = Int(try db.scalarText("SELECT count(*) FROM accel") ?? "0") ?? 0
            guard rows > 0 else { return trimmed }
            // the share of rows over the bound, and one more
            let n = min(rows, max(1, Int(Double(rows) * Double(used - maxBytes) / Double(used)) + 1))
            try db.execute("DELETE FROM accel WHERE id IN (SELECT id FROM accel ORDER BY id LIMIT \(n))")
            trimmed += n
        }
    }

    static func pack(offsetNs: Int64, _ a: Vector3, into blob: inout [UInt8]) {
        let offset = UInt16(clamping: (offsetNs + timeQuantumNs / 2) / timeQuantumNs)
        blob.append(UInt8(offset & 0xFF)); blob.append(UInt8(offset >> 8))
        for v in [a.x, a.y, a.z] {
            let q = (v / accelerationQuantumMps2).rounded()
            let c = q.isFinite ? Int16(clamping: Int(max(-40000, min(40000, q)))) : 0
            let u = UInt16(bitPattern: c)
            blob.append(UInt8(u & 0xFF)); blob.append(UInt8(u >> 8))
        }
    }

    // MARK: windows

    /// Records `uid`'s wish to record from `nowUnixNs` for `durationNs`
    /// (``RecordingWindow/asked(uid:nowUnixNs:durationNs:current:)``), in a
    /// transaction of its own. Returns the uid's window.
    @discardableResult
    public func openWindow(uid: UInt32, nowUnixNs: Int64, durationNs: Int64) throws(SQLiteError) -> RecordingWindow {
        let current = try windows(uid: uid, fromUnixNs: nowUnixNs).last
        let window = RecordingWindow.asked(uid: uid, nowUnixNs: nowUnixNs, durationNs: durationNs, current: current)
        try db.execute("BEGIN IMMEDIATE")
        do {
            try save(window)
            try db.execute("COMMIT")
            return window
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    /// Replaces `w.uid`'s window that began at `w.startUnixNs`, or adds `w` (in the caller's transaction).
    private func save(_ w: RecordingWindow) throws(SQLiteError) {
        let update = try db.prepare("UPDATE record_window SET end_ns = ?1 WHERE uid = ?2 AND start_ns = ?3")
        defer { update.finalize() }
        try update.run([.int(w.endUnixNs), .int(Int64(w.uid)), .int(w.startUnixNs)])
        if db.changes == 0 {
            try db.prepare("INSERT INTO record_window VALUES(?1, ?2, ?3)").run([.int(Int64(w.uid)), .int(w.startUnixNs), .int(w.endUnixNs)])
        }
    }

    /// The windows of `uid` (every user's with nil) that overlap [from, to], oldest first.
    public func windows(uid: UInt32?, fromUnixNs from: Int64 = 0, toUnixNs to: Int64 = .max) throws(SQLiteError) -> [RecordingWindow] {
        let s = try db.prepare("SELECT uid, start_ns, end_ns FROM record_window WHERE (?1 < 0 OR uid = ?1) AND end_ns >= ?2 AND start_ns <= ?3 ORDER BY start_ns")
        defer { s.finalize() }
        try s.bind([.int(uid.map { Int64($0) } ?? -1), .int(from), .int(to)])
        var out: [RecordingWindow] = []
        while try s.step() { out.append(RecordingWindow(uid: UInt32(truncatingIfNeeded: s.int(0)), startUnixNs: s.int(1), endUnixNs: s.int(2))) }
        return out
    }

    /// The latest end of any window, ns since 1970 (nil: none): the
    /// recorder records until then.
    public func latestWindowEnd() throws(SQLiteError) -> Int64? {
        try db.scalarText("SELECT max(end_ns) FROM record_window").flatMap { Int64($0) }
    }

    // MARK: reading

    /// The samples captured in [from, to] inside one of `windows` (all
    /// samples with nil), oldest first, at most `limit`; `next` is the
    /// capture time of the first sample left out (nil: none).
    public func samples(fromUnixNs from: Int64, toUnixNs to: Int64, within windows: [RecordingWindow]?,
                        limit: Int) throws(SQLiteError) -> (samples: [RecordedAccelerometerSample], next: Int64?) {
        let s = try db.prepare("SELECT id, start_ns, n, samples FROM accel WHERE start_ns >= ?1 AND start_ns <= ?2 ORDER BY id")
        defer { s.finalize() }
        try s.bind([.int(from > Int64.min + Self.rowSpanNs ? from - Self.rowSpanNs : from), .int(to)])
        var out: [RecordedAccelerometerSample] = []
        while try s.step() {
            let id = s.int(0), start = s.int(1), n = Int(s.int(2))
            let blob = s.blob(3)
            guard blob.count >= n * Self.bytesPerSample else {
                throw db.error("read accel row \(id)", code: 11, message: "row holds \(blob.count) bytes for \(n) samples")
            }
            for k in 0..<n {
                let b = k * Self.bytesPerSample
                func u16(_ o: Int) -> UInt16 { UInt16(blob[b + o]) | UInt16(blob[b + o + 1]) << 8 }
                let t = start + Int64(u16(0)) * Self.timeQuantumNs
                guard t >= from, t <= to else { continue }
                if let windows, !windows.contains(where: { $0.contains(t) }) { continue }
                if out.count == limit { return (out, t) }
                let q = Self.accelerationQuantumMps2
                let a = Vector3(Double(Int16(bitPattern: u16(2))) * q, Double(Int16(bitPattern: u16(4))) * q,
                                Double(Int16(bitPattern: u16(6))) * q)
                out.append(RecordedAccelerometerSample(identifier: UInt64(id) * UInt64(Self.maxSamplesPerRow) + UInt64(k),
                                                       unixNs: t, acceleration: a))
            }
        }
        return (out, nil)
    }

    /// `PRAGMA integrity_check` says "ok".
    public func isIntact() throws(SQLiteError) -> Bool { try db.scalarText("PRAGMA integrity_check") == "ok" }
}
