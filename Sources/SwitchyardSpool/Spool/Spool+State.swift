internal import SwitchyardCore
public import SwitchyardSQLite

/// Plugin instances' durable key-value state (the host's `state_*` service, ABI version 2), in
/// the same database as the spool: one file, one backup, one permission policy (0600 in a 0700
/// folder), written with the spool's `sync`. Keys and values are bytes; the key space belongs
/// to the instance name, so it survives restarts and reloads.
extension Spool {
    /// The most bytes in a key (`SY_STATE_MAX_KEY`).
    public static let maximumStateKey = 1024
    /// The most bytes in a value (`SY_STATE_MAX_VALUE`).
    public static let maximumStateValue = 1024 * 1024
    /// The most entries one ``stateEntries(of:prefix:after:limit:)`` page returns.
    public static let stateScanPage = 64

    static func createStateTables(in database: SQLiteDatabase) throws(SQLiteError) {
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS plugin_state(
                instance TEXT NOT NULL,
                key BLOB NOT NULL,
                value BLOB NOT NULL,
                changed_at INTEGER NOT NULL,
                PRIMARY KEY(instance, key)
            ) WITHOUT ROWID;
            """
        )
    }

    /// The value of `instance` under `key`, or nil when there is none.
    public func stateValue(of instance: String, key: [UInt8]) throws(SQLiteError) -> [UInt8]? {
        try locked { () throws(SQLiteError) in
            try database.prepare("SELECT value FROM plugin_state WHERE instance = ? AND key = ?")
                .rows([.text(instance), .blob(key)]) { $0.blob(0) }.first
        }
    }

    /// Stores `value` under `key` for `instance` (replacing any); committed when it returns.
    /// (An empty value binds as NULL, hence the COALESCE.)
    public func setState(of instance: String, key: [UInt8], value: [UInt8]) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try database.prepare("INSERT OR REPLACE INTO plugin_state(instance, key, value, changed_at) VALUES(?, ?, COALESCE(?, x''), ?)")
                .run([.text(instance), .blob(key), .blob(value), .int(Clock.nowUnixNanos())])
        }
    }

    /// Removes `key` of `instance` (nothing happens when there is none).
    public func removeState(of instance: String, key: [UInt8]) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try database.prepare("DELETE FROM plugin_state WHERE instance = ? AND key = ?").run([.text(instance), .blob(key)])
        }
    }

    /// Up to `limit` entries of `instance` whose key starts with `prefix` and sorts after
    /// `after` (nil: from the first), in key order (bytewise). Page through a large scan with
    /// the last key of each page, so no scan holds the store or memory for long.
    public func stateEntries(
        of instance: String, prefix: [UInt8], after: [UInt8]?, limit: Int = Spool.stateScanPage
    ) throws(SQLiteError) -> [(key: [UInt8], value: [UInt8])] {
        var conditions = "instance = ?"
        var values: [SQLiteStatement.Value] = [.text(instance)]
        if let after {
            conditions += " AND key > ?"
            values.append(.blob(after))
        }
        if !prefix.isEmpty {
            conditions += " AND key >= ?"
            values.append(.blob(prefix))
            if let end = Self.successor(of: prefix) {
                conditions += " AND key < ?"
                values.append(.blob(end))
            }
        }
        values.append(.int(Int64(max(1, limit))))
        let query = "SELECT key, value FROM plugin_state WHERE \(conditions) ORDER BY key LIMIT ?"
        return try locked { () throws(SQLiteError) in
            try database.prepare(query).rows(values) { ($0.blob(0), $0.blob(1)) }
        }
    }

    /// The smallest byte string greater than every string starting with `prefix`; nil when
    /// there is none (the prefix is all 0xFF).
    static func successor(of prefix: [UInt8]) -> [UInt8]? {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return nil
    }
}
