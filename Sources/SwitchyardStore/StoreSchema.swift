/// The tables of the store, declared once for both engines: the SQLite file (`SQLiteSchema`)
/// and PostgreSQL (`PostgresStore.migrations`). Each engine writes its own migrations in its
/// own dialect — a migration already applied somewhere must never change — and the conformance
/// suite (`StoreSchemaConformanceTests`) reads each engine's live schema back and holds it to
/// this declaration: the same tables, the same columns, the same kinds, the same nullability and
/// primary keys. A column added to one engine and not the other fails that suite.
public enum StoreSchema {
    /// What a column holds, as both engines must store it.
    public enum Kind: String, Sendable {
        /// Text (`TEXT` in both).
        case text
        /// Bytes (`BLOB` in SQLite, `BYTEA` in PostgreSQL).
        case bytes
        /// A 64-bit integer: counts, nanosecond times, ids (`INTEGER` in SQLite, `BIGINT` in
        /// PostgreSQL; `INTEGER` there for attempts, which fit 32 bits).
        case integer
        /// A flag (`INTEGER` 0 or 1 in SQLite, `BOOLEAN` in PostgreSQL).
        case flag
    }

    /// One column.
    public struct Column: Sendable, Equatable, CustomStringConvertible {
        /// Its name.
        public var name: String
        /// What it holds.
        public var kind: Kind
        /// Whether it may be NULL.
        public var optional: Bool

        /// A column named `name` of `kind`, NOT NULL unless `optional`.
        public init(_ name: String, _ kind: Kind, optional: Bool = false) {
            self.name = name
            self.kind = kind
            self.optional = optional
        }

        public var description: String { "\(name) \(kind.rawValue)\(optional ? "" : " not null")" }
    }

    /// One table.
    public struct Table: Sendable {
        /// Its name, the same in both engines.
        public var name: String
        /// Its columns, in order.
        public var columns: [Column]
        /// The columns of its primary key, in order.
        public var primaryKey: [String]

        /// A table named `name` with `columns` and `primaryKey`.
        public init(name: String, columns: [Column], primaryKey: [String]) {
            self.name = name
            self.columns = columns
            self.primaryKey = primaryKey
        }
    }

    /// The tables every engine of the store has. (The spool's own tables — spooled envelopes,
    /// seen ids — are the SQLite file's alone, and `dedupe_seen` is PostgreSQL's alone: they
    /// belong to one engine each.)
    public static let tables: [Table] = [
        Table(
            name: "plugin_state",
            columns: [Column("instance", .text), Column("key", .bytes), Column("value", .bytes), Column("changed_at", .integer)],
            primaryKey: ["instance", "key"]),
        Table(
            name: "iiidea_switches", columns: [Column("id", .text), Column("enabled", .flag), Column("changed_at", .integer)],
            primaryKey: ["id"]),
        Table(
            name: "iiidea_runs",
            columns: [
                Column("run_id", .text), Column("iiidea_id", .text), Column("trigger_envelope_id", .text), Column("started_at", .integer),
                Column("ended_at", .integer, optional: true), Column("ended_piece", .text, optional: true),
                Column("output", .text, optional: true), Column("error", .text, optional: true), Column("input", .text, optional: true),
            ],
            primaryKey: ["run_id"]),
        Table(
            name: "iiidea_obtained",
            columns: [
                Column("id", .text), Column("template", .text), Column("title", .text, optional: true),
                Column("service_preferences", .text, optional: true), Column("action_preferences", .text, optional: true),
                Column("created_at", .integer), Column("owner", .text, optional: true),
            ],
            primaryKey: ["id"]),
        Table(
            name: "iiidea_preferences",
            columns: [
                Column("id", .text), Column("service_preferences", .text, optional: true),
                Column("action_preferences", .text, optional: true), Column("changed_at", .integer),
            ],
            primaryKey: ["id"]),
        Table(
            name: "oauth_connections", columns: [Column("name", .text), Column("sealed", .bytes), Column("changed_at", .integer)],
            primaryKey: ["name"]),
        Table(
            name: "dead_letters",
            columns: [
                Column("id", .integer), Column("route", .text), Column("sink", .text), Column("envelope_id", .text), Column("type", .text),
                Column("subject", .text), Column("attempts", .integer), Column("error", .text), Column("failed_at", .integer),
                Column("envelope", .bytes),
            ],
            primaryKey: ["id"]),
    ]
}
