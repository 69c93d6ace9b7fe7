internal import SwitchyardCore
internal import SwitchyardSQLite
public import SwitchyardStore

/// Plugin instances' durable key-value state (the host's `state_*` service, ABI version 2), in
/// the same database as the spool: one file, one backup, one permission policy (0600 in a 0700
/// folder), written with the spool's `sync`. The default ``PluginStateStore``; a PostgreSQL
/// store takes its place when several routers share state (`store.url`).
extension SQLiteStore: PluginStateStore {
    static let createStateTables = """
        CREATE TABLE IF NOT EXISTS plugin_state(
            instance TEXT NOT NULL,
            key BLOB NOT NULL,
            value BLOB NOT NULL,
            changed_at INTEGER NOT NULL,
            PRIMARY KEY(instance, key)
        ) WITHOUT ROWID;
        """

    public func stateValue(of instance: String, key: [UInt8]) throws(StoreError) -> [UInt8]? {
        try file.storing { database throws(SQLiteError) in
            try database.prepare("SELECT value FROM plugin_state WHERE instance = ? AND key = ?")
                .rows([.text(instance), .blob(key)]) { $0.blob(0) }.first
        }
    }

    /// (An empty value binds as NULL, hence the COALESCE.)
    public func setState(of instance: String, key: [UInt8], value: [UInt8]) throws(StoreError) {
        try file.storing { database throws(SQLiteError) in
            try database.prepare("INSERT OR REPLACE INTO plugin_state(instance, key, value, changed_at) VALUES(?, ?, COALESCE(?, x''), ?)")
                .run([.text(instance), .blob(key), .blob(value), .int(Clock.nowUnixNanos())])
        }
    }

    public func removeState(of instance: String, key: [UInt8]) throws(StoreError) {
        try file.storing { database throws(SQLiteError) in
            try database.prepare("DELETE FROM plugin_state WHERE instance = ? AND key = ?").run([.text(instance), .blob(key)])
        }
    }

    public func stateEntries(
        of instance: String, prefix: [UInt8], after: [UInt8]?, limit: Int = PluginStateLimits.scanPage
    ) throws(StoreError) -> [(key: [UInt8], value: [UInt8])] {
        var conditions = "instance = ?"
        var values: [SQLiteStatement.Value] = [.text(instance)]
        if let after {
            conditions += " AND key > ?"
            values.append(.blob(after))
        }
        if !prefix.isEmpty {
            conditions += " AND key >= ?"
            values.append(.blob(prefix))
            if let end = PluginStateLimits.successor(of: prefix) {
                conditions += " AND key < ?"
                values.append(.blob(end))
            }
        }
        values.append(.int(Int64(max(1, limit))))
        let query = "SELECT key, value FROM plugin_state WHERE \(conditions) ORDER BY key LIMIT ?"
        return try file.storing { database throws(SQLiteError) in
            try database.prepare(query).rows(values) { ($0.blob(0), $0.blob(1)) }
        }
    }
}
