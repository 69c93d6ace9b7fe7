public import SwitchyardStore

/// iiideas' run history, in the spool's database file (``SQLiteIiideaRuns``).
extension SQLiteStore: IiideaRunStore {
    /// Records the start of a run. Keeps the newest `keep` runs of the iiidea, this one
    /// included, so the history never holds more than `keep` even while runs are under way.
    public func beginRun(_ run: IiideaRun, keep: Int) throws(StoreError) { try runHistory.beginRun(run, keep: keep) }

    /// Records the end of a run: the piece that ended it and its output or error. Keeps the
    /// newest `keep` runs of the iiidea.
    public func endRun(_ id: String, iiidea: String, piece: IiideaRun.Piece, output: String?, error: String?, keep: Int)
        throws(StoreError)
    {
        try runHistory.endRun(id, iiidea: iiidea, piece: piece, output: output, error: error, keep: keep)
    }

    /// The newest runs first, of one iiidea or of all, with that outcome when one is given;
    /// `offset` skips that many (paging).
    public func runs(iiidea: String?, outcome: IiideaRun.Outcome?, limit: Int, offset: Int) throws(StoreError) -> [IiideaRun] {
        try runHistory.runs(iiidea: iiidea, outcome: outcome, limit: limit, offset: offset)
    }

    /// The run `id`, if it is kept.
    public func run(id: String) throws(StoreError) -> IiideaRun? { try runHistory.run(id: id) }

    /// How many runs each iiidea started since `unixNanos`.
    public func runCounts(since unixNanos: Int64) throws(StoreError) -> [String: Int] { try runHistory.runCounts(since: unixNanos) }
}
