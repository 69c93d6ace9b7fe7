import Foundation
internal import SwitchyardCore
public import SwitchyardSQLite
public import SwitchyardStore

/// The schema of the SQLite file the spool and the store engine share, as versioned
/// migrations recorded in `schema_migrations`.
///
/// A router applies what is pending when it opens its store; `switchyard store check` reports
/// and `switchyard store migrate` applies without starting one. Each migration runs in its own
/// `BEGIN IMMEDIATE` transaction, so a second process opening the file at the same moment
/// waits, then finds it applied.
public enum SQLiteSchema {
    /// Every migration this build knows, in version order.
    public static let migrations: [Migration] = [
        Migration(
            version: 1, name: "spool, dead letters, deduplication, iiideas, plugin state, OAuth connections",
            sql: [
                createSpoolTables, SQLiteStore.createIiideaTables, SQLiteIiideaCatalog.createTables, SQLiteStore.createStateTables,
                SQLiteStore.createOAuthTables,
            ].joined(
                separator: "\n")),
        // The switches' table under the name PostgreSQL gives it (StoreSchema declares it once).
        Migration(version: 2, name: "iiidea switches named as in every engine", sql: "ALTER TABLE iiidea_state RENAME TO iiidea_switches;"),
    ]

    /// The spool's own tables: spooled envelopes, dead letters, seen ids, the write probe.
    static let createSpoolTables = """
        CREATE TABLE IF NOT EXISTS spool(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            route TEXT NOT NULL,
            pending TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            size INTEGER NOT NULL,
            envelope BLOB NOT NULL
        );
        CREATE INDEX IF NOT EXISTS spool_by_route ON spool(route, seq);
        CREATE TABLE IF NOT EXISTS dead_letters(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            route TEXT NOT NULL,
            sink TEXT NOT NULL,
            envelope_id TEXT NOT NULL,
            type TEXT NOT NULL,
            subject TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            error TEXT NOT NULL,
            failed_at INTEGER NOT NULL,
            envelope BLOB NOT NULL
        );
        CREATE TABLE IF NOT EXISTS seen(
            route TEXT NOT NULL,
            envelope_id TEXT NOT NULL,
            at INTEGER NOT NULL,
            PRIMARY KEY(route, envelope_id)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS seen_by_time ON seen(route, at);
        CREATE TABLE IF NOT EXISTS spool_probe(id INTEGER PRIMARY KEY, at INTEGER NOT NULL);
        """

    static let createMigrationTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations(
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at INTEGER NOT NULL
        );
        """

    /// What the store at `path` has applied, read without changing it (nothing is created;
    /// a missing file is an empty store).
    public static func migrationStatus(at path: String) throws(StoreError) -> MigrationStatus {
        guard FileManager.default.fileExists(atPath: path) else { return MigrationStatus(applied: [], known: migrations) }
        do {
            let database = try SQLiteDatabase(path: path, readOnly: true)
            try database.execute("PRAGMA busy_timeout=5000")
            return MigrationStatus(applied: try appliedVersions(in: database), known: migrations)
        } catch {
            throw StoreError(location: path, detail: error.description)
        }
    }

    /// Applies the pending migrations of the store at `path` (creating it if needed) and
    /// returns what was pending before.
    @discardableResult
    public static func migrate(at path: String) throws(StoreError) -> MigrationStatus {
        do {
            let database = try SQLiteDatabase(path: path)
            try database.execute("PRAGMA busy_timeout=5000; PRAGMA journal_mode=WAL;")
            let before = MigrationStatus(applied: try appliedVersions(in: database), known: migrations)
            try migrate(database, path: path)
            return before
        } catch {
            throw StoreError(location: path, detail: "\(error)")
        }
    }

    /// Versions recorded in `database`; empty when it has no `schema_migrations` table.
    static func appliedVersions(in database: SQLiteDatabase) throws(SQLiteError) -> [Int] {
        let tables = try database.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
            .rows([]) { $0.int(0) }
        guard tables.first == 1 else { return [] }
        return try database.prepare("SELECT version FROM schema_migrations ORDER BY version").rows([]) { Int($0.int(0)) }
    }

    /// Applies what is pending to `database`, refusing a store written by a newer build.
    public static func migrate(_ database: SQLiteDatabase, path: String) throws(SQLiteSchemaError) {
        do {
            for migration in migrations {
                let applied = try database.transaction { () throws(SQLiteError) -> Bool in
                    try database.execute(createMigrationTable)
                    let status = MigrationStatus(applied: try appliedVersions(in: database), known: migrations)
                    guard status.unknown.isEmpty else { return true }
                    guard status.pending.contains(migration.version) else { return false }
                    if migration.version == 1 { try adoptUnversioned(database) }
                    try database.execute(migration.sql)
                    try database.prepare("INSERT INTO schema_migrations(version, name, applied_at) VALUES(?, ?, ?)")
                        .run([.int(Int64(migration.version)), .text(migration.name), .int(Clock.nowUnixNanos())])
                    try database.execute("PRAGMA user_version=\(migration.version)")
                    return false
                }
                if applied {
                    let status = MigrationStatus(applied: try appliedVersions(in: database), known: migrations)
                    throw SQLiteSchemaError.newer(status.summary(location: "the store"))
                }
            }
        } catch let error as SQLiteSchemaError {
            throw error
        } catch let error as SQLiteError {
            throw .sqlite(error)
        } catch {
            throw .sqlite(SQLiteError(code: 1, description: "\(error)"))
        }
    }

    /// Stores made before versioned migrations (schema version 1 without its record) may lack
    /// columns later builds added before migrations existed: they gain them, so version 1's
    /// `CREATE … IF NOT EXISTS` leaves every table as version 1 has it.
    private static func adoptUnversioned(_ database: SQLiteDatabase) throws(SQLiteError) {
        for (table, column) in [("iiidea_runs", "input"), ("iiidea_obtained", "owner")] {
            let columns = try database.prepare("PRAGMA table_info(\(table))").rows([]) { $0.text(1) }
            if !columns.isEmpty, !columns.contains(column) { try database.execute("ALTER TABLE \(table) ADD COLUMN \(column) TEXT") }
        }
    }
}

/// Why a migration of the SQLite file could not be applied.
public enum SQLiteSchemaError: Error, Sendable, CustomStringConvertible {
    /// The file was migrated by a newer build (the summary says which versions).
    case newer(String)
    /// SQLite refused.
    case sqlite(SQLiteError)

    public var description: String {
        switch self {
        case .newer(let summary): summary
        case .sqlite(let error): error.description
        }
    }
}
