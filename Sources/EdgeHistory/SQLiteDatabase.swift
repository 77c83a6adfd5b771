#if canImport(Glibc)
import Glibc
#endif
import CSQLite

/// A failed SQLite call: what was done, on which file, SQLite's code and
/// message (and errno where SQLite saw one), and what to do.
public struct HistoryError: Error, CustomStringConvertible, Equatable {
    public var path: String
    public var operation: String
    public var code: Int32
    public var message: String
    public var errno: Int32
    public var description: String {
        "\(path): \(operation) failed: \(message) (SQLite code \(code)\(errno != 0 ? ", errno \(errno) \(String(cString: strerror(errno)))" : ""))"
            + (code == SQLITE_CANTOPEN || code == SQLITE_READONLY || code == SQLITE_PERM
               ? "; check that the directory exists and the agent's user may write there" : "")
            + (code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? "; the file is not a history database: move it away" : "")
    }
}

/// A thin owner of one sqlite3 connection and its prepared statements.
/// Not thread-safe: one thread uses it (the history thread).
final class SQLiteDatabase {
    let path: String
    private(set) var handle: OpaquePointer?

    /// Opens (creating, mode 0600) the database at `path`.
    init(path: String, readOnly: Bool = false, create: Bool = true) throws(HistoryError) {
        self.path = path
        if !create {
            var st = stat()
            guard stat(path, &st) == 0 else {
                throw HistoryError(path: path, operation: "open", code: SQLITE_CANTOPEN,
                                   message: "no history here (\(String(cString: strerror(errno))))", errno: errno)
            }
        }
        if !readOnly && create {
            // Create the file ourselves so it is born 0600 whatever the umask;
            // SQLite gives its -wal and -shm files the main file's mode.
            let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw HistoryError(path: path, operation: "create", code: SQLITE_CANTOPEN,
                                   message: String(cString: strerror(errno)), errno: errno)
            }
            fchmod(fd, 0o600)
            Glibc.close(fd)
        }
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        handle = db
        if rc != SQLITE_OK {
            let e = error("open", rc)
            sqlite3_close_v2(db)
            handle = nil
            throw e
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 2000)
    }

    deinit { close() }

    func close() {
        if let h = handle { sqlite3_close_v2(h) }
        handle = nil
    }

    func error(_ operation: String, _ rc: Int32) -> HistoryError {
        let message = handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
        let e = handle.map { sqlite3_system_errno($0) } ?? 0
        return HistoryError(path: path, operation: operation, code: rc & 0xff, message: message, errno: e)
    }

    /// Runs SQL without results.
    func exec(_ sql: String) throws(HistoryError) {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if let err { sqlite3_free(err) }
        guard rc == SQLITE_OK else { throw error(String(sql.prefix(40)), rc) }
    }

    func prepare(_ sql: String) throws(HistoryError) -> Statement {
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &s, nil)
        guard rc == SQLITE_OK, let s else { throw error("prepare \(sql.prefix(40))", rc) }
        return Statement(db: self, stmt: s)
    }

    /// The single integer a query returns (PRAGMA values).
    func scalar(_ sql: String) throws(HistoryError) -> String? {
        let s = try prepare(sql)
        defer { s.finalize() }
        guard try s.step() else { return nil }
        return s.text(0)
    }

    final class Statement {
        unowned let db: SQLiteDatabase
        var stmt: OpaquePointer?
        init(db: SQLiteDatabase, stmt: OpaquePointer) { self.db = db; self.stmt = stmt }
        deinit { finalize() }
        func finalize() { if let s = stmt { sqlite3_finalize(s) }; stmt = nil }

        func bind(_ i: Int32, _ v: Int64) { sqlite3_bind_int64(stmt, i, v) }
        func bind(_ i: Int32, _ v: Double) { sqlite3_bind_double(stmt, i, v) }
        /// One row (true) or done (false).
        func step() throws(HistoryError) -> Bool {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_ROW { return true }
            if rc == SQLITE_DONE { return false }
            throw db.error("step", rc)
        }
        func reset() { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        func int(_ c: Int32) -> Int64 { sqlite3_column_int64(stmt, c) }
        func double(_ c: Int32) -> Double { sqlite3_column_double(stmt, c) }
        func isNull(_ c: Int32) -> Bool { sqlite3_column_type(stmt, c) == SQLITE_NULL }
        func text(_ c: Int32) -> String? { sqlite3_column_text(stmt, c).map { String(cString: $0) } }
        /// Runs to completion (an insert, a delete).
        func run() throws(HistoryError) { defer { reset() }; while try step() {} }
    }
}
