/// The SQLite engine of the store: the plugins' key-value state, the iiideas' switches, runs,
/// obtained iiideas and preferences, and OAuth tokens, in the spool's database file. It is the
/// store of a router without `store.url`; `PostgresStore` (SwitchyardPostgres) is the other
/// engine, for several routers. Both implement the protocols of SwitchyardStore, their tables
/// are declared once in ``StoreSchema``, and one conformance suite runs against both.
///
/// The catalog (``SQLiteIiideaCatalog``) and the run history (``SQLiteIiideaRuns``) are types of
/// their own on the same file; this store answers for them.
public final class SQLiteStore: Sendable {
    /// The file it shares with the spool.
    let file: SQLiteFile
    let catalog: SQLiteIiideaCatalog
    let runHistory: SQLiteIiideaRuns

    /// The store in `file` (whose schema is current: see ``SQLiteSchema``).
    public init(file: SQLiteFile) {
        self.file = file
        catalog = SQLiteIiideaCatalog(file: file)
        runHistory = SQLiteIiideaRuns(file: file)
    }

    /// The database file, for messages.
    public var location: String { file.path }
}
