import Foundation
import Logging
import SwitchyardPostgres
import SwitchyardSQLite
import SwitchyardSQLiteStore
import SwitchyardSpool
import SwitchyardStore
import Testing

@testable import IntegrationSupport

/// Both engines of the store hold the tables ``StoreSchema`` declares, as it declares them: each
/// engine's migrations are applied to a fresh store, its live schema is read back (SQLite's
/// `PRAGMA table_info`, PostgreSQL's `information_schema`) and compared column by column.
@Suite(.timeLimit(.minutes(2)))
struct StoreSchemaConformanceTests {
    /// A column as an engine reports it: its type in the engine's own words.
    struct LiveColumn: Equatable, CustomStringConvertible {
        var name: String
        var type: String
        var optional: Bool
        var description: String { "\(name) \(type)\(optional ? "" : " not null")" }
    }

    /// What SQLite must call a column of `kind`.
    static func sqliteType(_ kind: StoreSchema.Kind) -> Set<String> {
        switch kind {
        case .text: ["TEXT"]
        case .bytes: ["BLOB"]
        case .integer, .flag: ["INTEGER"]
        }
    }

    /// What PostgreSQL may call a column of `kind`.
    static func postgresType(_ kind: StoreSchema.Kind) -> Set<String> {
        switch kind {
        case .text: ["text"]
        case .bytes: ["bytea"]
        case .integer: ["bigint", "integer"]
        case .flag: ["boolean"]
        }
    }

    /// Holds `live` (the columns and primary key an engine reports for `table`) to the declaration.
    static func check(
        _ table: StoreSchema.Table, live: [LiveColumn], primaryKey: [String], engine: String, types: (StoreSchema.Kind) -> Set<String>
    ) {
        #expect(live.map(\.name) == table.columns.map(\.name), "\(engine) \(table.name): columns \(live) declared \(table.columns)")
        #expect(primaryKey == table.primaryKey, "\(engine) \(table.name): primary key \(primaryKey)")
        for (declared, found) in zip(table.columns, live) where declared.name == found.name {
            #expect(types(declared.kind).contains(found.type), "\(engine) \(table.name).\(found.name): \(found.type) for \(declared.kind)")
            // A primary key's columns are never NULL, whatever the engine reports of them.
            let optional = found.optional && !primaryKey.contains(found.name)
            #expect(optional == declared.optional, "\(engine) \(table.name).\(found.name): nullable \(optional)")
        }
    }

    @Test func theSQLiteFileHoldsTheDeclaredTables() throws {
        let sandbox = try Sandbox()
        let path = sandbox.path("spool.db")
        _ = try Spool(path: path)
        let database = try SQLiteDatabase(path: path, readOnly: true)
        for table in StoreSchema.tables {
            // cid, name, type, notnull, default, pk (its position in the key, 0 when not in it).
            let rows = try database.prepare("PRAGMA table_info(\(table.name))").rows([]) { row in
                (LiveColumn(name: row.text(1), type: row.text(2).uppercased(), optional: row.int(3) == 0), row.int(5))
            }
            #expect(!rows.isEmpty, "the SQLite file has no table \(table.name)")
            let primaryKey = rows.filter { $0.1 > 0 }.sorted { $0.1 < $1.1 }.map(\.0.name)
            Self.check(table, live: rows.map(\.0), primaryKey: primaryKey, engine: "SQLite", types: Self.sqliteType)
        }
    }

    @Test func postgreSQLHoldsTheDeclaredTables() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let store = try PostgresStore(url: server.url, logger: Logger(label: "test"))
        defer { withExtendedLifetime(store) {} }
        for table in StoreSchema.tables {
            let columns = try server.psql(
                """
                SELECT column_name || '|' || data_type || '|' || is_nullable FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = '\(table.name)' ORDER BY ordinal_position
                """
            ).split(separator: "\n").map { line in
                let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
                return LiveColumn(
                    name: fields[0], type: fields.count > 1 ? fields[1] : "", optional: fields.count > 2 && fields[2] == "YES")
            }
            #expect(!columns.isEmpty, "PostgreSQL has no table \(table.name)")
            let primaryKey = try server.psql(
                """
                SELECT k.column_name FROM information_schema.table_constraints c
                JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name AND k.table_name = c.table_name
                WHERE c.table_schema = current_schema() AND c.table_name = '\(table.name)' AND c.constraint_type = 'PRIMARY KEY'
                ORDER BY k.ordinal_position
                """
            ).split(separator: "\n").map(String.init)
            Self.check(table, live: columns, primaryKey: primaryKey, engine: "PostgreSQL", types: Self.postgresType)
        }
    }

    /// The declaration is not vacuous: a table an engine lacks, or a column of another kind, is
    /// reported.
    @Test func aDifferenceIsReported() {
        let table = StoreSchema.Table(name: "t", columns: [StoreSchema.Column("a", .text)], primaryKey: ["a"])
        withKnownIssue {
            Self.check(
                table, live: [LiveColumn(name: "a", type: "BLOB", optional: false)], primaryKey: ["a"], engine: "SQLite",
                types: Self.sqliteType)
        }
        withKnownIssue {
            Self.check(table, live: [], primaryKey: [], engine: "SQLite", types: Self.sqliteType)
        }
    }
}
