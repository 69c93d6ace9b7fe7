import Foundation
import Logging
import SwitchyardPostgres
import SwitchyardSQLite
import SwitchyardSQLiteStore
import SwitchyardSpool
import SwitchyardStore
import Testing

@testable import IntegrationSupport

/// Versioned schema migrations of both stores, and `switchyard store check|migrate`.
@Suite(.timeLimit(.minutes(2)))
struct StoreMigrationTests {
    @Test func aNewSpoolRecordsItsMigrationsAndANewerOneIsRefused() throws {
        let sandbox = try Sandbox()
        let path = sandbox.path("state/spool.db")
        #expect(try SQLiteSchema.migrationStatus(at: path).pending == SQLiteSchema.migrations.map(\.version))
        #expect(!FileManager.default.fileExists(atPath: path), "a check creates nothing")
        _ = try Spool(path: path)
        let status = try SQLiteSchema.migrationStatus(at: path)
        #expect(status.applied == SQLiteSchema.migrations.map(\.version))
        #expect(status.isCurrent)
        // Opening again applies nothing twice.
        _ = try Spool(path: path)
        #expect(try SQLiteSchema.migrationStatus(at: path).applied == SQLiteSchema.migrations.map(\.version))

        let database = try SQLiteDatabase(path: path)
        try database.execute("INSERT INTO schema_migrations(version, name, applied_at) VALUES(999, 'from the future', 0)")
        let error = try #require(throws: SpoolOpenError.self) { try Spool(path: path) }
        #expect(error.description.contains("written by a newer switchyard"), "\(error)")
        #expect(error.description.contains("999"), "\(error)")
    }

    /// A spool at version 1 keeps its iiideas' switches when version 2 renames their table to the
    /// name every engine uses (`iiidea_switches`, as StoreSchema declares it).
    @Test func aVersionOneSpoolKeepsItsSwitchesUnderTheSharedName() throws {
        let sandbox = try Sandbox()
        let path = sandbox.path("v1.db")
        do {
            let database = try SQLiteDatabase(path: path)
            try database.execute(SQLiteSchema.migrations[0].sql)
            try database.execute(
                """
                CREATE TABLE schema_migrations(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);
                INSERT INTO schema_migrations(version, name, applied_at) VALUES(1, 'version 1', 0);
                INSERT INTO iiidea_state(id, enabled, changed_at) VALUES('lamp', 0, 1);
                """)
        }
        #expect(try SQLiteSchema.migrationStatus(at: path).pending == [2])
        let spool = try Spool(path: path)
        #expect(try spool.store.iiideaSwitches() == ["lamp": false])
        try spool.store.setIiideaSwitch("fan", enabled: true)
        #expect(try spool.store.iiideaSwitches() == ["lamp": false, "fan": true])
    }

    /// A spool made before versioned migrations (no record, and tables missing the columns
    /// added since) is adopted: it gains them and its rows stay.
    @Test func aSpoolFromBeforeMigrationsIsAdopted() throws {
        let sandbox = try Sandbox()
        let path = sandbox.path("old.db")
        do {
            let database = try SQLiteDatabase(path: path)
            try database.execute(
                """
                CREATE TABLE iiidea_runs(run_id TEXT PRIMARY KEY, iiidea_id TEXT NOT NULL, trigger_envelope_id TEXT NOT NULL,
                    started_at INTEGER NOT NULL, ended_at INTEGER, ended_piece TEXT, output TEXT, error TEXT) WITHOUT ROWID;
                INSERT INTO iiidea_runs(run_id, iiidea_id, trigger_envelope_id, started_at) VALUES('r1', 'i1', 'e1', 1);
                CREATE TABLE iiidea_obtained(id TEXT PRIMARY KEY, template TEXT NOT NULL, title TEXT, service_preferences TEXT,
                    action_preferences TEXT, created_at INTEGER NOT NULL) WITHOUT ROWID;
                PRAGMA user_version=1;
                """)
        }
        #expect(try SQLiteSchema.migrationStatus(at: path).pending == SQLiteSchema.migrations.map(\.version))
        _ = try Spool(path: path)
        #expect(try SQLiteSchema.migrationStatus(at: path).isCurrent)
        let database = try SQLiteDatabase(path: path)
        let columns = try database.prepare("PRAGMA table_info(iiidea_runs)").rows([]) { $0.text(1) }
        #expect(columns.contains("input"))
        #expect(try database.prepare("SELECT count(*) FROM iiidea_runs").rows([]) { $0.int(0) } == [1])
    }

    /// Two routers starting together on one database: each migration is applied once.
    @Test func routersMigratingTogetherApplyEachMigrationOnce() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let url = server.url
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { _ = try PostgresStore(url: url, logger: Logger(label: "test")) }
            }
            try await group.waitForAll()
        }
        #expect(try server.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations") == "1,2,3,4,5,6,7")
        try server.psql("INSERT INTO schema_migrations(version, name, applied_at) VALUES(999, 'from the future', 0)")
        let error = try #require(throws: StoreError.self) { try PostgresStore(url: url, logger: Logger(label: "test")) }
        #expect(error.description.contains("written by a newer switchyard"), "\(error)")
    }

    @Test func checkAndMigrateReportBothStoresWithoutThePassword() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let sandbox = try Sandbox()
        try sandbox.writeRoutes(
            """
            spool: { path: "\(sandbox.path("state/spool.db"))" }
            store: { url: "${STORE_URL}" }
            """)
        let environment = ProcessInfo.processInfo.environment.merging(["STORE_URL": server.url]) { $1 }
        func switchyard(_ arguments: [String]) throws -> ToolResult {
            try Tool.run(BuildProducts.switchyard.path, arguments, environment: environment, timeout: .seconds(30))
        }
        let before = try switchyard(["store", "check", sandbox.routes.path])
        #expect(before.status == 1, "\(before.output)")
        #expect(before.output.contains("spool \(sandbox.path("state/spool.db")): empty, 2 migration(s) pending (1, 2)"), "\(before.output)")
        #expect(before.output.contains("/switchyard: empty, 7 migration(s) pending (1, 2, 3, 4, 5, 6, 7)"), "\(before.output)")
        let migrated = try switchyard(["store", "migrate", sandbox.routes.path])
        #expect(migrated.status == 0, "\(migrated.output)")
        #expect(
            migrated.output.contains(
                "store postgres://switchyard:***@127.0.0.1:\(server.port)/switchyard: applied migration(s) 1, 2, 3, 4, 5, 6, 7"),
            "\(migrated.output)")
        let after = try switchyard(["store", "check", sandbox.routes.path])
        #expect(after.status == 0, "\(after.output)")
        #expect(after.output.contains("state/spool.db: schema version 2, up to date"), "\(after.output)")
        #expect(after.output.contains("/switchyard: schema version 7, up to date"), "\(after.output)")
        for output in [before.output, migrated.output, after.output] { #expect(!output.contains(server.password)) }
    }
}
