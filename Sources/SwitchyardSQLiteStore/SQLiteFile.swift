internal import SwitchyardCore
public import SwitchyardSQLite

/// One SQLite database file open in this process: its connection and the one lock every use
/// of it takes. The spool and the store engine live in the same file (one file to back up, one
/// permission policy) and share this, so a transaction of one never interleaves with the
/// other's statements on the connection.
public final class SQLiteFile: Sendable {
    /// The database file.
    public let path: String
    private let connection: Locked<SQLiteDatabase>

    /// Shares `database`, opened at `path`; from now on it is used only through ``locked(_:)``.
    public init(path: String, database: SQLiteDatabase) {
        self.path = path
        connection = Locked(database)
    }

    /// Runs `body` with the connection, under the file's lock.
    public func locked<Result>(_ body: (SQLiteDatabase) throws(SQLiteError) -> Result) throws(SQLiteError) -> Result {
        try connection.withLock { (database: inout SQLiteDatabase) throws(SQLiteError) -> Result in try body(database) }
    }
}
