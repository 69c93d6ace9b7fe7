public import SwitchyardSQLite
public import SwitchyardStore

/// The SQLite engine of the store: the plugins' key-value state, the iiideas' switches, runs,
/// obtained iiideas and preferences, and OAuth tokens, in the spool's database file. It is the
/// store of a router without `store.url`; `PostgresStore` (SwitchyardPostgres) is the other
/// engine, for several routers. Both implement the protocols of SwitchyardStore, their tables
/// are declared once in ``StoreSchema``, and one conformance suite runs against both.
public final class SQLiteStore: Sendable {
    /// The file it shares with the spool.
    let file: SQLiteFile

    /// The store in `file` (whose schema is current: see ``SQLiteSchema``).
    public init(file: SQLiteFile) { self.file = file }

    /// The database file, for messages.
    public var location: String { file.path }

    /// `body` under the file's lock, its SQLite error worded as the store's.
    func storing<Result>(_ body: (SQLiteDatabase) throws(SQLiteError) -> Result) throws(StoreError) -> Result {
        do {
            return try file.locked(body)
        } catch {
            throw StoreError(location: file.path, detail: error.description)
        }
    }
}
