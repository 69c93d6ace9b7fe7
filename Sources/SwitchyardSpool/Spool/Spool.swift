import Foundation
public import SwitchyardCore
public import SwitchyardSQLite
public import SwitchyardSQLiteStore
internal import SwitchyardStore

/// The durable spool: a SQLite database (WAL; `synchronous=FULL`, or `NORMAL` with
/// `spool.sync: normal`) holding every envelope an
/// at-least-once route has accepted and not yet seen acknowledged by all its sinks, the dead
/// letters, the ids seen within each route's deduplication window, and the iiideas' state and
/// run history.
///
/// One connection serves the whole process; calls are serialised by a lock, and each
/// ``commit(_:)`` is one transaction, so a route worker writes a whole batch with one WAL
/// append and (with `sync: full`) one fsync: a group commit. Another process (the CLI) may open the same file at the same time.
public final class Spool: @unchecked Sendable {
    // `database` and the statements are only touched with the file's lock held.
    let database: SQLiteDatabase
    /// The file and its lock, shared with ``store``.
    public let file: SQLiteFile
    /// The SQLite engine of the store, in the same file.
    public let store: SQLiteStore
    private let insertEnvelope: SQLiteStatement
    private let insertSeen: SQLiteStatement
    private let deleteEnvelope: SQLiteStatement
    private let updateEnvelope: SQLiteStatement
    private let insertDeadLetter: SQLiteStatement
    private let writeProbe: SQLiteStatement

    /// The database file.
    public let path: String

    /// Whether commits are on the disk (`full`) or with the operating system (`normal`).
    public let sync: SpoolSync
    /// The router's claim on the spool (``Spool/init(path:sync:owner:)`` with `owner`), held
    /// while this spool is open.
    private let ownership: SpoolOwnership?

    /// Opens or creates the spool at `path`, creating its directory (0700) and file (0600)
    /// if needed.
    ///
    /// With `owner` (a router), the spool is claimed for this process: a second router on
    /// the same file is refused instead of both delivering the same envelopes. The file is
    /// checked (`PRAGMA quick_check`): a damaged spool is never replaced or written to; the
    /// error names the file and `switchyard spool recover`.
    public init(path: String, sync: SpoolSync = .full, owner: Bool = false) throws(SpoolOpenError) {
        self.path = path
        self.sync = sync
        do {
            database = try SQLiteDatabase(path: path)
            ownership = owner ? try SpoolOwnership(claiming: path) : nil
            // The timeout first: switching to WAL needs a lock another process (a `dlq`
            // command, a router that is still closing the file) may hold for a moment.
            try database.execute(
                "PRAGMA busy_timeout=5000; PRAGMA journal_mode=WAL; PRAGMA synchronous=\(sync == .full ? "FULL" : "NORMAL");")
            if owner { try SpoolRecovery.checkIntegrity(of: database, path: path) }
            do {
                try SQLiteSchema.migrate(database, path: path)
            } catch .sqlite(let error) {
                throw error
            } catch {
                throw SpoolOpenError.failed(path: path, detail: error.description)
            }
            insertEnvelope = try database.prepare("INSERT INTO spool(route, pending, size, envelope) VALUES(?, ?, ?, ?)")
            insertSeen = try database.prepare("INSERT OR IGNORE INTO seen(route, envelope_id, at) VALUES(?, ?, ?)")
            deleteEnvelope = try database.prepare("DELETE FROM spool WHERE seq = ?")
            updateEnvelope = try database.prepare("UPDATE spool SET pending = ?, attempts = ?, last_error = ? WHERE seq = ?")
            insertDeadLetter = try database.prepare(
                "INSERT INTO dead_letters(route, sink, envelope_id, type, subject, attempts, error, failed_at, envelope) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)"
            )
            writeProbe = try database.prepare("INSERT OR REPLACE INTO spool_probe(id, at) VALUES(1, ?)")
        } catch {
            throw SpoolOpenError.from(error, path: path)
        }
        file = SQLiteFile(path: path, database: database)
        store = SQLiteStore(file: file)
    }

    /// Commits one small write: whether the spool can take writes again after it could not
    /// (a full disk, an I/O error, a read-only file system).
    public func probeWrite() throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in try writeProbe.run([.int(Clock.nowUnixNanos())]) }
        }
    }

    func locked<Result>(_ body: () throws(SQLiteError) -> Result) throws(SQLiteError) -> Result {
        try file.locked { _ throws(SQLiteError) in try body() }
    }

    /// `body` under the file's lock, its SQLite error worded as the store's.
    func storing<Result>(_ body: () throws(SQLiteError) -> Result) throws(StoreError) -> Result {
        try file.storing { _ throws(SQLiteError) in try body() }
    }

    /// Applies a batch in one transaction. Returns, per insert, its sequence number, or
    /// `nil` when deduplication found its envelope id already seen.
    @discardableResult
    public func commit(_ batch: SpoolBatch) throws(SQLiteError) -> [Int64?] {
        try locked { () throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                var sequences: [Int64?] = []
                sequences.reserveCapacity(batch.inserts.count)
                for insert in batch.inserts {
                    if batch.deduplicate {
                        try insertSeen.run([.text(batch.route), .text(insert.envelopeID), .int(batch.time)])
                        if database.changes == 0 {
                            sequences.append(nil)
                            continue
                        }
                    }
                    try insertEnvelope.run([
                        .text(batch.route), .text(insert.pending.joined(separator: "\n")), .int(Int64(insert.envelope.count)),
                        .blob(insert.envelope),
                    ])
                    sequences.append(database.lastInsertRowID)
                }
                for update in batch.updates {
                    try updateEnvelope.run([
                        .text(update.pending.joined(separator: "\n")), .int(Int64(update.attempts)),
                        update.lastError.map { .text($0) } ?? .null,
                        .int(update.sequence),
                    ])
                }
                for letter in batch.deadLetters {
                    try insertDeadLetter.run([
                        .text(batch.route), .text(letter.sink), .text(letter.envelopeID), .text(letter.type), .text(letter.subject),
                        .int(Int64(letter.attempts)), .text(letter.error), .int(batch.time), .blob(letter.envelope),
                    ])
                }
                for sequence in batch.deletes { try deleteEnvelope.run([.int(sequence)]) }
                return sequences
            }
        }
    }

    /// Up to `limit` spooled envelopes of `route` after sequence number `after`, oldest first.
    public func load(route: String, after: Int64, limit: Int) throws(SQLiteError) -> [SpooledEnvelope] {
        try locked { () throws(SQLiteError) in
            try database.prepare("SELECT seq, pending, attempts, envelope FROM spool WHERE route = ? AND seq > ? ORDER BY seq LIMIT ?")
                .rows([.text(route), .int(after), .int(Int64(limit))]) { row in
                    SpooledEnvelope(
                        sequence: row.int(0), pending: row.text(1).split(separator: "\n").map(String.init), attempts: Int(row.int(2)),
                        envelope: row.blob(3))
                }
        }
    }

    /// How many envelopes, and how many bytes of them, `route` has in the spool.
    public func backlog(route: String) throws(SQLiteError) -> (count: Int, bytes: Int) {
        try locked { () throws(SQLiteError) in
            let rows = try database.prepare("SELECT count(*), coalesce(sum(size), 0) FROM spool WHERE route = ?")
                .rows([.text(route)]) { (Int($0.int(0)), Int($0.int(1))) }
            return rows.first ?? (0, 0)
        }
    }

    /// Forgets ids seen by `route` before `time` (nanoseconds since the epoch).
    public func forgetSeen(route: String, before time: Int64) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try database.prepare("DELETE FROM seen WHERE route = ? AND at < ?").run([.text(route), .int(time)])
        }
    }
}
