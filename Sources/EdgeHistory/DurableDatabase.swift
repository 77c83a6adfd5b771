import EdgeSQLite

extension SQLiteConnection {
    /// The agent's SQLite files (fitness history, sensor recording): WAL, so
    /// readers never block the writer, and synchronous=FULL, so every commit
    /// is on disk; refused when a newer agent wrote the file (its
    /// `user_version` above `schema`).
    func makeDurable(knowingSchema schema: Int) throws(SQLiteError) {
        let mode = try scalarText("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw error("PRAGMA journal_mode=WAL", message: "the file system refused WAL mode (got \(mode ?? "nothing"))")
        }
        try execute("PRAGMA synchronous=FULL")
        let version = Int(try scalarText("PRAGMA user_version") ?? "0") ?? 0
        if version > schema {
            throw error("open", message: "written by a newer agent (schema \(version), this one knows \(schema))")
        }
    }
}
