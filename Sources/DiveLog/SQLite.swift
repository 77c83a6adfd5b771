// A small, typed layer over the system's libsqlite3.
#if canImport(Glibc)
import Glibc
#endif
import CSQLite

/// A SQLite failure: the call, the result code and SQLite's message.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int32
    public var message: String
    public var operation: String
    /// SQLITE_NOTADB: the file is not a database.
    public var isNotADatabase: Bool { code & 0xFF == SQLITE_NOTADB }
    public var isBusy: Bool { code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED }
    public var description: String { "\(operation): \(message) (SQLite code \(code))" }
}

/// One connection. Not thread-safe: one owner at a time.
public final class SQLiteDatabase: @unchecked Sendable {
    let handle: OpaquePointer
    public let path: String

    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        var h: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let rc = sqlite3_open_v2(path, &h, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let h else {
            let msg = h.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let h { sqlite3_close(h) }
            throw SQLiteError(code: rc, message: msg, operation: "open \(path)")
        }
        handle = h
        self.path = path
        sqlite3_busy_timeout(h, 2000)
    }

    deinit { sqlite3_close_v2(handle) }

    func error(_ rc: Int32, _ op: String) -> SQLiteError {
        SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)), operation: op)
    }

    /// Runs statements with no results.
    public func execute(_ sql: String) throws(SQLiteError) {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let m = err.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(err)
            throw SQLiteError(code: rc, message: m, operation: sql.split(separator: "\n").first.map(String.init) ?? sql)
        }
    }

    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &s, nil)
        guard rc == SQLITE_OK, let s else { throw error(rc, "prepare \(sql)") }
        return SQLiteStatement(db: self, statement: s, sql: sql)
    }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// One value of a one-row query.
    public func scalarText(_ sql: String) throws(SQLiteError) -> String? {
        let s = try prepare(sql)
        guard try s.step() else { return nil }
        return s.text(0)
    }
}

public enum SQLiteValue: Sendable, Equatable {
    case int(Int64), double(Double), text(String), null
}

public final class SQLiteStatement {
    let db: SQLiteDatabase
    let statement: OpaquePointer
    let sql: String
    init(db: SQLiteDatabase, statement: OpaquePointer, sql: String) { self.db = db; self.statement = statement; self.sql = sql }
    deinit { sqlite3_finalize(statement) }

    public func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        for (i, v) in values.enumerated() {
            let k = Int32(i + 1)
            let rc: Int32
            switch v {
            case .int(let x): rc = sqlite3_bind_int64(statement, k, x)
            case .double(let x): rc = x.isFinite ? sqlite3_bind_double(statement, k, x) : sqlite3_bind_null(statement, k)
            case .text(let s): rc = sqlite3_bind_text(statement, k, s, -1, edge_sqlite_transient())
            case .null: rc = sqlite3_bind_null(statement, k)
            }
            if rc != SQLITE_OK { throw db.error(rc, "bind \(sql)") }
        }
    }

    /// True while a row is available.
    public func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(statement)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw db.error(rc, "step \(sql)")
    }

    /// Binds and runs to completion.
    public func run(_ values: [SQLiteValue]) throws(SQLiteError) {
        try bind(values)
        while try step() {}
    }

    public func int(_ i: Int32) -> Int64 { sqlite3_column_int64(statement, i) }
    public func double(_ i: Int32) -> Double {
        sqlite3_column_type(statement, i) == SQLITE_NULL ? .nan : sqlite3_column_double(statement, i)
    }
    public func isNull(_ i: Int32) -> Bool { sqlite3_column_type(statement, i) == SQLITE_NULL }
    public func text(_ i: Int32) -> String? {
        guard let p = sqlite3_column_text(statement, i) else { return nil }
        return String(cString: p)
    }
}
