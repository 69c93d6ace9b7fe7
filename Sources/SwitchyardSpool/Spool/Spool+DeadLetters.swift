internal import SwitchyardSQLite
public import SwitchyardStore

/// The dead letters of the routes this spool serves. They are written by ``Spool/commit(_:)``,
/// in the transaction that takes their envelope out of the spool. With a shared store, the
/// router hands them on (``SharedDeadLetterStore/addDeadLetters(_:)``) and then drops them here.
extension Spool: DeadLetterStore {
    public var location: String { path }

    public func deadLetters(route: String? = nil, limit: Int = 1000) throws(StoreError) -> [DeadLetter] {
        try storing { () throws(SQLiteError) in
            let filter = route == nil ? "" : "WHERE route = ?"
            let values: [SQLiteStatement.Value] = (route.map { [.text($0)] } ?? []) + [.int(Int64(limit))]
            return try database.prepare("SELECT \(Self.deadLetterColumns) FROM dead_letters \(filter) ORDER BY id LIMIT ?")
                .rows(values, Self.deadLetter(row:))
        }
    }

    public func deadLetter(id: Int64) throws(StoreError) -> DeadLetter? {
        try storing { () throws(SQLiteError) in
            try database.prepare("SELECT \(Self.deadLetterColumns) FROM dead_letters WHERE id = ?")
                .rows([.int(id)], Self.deadLetter(row:)).first
        }
    }

    /// Moves the dead letters back into the spool for their route and sink; a running router
    /// picks them up within a second.
    @discardableResult
    public func replayDeadLetters(ids: [Int64]?) throws(StoreError) -> Int {
        try moveDeadLetters(ids: ids, replaying: true)
    }

    @discardableResult
    public func dropDeadLetters(ids: [Int64]?) throws(StoreError) -> Int {
        try moveDeadLetters(ids: ids, replaying: false)
    }

    /// Puts dead letters taken from another store into the spool for their route and sink,
    /// in one transaction; a running router picks them up within a second.
    public func requeue(_ letters: [DeadLetter]) throws(StoreError) {
        try storing { () throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                let insert = try database.prepare("INSERT INTO spool(route, pending, size, envelope) VALUES(?, ?, ?, ?)")
                for letter in letters {
                    try insert.run([.text(letter.route), .text(letter.sink), .int(Int64(letter.envelope.count)), .blob(letter.envelope)])
                }
            }
        }
    }

    private func moveDeadLetters(ids: [Int64]?, replaying: Bool) throws(StoreError) -> Int {
        try storing { () throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                let filter = ids.map { "WHERE id IN (\($0.map(String.init).joined(separator: ",")))" } ?? ""
                if replaying {
                    try database.execute(
                        "INSERT INTO spool(route, pending, size, envelope) SELECT route, sink, length(envelope), envelope FROM dead_letters \(filter) ORDER BY id"
                    )
                }
                try database.execute("DELETE FROM dead_letters \(filter)")
                return database.changes
            }
        }
    }

    private static let deadLetterColumns = "id, route, sink, envelope_id, type, subject, attempts, error, failed_at, envelope"

    private static func deadLetter(row: SQLiteStatement) -> DeadLetter {
        DeadLetter(
            id: row.int(0), route: row.text(1), sink: row.text(2), envelopeID: row.text(3), type: row.text(4), subject: row.text(5),
            attempts: Int(row.int(6)), error: row.text(7), failedAt: row.int(8), envelope: row.blob(9))
    }
}
