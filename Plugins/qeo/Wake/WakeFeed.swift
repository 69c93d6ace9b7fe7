public import Foundation
public import SwitchyardSQLite
import Synchronization

/// What a suspended member's app fetches after a wake-up: the watched state that changed since
/// its cursor, coalesced to the latest value per state key (removals included), kept in SQLite
/// across restarts and bounded per member by count and age.
///
/// Every change gets the next sequence number; a member's cursor is the highest it has seen.
/// When changes a member had not fetched yet are dropped by a bound, its feed says `reset`: the
/// app must read the whole state again instead of trusting the feed.
public final class WakeFeed: Sendable {
    /// One change as fetched.
    public struct Change: Sendable, Equatable {
        /// The QDM name of the state topic.
        public var topic: String
        /// The instance's key members, as canonical JSON.
        public var key: String
        /// The latest value (JSON), or nil once the instance was removed.
        public var value: [UInt8]?
        public var cursor: Int64
    }

    /// A page of a member's feed.
    public struct Page: Sendable, Equatable {
        public var changes: [Change]
        /// The cursor to ask from next (the last change's, or the one asked from).
        public var cursor: Int64
        /// More changes wait beyond this page.
        public var more: Bool
        /// Changes after the cursor asked from were dropped by a bound: read the whole state.
        public var reset: Bool
    }

    /// `database` is used under this lock only.
    private let database: Mutex<SQLiteDatabase>
    private let maximumChanges: Int
    private let maximumAge: TimeInterval

    /// Opens (creating, owner-only) the feed at `path`.
    public init(path: String, maximumChanges: Int, maximumAge: TimeInterval) throws(SQLiteError) {
        let database = try SQLiteDatabase(path: path)
        try database.execute(
            """
            PRAGMA busy_timeout = 5000;
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS wake_changes (
                user INTEGER NOT NULL,
                topic TEXT NOT NULL,
                key TEXT NOT NULL,
                seq INTEGER NOT NULL,
                removed INTEGER NOT NULL,
                value BLOB,
                changed_at INTEGER NOT NULL,
                PRIMARY KEY (user, topic, key)
            );
            CREATE INDEX IF NOT EXISTS wake_changes_seq ON wake_changes(user, seq);
            CREATE TABLE IF NOT EXISTS wake_members (user INTEGER PRIMARY KEY, pruned_through INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS wake_sequence (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
            INSERT OR IGNORE INTO wake_sequence (id, last) VALUES (1, 0);
            """)
        self.database = Mutex(database)
        self.maximumChanges = maximumChanges
        self.maximumAge = maximumAge
    }

    /// Records that `topic`'s instance `key` now holds `value` (nil: removed) for each of
    /// `users` whose feed does not already hold exactly that, in one transaction; returns the
    /// change's cursor and the users it was recorded for, or nil when it changed nothing (a
    /// state readers see again after a restart or a rediscovery wakes nobody).
    @discardableResult
    public func record(
        users: [UInt64], topic: String, key: String, value: [UInt8]?, now: Date = Date()
    ) throws(SQLiteError) -> (cursor: Int64, users: [UInt64])? {
        try database.withLock { (database) throws(SQLiteError) -> (cursor: Int64, users: [UInt64])? in
            try database.transaction { () throws(SQLiteError) -> (cursor: Int64, users: [UInt64])? in
                let current = try database.prepare("SELECT removed, value FROM wake_changes WHERE user = ? AND topic = ? AND key = ?")
                var changed: [UInt64] = []
                for user in users {
                    let held = try current.rows([.int(Int64(bitPattern: user)), .text(topic), .text(key)]) { row in
                        row.int(0) == 1 ? nil : row.blob(1)
                    }
                    if let held = held.first, held == value { continue }
                    changed.append(user)
                }
                guard !changed.isEmpty else { return nil }
                try database.prepare("UPDATE wake_sequence SET last = last + 1 WHERE id = 1").run([])
                let cursor = try database.prepare("SELECT last FROM wake_sequence WHERE id = 1").rows([]) { $0.int(0) }.first ?? 0
                let upsert = try database.prepare(
                    """
                    INSERT INTO wake_changes (user, topic, key, seq, removed, value, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (user, topic, key) DO UPDATE SET
                        seq = excluded.seq, removed = excluded.removed, value = excluded.value, changed_at = excluded.changed_at
                    """)
                for user in changed {
                    try upsert.run([
                        .int(Int64(bitPattern: user)), .text(topic), .text(key), .int(cursor), .int(value == nil ? 1 : 0),
                        value.map { .blob($0) } ?? .null, .int(Int64(now.timeIntervalSince1970)),
                    ])
                    try prune(user: user, now: now, in: database)
                }
                return (cursor, changed)
            }
        }
    }

    /// Up to `limit` changes for `user` after `cursor`, oldest first.
    public func page(user: UInt64, after cursor: Int64, limit: Int, now: Date = Date()) throws(SQLiteError) -> Page {
        try database.withLock { (database) throws(SQLiteError) -> Page in
            try database.transaction { () throws(SQLiteError) -> Page in
                try prune(user: user, now: now, in: database)
                let member = Int64(bitPattern: user)
                let pruned =
                    try database.prepare("SELECT pruned_through FROM wake_members WHERE user = ?").rows([.int(member)]) { $0.int(0) }
                    .first ?? 0
                var changes = try database.prepare(
                    "SELECT topic, key, removed, value, seq FROM wake_changes WHERE user = ? AND seq > ? ORDER BY seq LIMIT ?"
                ).rows([.int(member), .int(cursor), .int(Int64(limit) + 1)]) { row in
                    Change(topic: row.text(0), key: row.text(1), value: row.int(2) == 1 ? nil : row.blob(3), cursor: row.int(4))
                }
                let more = changes.count > limit
                if more { changes.removeLast() }
                let last = try database.prepare("SELECT last FROM wake_sequence WHERE id = 1").rows([]) { $0.int(0) }.first ?? 0
                // Behind what was dropped, or ahead of this feed (another store): start over.
                let reset = cursor < pruned || cursor > last
                let next = changes.last?.cursor ?? (reset ? min(max(cursor, pruned), last) : cursor)
                return Page(changes: changes, cursor: next, more: more, reset: reset)
            }
        }
    }

    /// Drops `user`'s changes beyond the count and age bounds, remembering the highest cursor
    /// dropped.
    private func prune(user: UInt64, now: Date, in database: SQLiteDatabase) throws(SQLiteError) {
        let member = Int64(bitPattern: user)
        let oldest = Int64(now.timeIntervalSince1970 - maximumAge)
        let dropped =
            try database.prepare(
                """
                SELECT max(seq) FROM wake_changes WHERE user = ?1 AND (changed_at < ?2 OR seq <= (
                    SELECT seq FROM wake_changes WHERE user = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?3))
                """
            ).rows([.int(member), .int(oldest), .int(Int64(maximumChanges))]) { $0.isNull(0) ? nil : $0.int(0) }.first ?? nil
        guard let dropped else { return }
        try database.prepare(
            """
            DELETE FROM wake_changes WHERE user = ?1 AND (changed_at < ?2 OR seq <= ?3)
            """
        ).run([.int(member), .int(oldest), .int(dropped)])
        try database.prepare(
            """
            INSERT INTO wake_members (user, pruned_through) VALUES (?1, ?2)
            ON CONFLICT (user) DO UPDATE SET pruned_through = max(pruned_through, excluded.pruned_through)
            """
        ).run([.int(member), .int(dropped)])
    }
}
