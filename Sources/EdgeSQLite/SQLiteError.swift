// The one typed error of the SQLite layer: which file, what was done,
// SQLite's result code and message, errno where SQLite saw one, and what to
// do about it.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CSQLite

public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database file.
    public var path: String
    /// What was done: "open", "prepare SELECT …", "step", the SQL's first line.
    public var operation: String
    /// SQLite's primary result code (SQLITE_CANTOPEN, SQLITE_NOTADB, …; the
    /// low byte of an extended code). https://sqlite.org/rescode.html
    public var code: Int32
    /// SQLite's message (sqlite3_errmsg), or the caller's.
    public var message: String
    /// errno of the system call SQLite saw fail (sqlite3_system_errno), 0 if none.
    public var errno: Int32
    /// What the file should have been, for the advice ("history database",
    /// "dive log"): a file that is not one is named so.
    public var fileKind: String

    public init(path: String, operation: String, code: Int32, message: String, errno: Int32 = 0,
                fileKind: String = "SQLite database") {
        self.path = path; self.operation = operation; self.code = code & 0xFF; self.message = message
        self.errno = errno; self.fileKind = fileKind
    }

    /// SQLITE_NOTADB: the file is not a database.
    public var isNotADatabase: Bool { code == SQLITE_NOTADB }
    /// SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock.
    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }

    public var description: String {
        "\(path): \(operation) failed: \(message) (SQLite code \(code)\(errno != 0 ? ", errno \(errno) \(String(cString: strerror(errno)))" : ""))"
            + (code == SQLITE_CANTOPEN || code == SQLITE_READONLY || code == SQLITE_PERM
               ? "; check that the directory exists and that this user may write there" : "")
            + (code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? "; the file is not a \(fileKind): move it away" : "")
            + (code == SQLITE_FULL ? "; the disk is full: make room" : "")
    }
}
