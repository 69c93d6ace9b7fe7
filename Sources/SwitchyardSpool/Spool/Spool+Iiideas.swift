public import SwitchyardCore
public import SwitchyardSQLite
public import SwitchyardStore

/// iiidea activation state and run history, in the same database as the spool.
extension Spool {
    static let createIiideaTables = """
        CREATE TABLE IF NOT EXISTS iiidea_state(
            id TEXT PRIMARY KEY,
            enabled INTEGER NOT NULL,
            changed_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS iiidea_runs(
            run_id TEXT PRIMARY KEY,
            iiidea_id TEXT NOT NULL,
            trigger_envelope_id TEXT NOT NULL,
            started_at INTEGER NOT NULL,
            ended_at INTEGER,
            ended_piece TEXT,
            output TEXT,
            error TEXT,
            input TEXT
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS iiidea_runs_by_iiidea ON iiidea_runs(iiidea_id, started_at);
        """

    /// The enabled flags users set (through the admin API or the CLI), by iiidea id.
    public func iiideaStates() throws(SQLiteError) -> [String: Bool] {
        try locked { () throws(SQLiteError) in
            var states: [String: Bool] = [:]
            for (id, enabled) in try database.prepare("SELECT id, enabled FROM iiidea_state").rows([], { ($0.text(0), $0.int(1) != 0) }) {
                states[id] = enabled
            }
            return states
        }
    }

    /// Remembers that iiidea `id` is enabled or disabled, across restarts.
    public func setIiidea(_ id: String, enabled: Bool) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try database.prepare("INSERT OR REPLACE INTO iiidea_state(id, enabled, changed_at) VALUES(?, ?, ?)")
                .run([.text(id), .int(enabled ? 1 : 0), .int(Clock.nowUnixNanos())])
        }
    }

    /// Records the start of a run. Keeps the newest `keep` runs of the iiidea, this one
    /// included, so the history never holds more than `keep` even while runs are under way.
    public func beginRun(_ run: IiideaRun, keep: Int) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                try database.prepare(
                    "INSERT INTO iiidea_runs(run_id, iiidea_id, trigger_envelope_id, started_at, input) VALUES(?, ?, ?, ?, ?)"
                ).run([
                    .text(run.id), .text(run.iiidea), .text(run.triggerEnvelopeID), .int(run.startedAt),
                    run.input.map { .text($0) } ?? .null,
                ])
                try pruneRuns(of: run.iiidea, keep: keep)
            }
        }
    }

    /// Records the end of a run: the piece that ended it and its output or error. Keeps the
    /// newest `keep` runs of the iiidea.
    public func endRun(_ id: String, iiidea: String, piece: IiideaRun.Piece, output: String?, error: String?, keep: Int)
        throws(SQLiteError)
    {
        try locked { () throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                try database.prepare("UPDATE iiidea_runs SET ended_at = ?, ended_piece = ?, output = ?, error = ? WHERE run_id = ?")
                    .run([
                        .int(Clock.nowUnixNanos()), .text(piece.rawValue), output.map { .text($0) } ?? .null,
                        error.map { .text($0) } ?? .null, .text(id),
                    ])
                try pruneRuns(of: iiidea, keep: keep)
            }
        }
    }

    /// Deletes all but the newest `keep` runs of `iiidea`; the caller holds the lock.
    private func pruneRuns(of iiidea: String, keep: Int) throws(SQLiteError) {
        try database.prepare(
            """
            DELETE FROM iiidea_runs WHERE iiidea_id = ?1 AND run_id NOT IN
                (SELECT run_id FROM iiidea_runs WHERE iiidea_id = ?1 ORDER BY started_at DESC, run_id DESC LIMIT ?2)
            """
        ).run([.text(iiidea), .int(Int64(keep))])
    }

    /// The newest runs first, of one iiidea or of all, with that outcome when one is given;
    /// `offset` skips that many (paging).
    public func runs(iiidea: String? = nil, outcome: IiideaRun.Outcome? = nil, limit: Int = 100, offset: Int = 0) throws(SQLiteError)
        -> [IiideaRun]
    {
        try locked { () throws(SQLiteError) in
            var conditions: [String] = []
            var values: [SQLiteStatement.Value] = []
            if let iiidea {
                conditions.append("iiidea_id = ?")
                values.append(.text(iiidea))
            }
            switch outcome {
            case .succeeded?: conditions.append("ended_at IS NOT NULL AND error IS NULL")
            case .failed?: conditions.append("error IS NOT NULL")
            case .running?: conditions.append("ended_at IS NULL")
            case nil: break
            }
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            values += [.int(Int64(max(0, min(limit, 10_000)))), .int(Int64(max(0, offset)))]
            return try database.prepare(
                "SELECT \(IiideaRun.columns) FROM iiidea_runs \(filter) ORDER BY started_at DESC, run_id DESC LIMIT ? OFFSET ?"
            ).rows(values, IiideaRun.init(row:))
        }
    }

    /// The run `id`, if it is kept.
    public func run(id: String) throws(SQLiteError) -> IiideaRun? {
        try locked { () throws(SQLiteError) in
            try database.prepare("SELECT \(IiideaRun.columns) FROM iiidea_runs WHERE run_id = ?").rows([.text(id)], IiideaRun.init(row:))
                .first
        }
    }

    /// How many runs each iiidea started since `unixNanos`.
    public func runCounts(since unixNanos: Int64) throws(SQLiteError) -> [String: Int] {
        try locked { () throws(SQLiteError) in
            var counts: [String: Int] = [:]
            let rows = try database.prepare("SELECT iiidea_id, COUNT(*) FROM iiidea_runs WHERE started_at >= ? GROUP BY iiidea_id")
                .rows([.int(unixNanos)]) { ($0.text(0), Int($0.int(1))) }
            for (id, count) in rows { counts[id] = count }
            return counts
        }
    }
}

/// One run of an iiidea.
public struct IiideaRun: Sendable {
    /// The piece a run reached last.
    public enum Piece: String, Sendable {
        case trigger, service, action
    }

    /// How a run went, as the run history filters it.
    public enum Outcome: String, Sendable, CaseIterable {
        /// Ended with the action's input and no error.
        case succeeded
        /// Ended with an error (at the service or the action).
        case failed
        /// Not ended yet.
        case running
    }

    /// The columns ``init(row:)`` reads, in its order.
    static let columns = "run_id, iiidea_id, trigger_envelope_id, started_at, ended_at, ended_piece, output, error, input"

    /// A run from a row of ``columns``.
    init(row: SQLiteStatement) {
        self.init(
            id: row.text(0), iiidea: row.text(1), triggerEnvelopeID: row.text(2), startedAt: row.int(3),
            endedAt: row.isNull(4) ? nil : row.int(4), endedPiece: row.isNull(5) ? nil : Piece(rawValue: row.text(5)),
            output: row.isNull(6) ? nil : row.text(6), error: row.isNull(7) ? nil : row.text(7), input: row.isNull(8) ? nil : row.text(8))
    }

    /// How this run went.
    public var outcome: Outcome { error != nil ? .failed : endedAt == nil ? .running : .succeeded }

    /// The run id (a ULID).
    public var id: String
    /// The iiidea.
    public var iiidea: String
    /// The envelope that triggered it.
    public var triggerEnvelopeID: String
    /// Start, nanoseconds since the epoch.
    public var startedAt: Int64
    /// End, if it ended.
    public var endedAt: Int64?
    /// The piece that ended it.
    public var endedPiece: Piece?
    /// The action's input (the service output) as JSON text, when the run succeeded.
    public var output: String?
    /// Why it failed.
    public var error: String?
    /// The trigger's output (the service's input) as JSON text.
    public var input: String?

    /// Creates a run record.
    public init(
        id: String, iiidea: String, triggerEnvelopeID: String, startedAt: Int64, endedAt: Int64? = nil, endedPiece: Piece? = nil,
        output: String? = nil, error: String? = nil, input: String? = nil
    ) {
        self.input = input
        self.id = id
        self.iiidea = iiidea
        self.triggerEnvelopeID = triggerEnvelopeID
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.endedPiece = endedPiece
        self.output = output
        self.error = error
    }

    /// The run as the API and the CLI print it.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "run_id": .string(id), "iiidea": .string(iiidea), "trigger_envelope_id": .string(triggerEnvelopeID),
            "started_at": .string(Clock.rfc3339(unixNanos: startedAt)),
        ]
        if let endedAt { object["ended_at"] = .string(Clock.rfc3339(unixNanos: endedAt)) }
        if let endedPiece { object["ended_piece"] = .string(endedPiece.rawValue) }
        if let output { object["output"] = (try? JSONValue(parsing: Array(output.utf8))) ?? .string(output) }
        if let error { object["error"] = .string(error) }
        if let input { object["input"] = (try? JSONValue(parsing: Array(input.utf8))) ?? .string(input) }
        object["outcome"] = .string(outcome.rawValue)
        if let endedAt { object["duration_ms"] = .double(Double(endedAt - startedAt) / 1e6) }
        return .object(object)
    }
}

extension Spool: IiideaSwitchStore {
    public func iiideaSwitches() throws(StoreError) -> [String: Bool] {
        do {
            return try iiideaStates()
        } catch {
            throw StoreError(location: path, detail: error.description)
        }
    }

    public func setIiideaSwitch(_ id: String, enabled: Bool) throws(StoreError) {
        do {
            try setIiidea(id, enabled: enabled)
        } catch {
            throw StoreError(location: path, detail: error.description)
        }
    }
}
