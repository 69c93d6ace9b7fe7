import Foundation
import NIOCore
import PostgresNIO
import SwitchyardStore

/// The dead letters of every router sharing the database (table `dead_letters`). Each router
/// hands its own over from its spool; any router can list, replay (into its own spool) or drop
/// them. Holds only the session it asks on.
struct PostgresDeadLetters: PostgresTable {
    let session: PostgresSession

    /// How many dead letters one step of ``takeDeadLetters(ids:_:)`` takes and commits.
    static let deadLetterPage = 100

    static let deadLetterColumns = "id, route, sink, envelope_id, type, subject, attempts, error, failed_at, envelope"

    func deadLetters(route: String?, limit: Int) throws(StoreError) -> [DeadLetter] {
        var bindings = PostgresBindings()
        var filter = ""
        if let route {
            bindings.append(route)
            filter = "WHERE route = $1"
        }
        bindings.append(max(0, min(limit, Int(Int64.max))))
        let query = PostgresQuery(
            unsafeSQL: "SELECT \(Self.deadLetterColumns) FROM dead_letters \(filter) ORDER BY id LIMIT $\(bindings.count)",
            binds: bindings)
        return try session.exchange { run in try run(query).map(Self.deadLetter(row:)) }
    }

    func deadLetter(id: Int64) throws(StoreError) -> DeadLetter? {
        let query = PostgresQuery(
            unsafeSQL: "SELECT \(Self.deadLetterColumns) FROM dead_letters WHERE id = $1", binds: Self.bindings(id))
        return try session.exchange { run in try run(query).first.map(Self.deadLetter(row:)) }
    }

    func dropDeadLetters(ids: [Int64]?) throws(StoreError) -> Int {
        try session.exchange { run in
            let deleted =
                try ids.map { ids in try run("DELETE FROM dead_letters WHERE id = ANY(\(ids)) RETURNING id") }
                ?? run("DELETE FROM dead_letters RETURNING id")
            return deleted.count
        }
    }

    func addDeadLetters(_ letters: [DeadLetter]) throws(StoreError) {
        guard !letters.isEmpty else { return }
        try session.inTransaction { run in
            for letter in letters {
                _ = try run(
                    """
                    INSERT INTO dead_letters(route, sink, envelope_id, type, subject, attempts, error, failed_at, envelope)
                    VALUES(\(Self.text(letter.route)), \(Self.text(letter.sink)), \(Self.text(letter.envelopeID)),
                           \(Self.text(letter.type)), \(Self.text(letter.subject)), \(letter.attempts), \(Self.text(letter.error)),
                           \(letter.failedAt), \(ByteBuffer(bytes: letter.envelope)))
                    ON CONFLICT (route, sink, envelope_id, failed_at) DO NOTHING
                    """)
            }
        }
    }

    /// Each page is its own transaction: its rows are locked (`FOR UPDATE SKIP LOCKED`, so
    /// another router taking the same letters passes them by), handed to `keep`, deleted and
    /// committed. A failure after `keep` leaves that page here as well: replayed twice rather
    /// than lost.
    func takeDeadLetters(ids: [Int64]?, _ keep: ([DeadLetter]) throws(StoreError) -> Void) throws(StoreError) -> Int {
        var taken = 0
        var after: Int64 = 0
        while true {
            var bindings = Self.bindings(after)
            var filter = "id > $1"
            if let ids {
                bindings.append(ids)
                filter += " AND id = ANY($2)"
            }
            bindings.append(Self.deadLetterPage)
            let select = PostgresQuery(
                unsafeSQL:
                    "SELECT \(Self.deadLetterColumns) FROM dead_letters WHERE \(filter) ORDER BY id LIMIT $\(bindings.count) FOR UPDATE SKIP LOCKED",
                binds: bindings)
            let page = try session.inTransaction { run in
                let letters = try run(select).map(Self.deadLetter(row:))
                if !letters.isEmpty {
                    try keep(letters)
                    _ = try run("DELETE FROM dead_letters WHERE id = ANY(\(letters.map(\.id)))")
                }
                return letters
            }
            taken += page.count
            guard page.count == Self.deadLetterPage, let last = page.last else { return taken }
            after = last.id
        }
    }

    private static func bindings(_ value: Int64) -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(value)
        return bindings
    }

    private static func deadLetter(row: PostgresRow) throws -> DeadLetter {
        let (id, route, sink, envelopeID, type, subject, attempts, error, failedAt, envelope) = try row.decode(
            (Int64, String, String, String, String, String, Int, String, Int64, ByteBuffer).self)
        return DeadLetter(
            id: id, route: route, sink: sink, envelopeID: envelopeID, type: type, subject: subject, attempts: attempts, error: error,
            failedAt: failedAt, envelope: Array(buffer: envelope))
    }
}
