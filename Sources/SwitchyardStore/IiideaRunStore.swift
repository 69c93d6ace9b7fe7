/// Where iiideas' runs are recorded (the history the admin API and the console show): the
/// router's spool by default, or a PostgreSQL database several routers share, where the runs of
/// every router are seen from each.
public protocol IiideaRunStore: AnyObject, Sendable {
    /// Where the runs live, for logs and errors.
    var location: String { get }

    /// Records the start of a run. Keeps the newest `keep` runs of its iiidea, this one
    /// included, so the history never holds more than `keep` even while runs are under way.
    func beginRun(_ run: IiideaRun, keep: Int) throws(StoreError)

    /// Records the end of a run: the piece that ended it and its output or error. Keeps the
    /// newest `keep` runs of the iiidea.
    func endRun(_ id: String, iiidea: String, piece: IiideaRun.Piece, output: String?, error: String?, keep: Int) throws(StoreError)

    /// The newest runs first, of one iiidea or of all, with that outcome when one is given;
    /// `offset` skips that many (paging). At most 10,000.
    func runs(iiidea: String?, outcome: IiideaRun.Outcome?, limit: Int, offset: Int) throws(StoreError) -> [IiideaRun]

    /// The run `id`, if it is kept.
    func run(id: String) throws(StoreError) -> IiideaRun?

    /// How many runs each iiidea started since `unixNanos`.
    func runCounts(since unixNanos: Int64) throws(StoreError) -> [String: Int]
}

extension IiideaRunStore {
    /// The newest runs first (at most `limit`), of one iiidea or of all.
    public func runs(iiidea: String? = nil, outcome: IiideaRun.Outcome? = nil, limit: Int = 100) throws(StoreError) -> [IiideaRun] {
        try runs(iiidea: iiidea, outcome: outcome, limit: limit, offset: 0)
    }
}

/// One run of an iiidea.
public struct IiideaRun: Sendable, Equatable {
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
}

extension IiideaRun.Outcome {
    /// The runs of this outcome as an SQL condition on the `iiidea_runs` table, the same in
    /// both engines' dialects (what ``IiideaRun/outcome`` computes).
    public var condition: String {
        switch self {
        case .succeeded: "ended_at IS NOT NULL AND error IS NULL"
        case .failed: "error IS NOT NULL"
        case .running: "ended_at IS NULL"
        }
    }
}
