public import Logging
public import SwitchyardStore

/// A store in a PostgreSQL database (`store.url`), which several routers share.
///
/// The one ``SharedStore`` the router and the CLI use; the work is its collaborators': the
/// session (one connection, used by one caller at a time, opened again after the server or the
/// network dropped it, every exchange bounded by a timeout), the migrator, the holds, and one
/// type per table. Calls block their thread: they come from plugin threads, control threads and
/// the admin port's worker threads, as the SQLite store's do, never from an event loop of this
/// store. (An OAuth refresh, a task, also reads and writes its tokens here: it may hold a
/// cooperative thread for that long.)
public final class PostgresStore: Sendable {
    /// The connection every table below asks on (the holds and the watch open their own).
    let session: PostgresSession
    let migrator: PostgresMigrator
    let holds: PostgresHolds
    let pluginState: PostgresPluginState
    let switches: PostgresIiideaSwitches
    let runHistory: PostgresIiideaRuns
    let catalog: PostgresIiideaCatalog
    let oauth: PostgresOAuthTokens
    let sharedDeadLetters: PostgresDeadLetters
    let dedupeKeys: PostgresDedupeKeys

    /// Connects to `url` and applies the pending migrations (under an advisory lock, so
    /// routers starting together apply each once). Throws, naming the database but never its
    /// password, when it cannot.
    public convenience init(url: String, logger: Logger) throws(StoreError) {
        try self.init(address: PostgresAddress(parsing: url), logger: logger)
        try migrate()
    }

    /// A store for `address`, not yet connected nor migrated (`switchyard store check`).
    public init(address: PostgresAddress, logger: Logger) throws(StoreError) {
        session = try PostgresSession(address: address, logger: logger)
        migrator = PostgresMigrator(session: session)
        holds = PostgresHolds(session: session)
        pluginState = PostgresPluginState(session: session)
        switches = PostgresIiideaSwitches(session: session)
        runHistory = PostgresIiideaRuns(session: session)
        catalog = PostgresIiideaCatalog(session: session)
        oauth = PostgresOAuthTokens(session: session)
        sharedDeadLetters = PostgresDeadLetters(session: session)
        dedupeKeys = PostgresDedupeKeys(session: session)
    }

    /// The database, its password left out.
    public var address: PostgresAddress { session.address }

    /// Where the state lives, for logs and errors.
    public var location: String { session.location }

    /// Every migration this build knows, in version order.
    public static let migrations: [Migration] = PostgresMigrator.migrations

    /// What the database has applied, read without changing it.
    public func migrationStatus() throws(StoreError) -> MigrationStatus { try migrator.migrationStatus() }

    /// Applies what is pending, all in one transaction under the migration lock; returns what
    /// was pending before. Refuses a database written by a newer build.
    @discardableResult
    public func migrate() throws(StoreError) -> MigrationStatus { try migrator.migrate() }
}
