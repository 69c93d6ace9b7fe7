internal import SwitchyardCore
internal import SwitchyardSQLite
internal import SwitchyardStore

/// The iiideas a person obtained from the store's templates, and the preferences they chose
/// for iiideas of the route files (tables `iiidea_obtained` and `iiidea_preferences`): kept in
/// the spool's database file, read at every load and reload. Holds only the file it shares with
/// the spool and the rest of the store; the tables are its whole state.
struct SQLiteIiideaCatalog {
    /// The file the tables are in.
    let file: SQLiteFile

    /// The catalog's tables, as migration 1 of ``SQLiteSchema`` creates them.
    static let createTables = """
        CREATE TABLE IF NOT EXISTS iiidea_obtained(
            id TEXT PRIMARY KEY,
            template TEXT NOT NULL,
            title TEXT,
            service_preferences TEXT,
            action_preferences TEXT,
            created_at INTEGER NOT NULL,
            owner TEXT
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS iiidea_preferences(
            id TEXT PRIMARY KEY,
            service_preferences TEXT,
            action_preferences TEXT,
            changed_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        """

    /// Every obtained iiidea, oldest first.
    func obtainedIiideas() throws(StoreError) -> [ObtainedIiidea] {
        try file.storing { database throws(SQLiteError) in
            try database.prepare(
                "SELECT id, template, title, service_preferences, action_preferences, owner FROM iiidea_obtained ORDER BY created_at, id"
            ).rows([]) { row in
                ObtainedIiidea(
                    id: row.text(0), template: row.text(1), title: row.isNull(2) ? nil : row.text(2),
                    preferences: PiecePreferences(service: Self.json(row, 3), action: Self.json(row, 4)),
                    owner: row.isNull(5) ? nil : row.text(5))
            }
        }
    }

    /// Keeps a newly obtained `iiidea`; false (nothing written) when one with its id is kept
    /// already: two people obtaining the same id at once cannot overwrite each other.
    func addObtained(_ iiidea: ObtainedIiidea) throws(StoreError) -> Bool {
        try file.storing { database throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                let exists = try database.prepare("SELECT 1 FROM iiidea_obtained WHERE id = ?").rows([.text(iiidea.id)]) { _ in true }
                guard exists.isEmpty else { return false }
                try database.prepare(
                    """
                    INSERT INTO iiidea_obtained(id, template, title, service_preferences, action_preferences, created_at, owner)
                    VALUES(?, ?, ?, ?, ?, ?, ?)
                    """
                ).run([
                    .text(iiidea.id), .text(iiidea.template), iiidea.title.map { .text($0) } ?? .null,
                    Self.value(iiidea.preferences.service), Self.value(iiidea.preferences.action), .int(Clock.nowUnixNanos()),
                    iiidea.owner.map { .text($0) } ?? .null,
                ])
                return true
            }
        }
    }

    /// Keeps `iiidea` (replacing one with its id).
    func saveObtained(_ iiidea: ObtainedIiidea) throws(StoreError) {
        try file.storing { database throws(SQLiteError) in
            try database.prepare(
                """
                INSERT INTO iiidea_obtained(id, template, title, service_preferences, action_preferences, created_at, owner)
                VALUES(?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET template = excluded.template, title = excluded.title,
                    service_preferences = excluded.service_preferences, action_preferences = excluded.action_preferences,
                    owner = excluded.owner
                """
            ).run([
                .text(iiidea.id), .text(iiidea.template), iiidea.title.map { .text($0) } ?? .null,
                Self.value(iiidea.preferences.service), Self.value(iiidea.preferences.action), .int(Clock.nowUnixNanos()),
                iiidea.owner.map { .text($0) } ?? .null,
            ])
        }
    }

    /// Forgets obtained iiidea `id`, its switch and its preference override; false when it was
    /// not obtained. Its run history stays until pruned.
    @discardableResult
    func deleteObtained(_ id: String) throws(StoreError) -> Bool {
        try file.storing { database throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                let existed =
                    try database.prepare("SELECT 1 FROM iiidea_obtained WHERE id = ?").rows([.text(id)]) { _ in true }.first ?? false
                try database.prepare("DELETE FROM iiidea_obtained WHERE id = ?").run([.text(id)])
                try database.prepare("DELETE FROM iiidea_switches WHERE id = ?").run([.text(id)])
                try database.prepare("DELETE FROM iiidea_preferences WHERE id = ?").run([.text(id)])
                return existed
            }
        }
    }

    /// The preferences chosen for iiideas of the route files, by iiidea id.
    func preferenceOverrides() throws(StoreError) -> [String: PiecePreferences] {
        try file.storing { database throws(SQLiteError) in
            var overrides: [String: PiecePreferences] = [:]
            let rows = try database.prepare("SELECT id, service_preferences, action_preferences FROM iiidea_preferences").rows([]) { row in
                (row.text(0), PiecePreferences(service: Self.json(row, 1), action: Self.json(row, 2)))
            }
            for (id, preferences) in rows { overrides[id] = preferences }
            return overrides
        }
    }

    /// Replaces the preferences of route-file iiidea `id`; nil removes the override.
    func setPreferenceOverride(_ id: String, to preferences: PiecePreferences?) throws(StoreError) {
        try file.storing { database throws(SQLiteError) in
            guard let preferences else {
                return try database.prepare("DELETE FROM iiidea_preferences WHERE id = ?").run([.text(id)])
            }
            try database.prepare(
                "INSERT OR REPLACE INTO iiidea_preferences(id, service_preferences, action_preferences, changed_at) VALUES(?, ?, ?, ?)"
            ).run([.text(id), Self.value(preferences.service), Self.value(preferences.action), .int(Clock.nowUnixNanos())])
        }
    }

    private static func json(_ row: SQLiteStatement, _ column: Int32) -> JSONValue? {
        row.isNull(column) ? nil : try? JSONValue(parsing: Array(row.text(column).utf8))
    }

    private static func value(_ json: JSONValue?) -> SQLiteStatement.Value {
        json.map { .text($0.serialized()) } ?? .null
    }
}
