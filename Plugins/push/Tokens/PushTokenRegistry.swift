public import SwitchyardSQLite
import Synchronization

/// One registered FCM token: an app instance on a device, optionally of a user.
public struct PushTokenRecord: Sendable, Equatable {
    /// The FCM registration token.
    public var token: String
    /// The device id the app gave.
    public var device: String?
    /// The user id the app gave.
    public var user: String?
    /// The app's platform (`android`, `ios`, `web`), as given.
    public var platform: String?
    /// When the token was first registered, Unix seconds.
    public var registeredAt: Int64
    /// When it was last registered or refreshed, Unix seconds.
    public var updatedAt: Int64

    /// Creates a record.
    public init(token: String, device: String? = nil, user: String? = nil, platform: String? = nil, registeredAt: Int64, updatedAt: Int64) {
        self.token = token
        self.device = device
        self.user = user
        self.platform = platform
        self.registeredAt = registeredAt
        self.updatedAt = updatedAt
    }
}

/// The FCM tokens apps registered, in an SQLite file: written by the push plugin's
/// `/v1/tokens` endpoint and its sender (which drops tokens FCM calls UNREGISTERED), read by
/// `switchyard push tokens`. Safe to use from any thread; several processes may share the
/// file (WAL).
public final class PushTokenRegistry: Sendable {
    private let database: Mutex<SQLiteDatabase>
    /// The database file.
    public let path: String

    /// Opens (creating if needed) the registry at `path`.
    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        let database = try SQLiteDatabase(path: path, readOnly: readOnly)
        try database.execute("PRAGMA busy_timeout = 5000")
        if !readOnly {
            try database.execute(
                """
                PRAGMA journal_mode = WAL;
                PRAGMA synchronous = NORMAL;
                CREATE TABLE IF NOT EXISTS push_tokens (
                    token TEXT PRIMARY KEY NOT NULL,
                    device TEXT,
                    user TEXT,
                    platform TEXT,
                    registered_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX IF NOT EXISTS push_tokens_device ON push_tokens(device);
                CREATE INDEX IF NOT EXISTS push_tokens_user ON push_tokens(user);
                """)
        }
        self.database = Mutex(database)
        self.path = path
    }

    /// Registers `record.token`, or refreshes it (device, user, platform, update time) if it is
    /// known. Answers whether it was new.
    @discardableResult
    public func register(_ record: PushTokenRecord) throws(SQLiteError) -> Bool {
        try database.withLock { (database) throws(SQLiteError) -> Bool in
            try database.transaction { () throws(SQLiteError) -> Bool in
                let known = try database.prepare("SELECT 1 FROM push_tokens WHERE token = ?").rows([.text(record.token)]) { _ in true }
                try database.prepare(
                    """
                    INSERT INTO push_tokens (token, device, user, platform, registered_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT(token) DO UPDATE SET device = excluded.device, user = excluded.user,
                        platform = excluded.platform, updated_at = excluded.updated_at
                    """
                ).run([
                    .text(record.token), Self.optional(record.device), Self.optional(record.user), Self.optional(record.platform),
                    .int(record.registeredAt), .int(record.updatedAt),
                ])
                return known.isEmpty
            }
        }
    }

    /// Drops `token`; answers whether it was registered.
    @discardableResult
    public func remove(token: String) throws(SQLiteError) -> Bool {
        try database.withLock { (database) throws(SQLiteError) -> Bool in
            try database.prepare("DELETE FROM push_tokens WHERE token = ?").run([.text(token)])
            return database.changes > 0
        }
    }

    /// The tokens of a device or a user (or every token when both are nil), newest first.
    public func records(device: String? = nil, user: String? = nil, limit: Int = 10_000) throws(SQLiteError) -> [PushTokenRecord] {
        var conditions: [String] = []
        if device != nil { conditions.append("device = ?") }
        if user != nil { conditions.append("user = ?") }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try database.withLock { (database) throws(SQLiteError) -> [PushTokenRecord] in
            // Built here: what is bound joins the connection's isolation region.
            let values = [device, user].compactMap { $0 }.map { SQLiteStatement.Value.text($0) } + [.int(Int64(limit))]
            return try database.prepare(
                "SELECT token, device, user, platform, registered_at, updated_at FROM push_tokens \(filter) ORDER BY updated_at DESC, token LIMIT ?"
            ).rows(values) { row in
                PushTokenRecord(
                    token: row.text(0),
                    device: row.isNull(1) ? nil : row.text(1),
                    user: row.isNull(2) ? nil : row.text(2),
                    platform: row.isNull(3) ? nil : row.text(3),
                    registeredAt: row.int(4),
                    updatedAt: row.int(5))
            }
        }
    }

    private static func optional(_ text: String?) -> SQLiteStatement.Value {
        text.map { .text($0) } ?? .null
    }
}
