// One owner of one sqlite3 connection and its prepared statements: the
// only code of the package that calls libsqlite3 (the fitness history and
// the dive log both stand on it). Not thread-safe: one thread at a time.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CSQLite

public final class SQLiteConnection: @unchecked Sendable {
    public let path: String
    /// What the file is meant to be, named in errors' advice.
    public let fileKind: String
    private(set) var handle: OpaquePointer?

    /// Opens the database at `path`: read-only (SQLITE_OPEN_READONLY), or
    /// read-write, creating it when `create` (without it, a missing file is
    /// an SQLITE_CANTOPEN error saying so). With `fileMode` a new file is
    /// created by this call with that mode whatever the umask (SQLite gives
    /// its -wal and -shm files the main file's mode); without it SQLite
    /// creates it. Extended result codes on; a busy database is retried for
    /// `busyTimeoutMilliseconds` before SQLITE_BUSY.
    public init(path: String, readOnly: Bool = false, create: Bool = true, fileMode: mode_t? = nil,
                fileKind: String = "SQLite database", busyTimeoutMilliseconds: Int32 = 2000) throws(SQLiteError) {
        self.path = path
        self.fileKind = fileKind
        if !create {
            var st = stat()
            guard stat(path, &st) == 0 else {
                let e = errno
                throw SQLiteError(path: path, operation: "open", code: SQLITE_CANTOPEN,
                                  message: "no \(fileKind) here (\(String(cString: strerror(e))))", errno: e, fileKind: fileKind)
            }
        }
        if !readOnly && create, let fileMode {
            let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, fileMode)
            guard fd >= 0 else {
                let e = errno
                throw SQLiteError(path: path, operation: "create", code: SQLITE_CANTOPEN,
                                  message: String(cString: strerror(e)), errno: e, fileKind: fileKind)
            }
            fchmod(fd, fileMode)
            _ = Glibc.close(fd)
        }
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0))
            | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        handle = db
        if rc != SQLITE_OK {
            let e = error("open", rc)
            sqlite3_close_v2(db)
            handle = nil
            throw e
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
    }

    deinit { close() }

    /// Closes the connection (sqlite3_close_v2: statements still prepared
    /// are finalized by their owners later). Further calls fail with SQLITE_MISUSE.
    public func close() {
        if let h = handle { sqlite3_close_v2(h) }
        handle = nil
    }

    /// The error of a failed call with result code `rc`, with SQLite's
    /// message and errno for this connection.
    func error(_ operation: String, _ rc: Int32) -> SQLiteError {
        let message = handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
        let e = handle.map { sqlite3_system_errno($0) } ?? 0
        return SQLiteError(path: path, operation: operation, code: rc, message: message, errno: e, fileKind: fileKind)
    }

    /// A failure the caller found (a refused pragma, a newer schema), in
    /// this connection's terms.
    public func error(_ operation: String, code: Int32 = SQLITE_ERROR, message: String) -> SQLiteError {
        SQLiteError(path: path, operation: operation, code: code, message: message, fileKind: fileKind)
    }

    static func describe(_ sql: String) -> String {
        let line = sql.split(separator: "\n").first.map(String.init) ?? sql
        return line.count > 60 ? String(line.prefix(60)) + "…" : line
    }

    /// Runs SQL (one or more statements) without results.
    public func execute(_ sql: String) throws(SQLiteError) {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        let message = err.map { String(cString: $0) }
        if let err { sqlite3_free(err) }
        guard rc == SQLITE_OK else {
            var e = error(Self.describe(sql), rc)
            if let message { e.message = message }
            throw e
        }
    }

    /// Prepares one statement; `persistent` for one kept and reused
    /// (SQLITE_PREPARE_PERSISTENT).
    public func prepare(_ sql: String, persistent: Bool = false) throws(SQLiteError) -> SQLiteStatement {
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0, &s, nil)
        guard rc == SQLITE_OK, let s else { throw error("prepare \(Self.describe(sql))", rc) }
        return SQLiteStatement(connection: self, statement: s, sql: sql)
    }

    /// The first column of the first row as text (PRAGMA values, counts); nil for no row.
    public func scalarText(_ sql: String) throws(SQLiteError) -> String? {
        let s = try prepare(sql)
        defer { s.finalize() }
        guard try s.step() else { return nil }
        return s.text(0)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE (sqlite3_changes).
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the last INSERT on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
}

/// A value to bind to a statement's parameter.
public enum SQLiteValue: Sendable, Equatable {
    /// A double that is not finite is bound as NULL.
    case int(Int64), double(Double), text(String), null
}

/// One prepared statement of a connection. Parameters are numbered from 1,
/// columns from 0 (as in SQLite's C API).
public final class SQLiteStatement {
    let connection: SQLiteConnection
    private var statement: OpaquePointer?
    let sql: String

    init(connection: SQLiteConnection, statement: OpaquePointer, sql: String) {
        self.connection = connection; self.statement = statement; self.sql = sql
    }
    deinit { finalize() }

    public func finalize() { if let s = statement { sqlite3_finalize(s) }; statement = nil }

    /// Binds parameter `i` (from 1). A wrong index is a programmer error
    /// that shows as a NULL value; use ``bind(_:)`` to have it thrown.
    public func bind(_ i: Int32, _ v: Int64) { sqlite3_bind_int64(statement, i, v) }
    public func bind(_ i: Int32, _ v: Double) { sqlite3_bind_double(statement, i, v) }

    /// Resets the statement and binds `values` to parameters 1, 2, ….
    public func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        reset()
        for (i, v) in values.enumerated() {
            let k = Int32(i + 1)
            let rc: Int32
            switch v {
            case .int(let x): rc = sqlite3_bind_int64(statement, k, x)
            case .double(let x): rc = x.isFinite ? sqlite3_bind_double(statement, k, x) : sqlite3_bind_null(statement, k)
            case .text(let s): rc = sqlite3_bind_text(statement, k, s, -1, edge_sqlite_transient())
            case .null: rc = sqlite3_bind_null(statement, k)
            }
            if rc != SQLITE_OK { throw connection.error("bind \(SQLiteConnection.describe(sql))", rc) }
        }
    }

    /// Binds `bytes` as a BLOB to parameter `i` (from 1), copied by SQLite.
    public func bindBlob(_ i: Int32, _ bytes: [UInt8]) throws(SQLiteError) {
        let rc = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, i, $0.baseAddress, Int32($0.count), edge_sqlite_transient()) }
        if rc != SQLITE_OK { throw connection.error("bind \(SQLiteConnection.describe(sql))", rc) }
    }

    /// One row (true) or done (false).
    public func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(statement)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw connection.error("step \(SQLiteConnection.describe(sql))", rc)
    }

    /// Back to the start, with no parameters bound.
    public func reset() { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }

    /// Runs to completion with what is bound (an insert, a delete), then resets.
    public func run() throws(SQLiteError) { defer { reset() }; while try step() {} }

    /// Binds `values` and runs to completion.
    public func run(_ values: [SQLiteValue]) throws(SQLiteError) {
        try bind(values)
        while try step() {}
    }

    public func int(_ c: Int32) -> Int64 { sqlite3_column_int64(statement, c) }
    /// The column as a double; NaN for NULL.
    public func double(_ c: Int32) -> Double { isNull(c) ? .nan : sqlite3_column_double(statement, c) }
    public func isNull(_ c: Int32) -> Bool { sqlite3_column_type(statement, c) == SQLITE_NULL }
    /// The column's bytes (a BLOB; empty for NULL).
    public func blob(_ c: Int32) -> [UInt8] {
        let n = Int(sqlite3_column_bytes(statement, c))
        guard n > 0, let p = sqlite3_column_blob(statement, c) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
    public func text(_ c: Int32) -> String? { sqlite3_column_text(statement, c).map { String(cString: $0) } }
}
