internal import SwitchyardCore
internal import SwitchyardSQLite
public import SwitchyardStore

/// iiidea activation state and run history, in the spool's database file.
extension SQLiteStore: IiideaSwitchStore {
    static let createIiideaTables = """
        CREATE TABLE IF NOT EXISTS iiidea_state(
            id TEXT PRIMARY KEY,
            enabled INTEGER NOT NULL,
            changed_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS iiidea_runs(
            run_id TEXT PRIMARY KEY,
            iiidea_id TEXT NOT NULL,
            trigger_envelope_id TEXT NOT NULL,
            started_at INTEGER NOT NULL,
            ended_at INTEGER,
            ended_piece TEXT,
            output TEXT,
            error TEXT,
            input TEXT
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS iiidea_runs_by_iiidea ON iiidea_runs(iiidea_id, started_at);
        """

    /// The enabled flags users set (through the admin API or the CLI), by iiidea id.
    public func iiideaSwitches() throws(StoreError) -> [String: Bool] {
        try file.storing { database throws(SQLiteError) in
            var states: [String: Bool] = [:]
            for (id, enabled) in try database.prepare("SELECT id, enabled FROM iiidea_switches").rows([], { ($0.text(0), $0.int(1) != 0) })
            {
                states[id] = enabled
            }
            return states
        }
    }

    /// Remembers that iiidea `id` is enabled or disabled, across restarts.
    public func setIiideaSwitch(_ id: String, enabled: Bool) throws(StoreError) {
        try file.storing { database throws(SQLiteError) in
            try database.prepare("INSERT OR REPLACE INTO iiidea_switches(id, enabled, changed_at) VALUES(?, ?, ?)")
                .run([.text(id), .int(enabled ? 1 : 0), .int(Clock.nowUnixNanos())])
        }
    }
}
