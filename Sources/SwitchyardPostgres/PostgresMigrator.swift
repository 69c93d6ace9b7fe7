import Foundation
import PostgresNIO
import SwitchyardStore

/// The PostgreSQL store's schema, as versioned migrations recorded in `schema_migrations`
/// (the same table, and the same rules, as the SQLite store's). It owns the migrations and
/// the lock that applies each once across routers; the store's tables only ever see a
/// database it brought up to date.
struct PostgresMigrator {
    /// The connection migrations are read and applied on.
    let session: PostgresSession

    /// Every migration this build knows, in version order. Statements end with `;` at the end
    /// of a line (each is sent on its own: the extended protocol takes one at a time).
    static let migrations: [Migration] = [
        Migration(
            version: 1, name: "plugin state",
            sql: """
                CREATE TABLE IF NOT EXISTS plugin_state(
                    instance TEXT NOT NULL,
                    key BYTEA NOT NULL,
                    value BYTEA NOT NULL,
                    changed_at BIGINT NOT NULL,
                    PRIMARY KEY(instance, key)
                );
                """),
        Migration(
            version: 2, name: "iiidea switches",
            sql: """
                CREATE TABLE IF NOT EXISTS iiidea_switches(
                    id TEXT PRIMARY KEY,
                    enabled BOOLEAN NOT NULL,
                    changed_at BIGINT NOT NULL
                );
                """),
        Migration(
            version: 3, name: "dead letters",
            sql: """
                CREATE TABLE IF NOT EXISTS dead_letters(
                    id BIGSERIAL PRIMARY KEY,
                    route TEXT NOT NULL,
                    sink TEXT NOT NULL,
                    envelope_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    error TEXT NOT NULL,
                    failed_at BIGINT NOT NULL,
                    envelope BYTEA NOT NULL,
                    UNIQUE(route, sink, envelope_id, failed_at)
                );
                """),
        Migration(
            version: 4, name: "iiidea runs",
            sql: """
                CREATE TABLE IF NOT EXISTS iiidea_runs(
                    run_id TEXT PRIMARY KEY,
                    iiidea_id TEXT NOT NULL,
                    trigger_envelope_id TEXT NOT NULL,
                    started_at BIGINT NOT NULL,
                    ended_at BIGINT,
                    ended_piece TEXT,
                    output TEXT,
                    error TEXT,
                    input TEXT
                );
                CREATE INDEX IF NOT EXISTS iiidea_runs_by_iiidea ON iiidea_runs(iiidea_id, started_at);
                """),
        Migration(
            version: 5, name: "obtained iiideas and preference overrides",
            sql: """
                CREATE TABLE IF NOT EXISTS iiidea_obtained(
                    id TEXT PRIMARY KEY,
                    template TEXT NOT NULL,
                    title TEXT,
                    service_preferences TEXT,
                    action_preferences TEXT,
                    created_at BIGINT NOT NULL,
                    owner TEXT
                );
                CREATE TABLE IF NOT EXISTS iiidea_preferences(
                    id TEXT PRIMARY KEY,
                    service_preferences TEXT,
                    action_preferences TEXT,
                    changed_at BIGINT NOT NULL
                );
                """),
        Migration(
            version: 6, name: "oauth connections",
            sql: """
                CREATE TABLE IF NOT EXISTS oauth_connections(
                    name TEXT PRIMARY KEY,
                    sealed BYTEA NOT NULL,
                    changed_at BIGINT NOT NULL
                );
                """),
        Migration(
            version: 7, name: "shared dedupe keys",
            sql: """
                CREATE TABLE IF NOT EXISTS dedupe_seen(
                    route TEXT NOT NULL,
                    key TEXT NOT NULL,
                    seen_at BIGINT NOT NULL,
                    PRIMARY KEY (route, key)
                );
                CREATE INDEX IF NOT EXISTS dedupe_seen_by_time ON dedupe_seen(route, seen_at);
                """),
    ]

    /// Held (per transaction) while migrations are checked and applied, so that routers
    /// starting together apply each once: an arbitrary key, "switchyard" in ASCII.
    static let migrationLock: Int64 = 0x7377_6974_6368_7961

    static let createMigrationTable: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS schema_migrations(
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at BIGINT NOT NULL
        )
        """

    /// What the database has applied, read without changing it.
    func migrationStatus() throws(StoreError) -> MigrationStatus {
        try session.exchange { run in
            let exists = try run("SELECT to_regclass('schema_migrations') IS NOT NULL").first.map { try $0.decode(Bool.self) }
            guard exists == true else { return MigrationStatus(applied: [], known: Self.migrations) }
            let applied = try run("SELECT version FROM schema_migrations ORDER BY version").map { try $0.decode(Int.self) }
            return MigrationStatus(applied: applied, known: Self.migrations)
        }
    }

    /// Applies what is pending, all in one transaction under the migration lock; returns what
    /// was pending before. Refuses a database written by a newer build.
    @discardableResult
    func migrate() throws(StoreError) -> MigrationStatus {
        let before = try session.exchange { run in
            _ = try run("BEGIN")
            do {
                _ = try run("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
                _ = try run(Self.createMigrationTable)
                let applied = try run("SELECT version FROM schema_migrations ORDER BY version").map { try $0.decode(Int.self) }
                let status = MigrationStatus(applied: applied, known: Self.migrations)
                if status.unknown.isEmpty {
                    for migration in Self.migrations where status.pending.contains(migration.version) {
                        for statement in Self.statements(of: migration.sql) { _ = try run(PostgresQuery(unsafeSQL: statement)) }
                        let now = Int64(Date().timeIntervalSince1970 * 1e9)
                        _ = try run(
                            "INSERT INTO schema_migrations(version, name, applied_at) VALUES(\(migration.version), \(migration.name), \(now))"
                        )
                    }
                }
                _ = try run(status.unknown.isEmpty ? "COMMIT" : "ROLLBACK")
                return status
            } catch {
                _ = try? run("ROLLBACK")
                throw error
            }
        }
        guard before.unknown.isEmpty else { throw StoreError(location: session.location, detail: before.summary(location: "the database")) }
        return before
    }

    /// The statements of `sql`: split after each `;` that ends a line.
    static func statements(of sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            current += line + "\n"
            if line.trimmingCharacters(in: .whitespaces).hasSuffix(";") {
                statements.append(current.trimmingCharacters(in: .whitespacesAndNewlines))
                current = ""
            }
        }
        let rest = current.trimmingCharacters(in: .whitespacesAndNewlines)
        if !rest.isEmpty { statements.append(rest) }
        return statements
    }
}
