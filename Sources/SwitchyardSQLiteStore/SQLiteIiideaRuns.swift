internal import SwitchyardCore
internal import SwitchyardSQLite
internal import SwitchyardStore

/// iiideas' run history, in the spool's database file (table `iiidea_runs`), kept to the newest
/// `iiideas.history` per iiidea. Holds only the file it shares with the spool and the rest of
/// the store; the table is its whole state.
struct SQLiteIiideaRuns {
    /// The file the table is in.
    let file: SQLiteFile

    /// Records the start of a run. Keeps the newest `keep` runs of the iiidea, this one
    /// included, so the history never holds more than `keep` even while runs are under way.
    func beginRun(_ run: IiideaRun, keep: Int) throws(StoreError) {
        try file.storing { database throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                try database.prepare(
                    "INSERT INTO iiidea_runs(run_id, iiidea_id, trigger_envelope_id, started_at, input) VALUES(?, ?, ?, ?, ?)"
                ).run([
                    .text(run.id), .text(run.iiidea), .text(run.triggerEnvelopeID), .int(run.startedAt),
                    run.input.map { .text($0) } ?? .null,
                ])
                try Self.pruneRuns(of: run.iiidea, keep: keep, in: database)
            }
        }
    }

    /// Records the end of a run: the piece that ended it and its output or error. Keeps the
    /// newest `keep` runs of the iiidea.
    func endRun(_ id: String, iiidea: String, piece: IiideaRun.Piece, output: String?, error: String?, keep: Int)
        throws(StoreError)
    {
        try file.storing { database throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                try database.prepare("UPDATE iiidea_runs SET ended_at = ?, ended_piece = ?, output = ?, error = ? WHERE run_id = ?")
                    .run([
                        .int(Clock.nowUnixNanos()), .text(piece.rawValue), output.map { .text($0) } ?? .null,
                        error.map { .text($0) } ?? .null, .text(id),
                    ])
                try Self.pruneRuns(of: iiidea, keep: keep, in: database)
            }
        }
    }

    /// Deletes all but the newest `keep` runs of `iiidea`; the caller holds the lock.
    private static func pruneRuns(of iiidea: String, keep: Int, in database: SQLiteDatabase) throws(SQLiteError) {
        try database.prepare(
            """
            DELETE FROM iiidea_runs WHERE iiidea_id = ?1 AND run_id NOT IN
                (SELECT run_id FROM iiidea_runs WHERE iiidea_id = ?1 ORDER BY started_at DESC, run_id DESC LIMIT ?2)
            """
        ).run([.text(iiidea), .int(Int64(keep))])
    }

    /// The newest runs first, of one iiidea or of all, with that outcome when one is given;
    /// `offset` skips that many (paging).
    func runs(iiidea: String?, outcome: IiideaRun.Outcome?, limit: Int, offset: Int) throws(StoreError)
        -> [IiideaRun]
    {
        try file.storing { database throws(SQLiteError) in
            var conditions: [String] = []
            var values: [SQLiteStatement.Value] = []
            if let iiidea {
                conditions.append("iiidea_id = ?")
                values.append(.text(iiidea))
            }
            if let outcome { conditions.append(outcome.condition) }
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            values += [.int(Int64(max(0, min(limit, 10_000)))), .int(Int64(max(0, offset)))]
            return try database.prepare(
                "SELECT \(Self.runColumns) FROM iiidea_runs \(filter) ORDER BY started_at DESC, run_id DESC LIMIT ? OFFSET ?"
            ).rows(values, Self.run(row:))
        }
    }

    /// The run `id`, if it is kept.
    func run(id: String) throws(StoreError) -> IiideaRun? {
        try file.storing { database throws(SQLiteError) in
            try database.prepare("SELECT \(Self.runColumns) FROM iiidea_runs WHERE run_id = ?").rows([.text(id)], Self.run(row:))
                .first
        }
    }

    /// How many runs each iiidea started since `unixNanos`.
    func runCounts(since unixNanos: Int64) throws(StoreError) -> [String: Int] {
        try file.storing { database throws(SQLiteError) in
            var counts: [String: Int] = [:]
            let rows = try database.prepare("SELECT iiidea_id, COUNT(*) FROM iiidea_runs WHERE started_at >= ? GROUP BY iiidea_id")
                .rows([.int(unixNanos)]) { ($0.text(0), Int($0.int(1))) }
            for (id, count) in rows { counts[id] = count }
            return counts
        }
    }

    /// The columns ``run(row:)`` reads, in its order.
    private static let runColumns = "run_id, iiidea_id, trigger_envelope_id, started_at, ended_at, ended_piece, output, error, input"

    /// A run from a row of ``runColumns``.
    private static func run(row: SQLiteStatement) -> IiideaRun {
        IiideaRun(
            id: row.text(0), iiidea: row.text(1), triggerEnvelopeID: row.text(2), startedAt: row.int(3),
            endedAt: row.isNull(4) ? nil : row.int(4), endedPiece: row.isNull(5) ? nil : IiideaRun.Piece(rawValue: row.text(5)),
            output: row.isNull(6) ? nil : row.text(6), error: row.isNull(7) ? nil : row.text(7), input: row.isNull(8) ? nil : row.text(8))
    }
}
