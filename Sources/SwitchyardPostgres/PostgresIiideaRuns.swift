import Foundation
import PostgresNIO
import SwitchyardStore

/// iiideas' run history in PostgreSQL (table `iiidea_runs`): the runs of every router sharing
/// the database, kept to the newest `iiideas.history` per iiidea across them. Holds only the
/// session it asks on.
struct PostgresIiideaRuns: PostgresTable {
    let session: PostgresSession

    static let runColumns = "run_id, iiidea_id, trigger_envelope_id, started_at, ended_at, ended_piece, output, error, input"

    func beginRun(_ run: IiideaRun, keep: Int) throws(StoreError) {
        try session.inTransaction { execute in
            _ = try execute(
                """
                INSERT INTO iiidea_runs(run_id, iiidea_id, trigger_envelope_id, started_at, input)
                VALUES(\(Self.text(run.id)), \(Self.text(run.iiidea)), \(Self.text(run.triggerEnvelopeID)), \(run.startedAt),
                       \(Self.text(run.input)))
                """)
            _ = try execute(Self.prune(run.iiidea, keep: keep))
        }
    }

    func endRun(_ id: String, iiidea: String, piece: IiideaRun.Piece, output: String?, error: String?, keep: Int)
        throws(StoreError)
    {
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        try session.inTransaction { run in
            _ = try run(
                """
                UPDATE iiidea_runs SET ended_at = \(now), ended_piece = \(piece.rawValue), output = \(Self.text(output)),
                    error = \(Self.text(error))
                WHERE run_id = \(id)
                """)
            _ = try run(Self.prune(iiidea, keep: keep))
        }
    }

    /// Deletes all but the newest `keep` runs of `iiidea`.
    private static func prune(_ iiidea: String, keep: Int) -> PostgresQuery {
        """
        DELETE FROM iiidea_runs WHERE iiidea_id = \(iiidea) AND run_id NOT IN
            (SELECT run_id FROM iiidea_runs WHERE iiidea_id = \(iiidea) ORDER BY started_at DESC, run_id DESC LIMIT \(max(0, keep)))
        """
    }

    func runs(iiidea: String?, outcome: IiideaRun.Outcome?, limit: Int, offset: Int) throws(StoreError) -> [IiideaRun] {
        var bindings = PostgresBindings()
        var conditions: [String] = []
        if let iiidea {
            bindings.append(iiidea)
            conditions.append("iiidea_id = $1")
        }
        if let outcome { conditions.append(outcome.condition) }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        bindings.append(max(0, min(limit, 10_000)))
        bindings.append(max(0, offset))
        let query = PostgresQuery(
            unsafeSQL:
                "SELECT \(Self.runColumns) FROM iiidea_runs \(filter) ORDER BY started_at DESC, run_id DESC LIMIT $\(bindings.count - 1) OFFSET $\(bindings.count)",
            binds: bindings)
        return try session.exchange { run in try run(query).map(Self.run(row:)) }
    }

    func run(id: String) throws(StoreError) -> IiideaRun? {
        var bindings = PostgresBindings()
        bindings.append(id)
        let query = PostgresQuery(unsafeSQL: "SELECT \(Self.runColumns) FROM iiidea_runs WHERE run_id = $1", binds: bindings)
        return try session.exchange { run in try run(query).first.map(Self.run(row:)) }
    }

    func runCounts(since unixNanos: Int64) throws(StoreError) -> [String: Int] {
        try session.exchange { run in
            var counts: [String: Int] = [:]
            for row in try run("SELECT iiidea_id, COUNT(*) FROM iiidea_runs WHERE started_at >= \(unixNanos) GROUP BY iiidea_id") {
                let (id, count) = try row.decode((String, Int).self)
                counts[id] = count
            }
            return counts
        }
    }

    private static func run(row: PostgresRow) throws -> IiideaRun {
        let (id, iiidea, trigger, startedAt, endedAt, piece, output, error, input) = try row.decode(
            (String, String, String, Int64, Int64?, String?, String?, String?, String?).self)
        return IiideaRun(
            id: id, iiidea: iiidea, triggerEnvelopeID: trigger, startedAt: startedAt, endedAt: endedAt,
            endedPiece: piece.flatMap(IiideaRun.Piece.init(rawValue:)), output: output, error: error, input: input)
    }
}
