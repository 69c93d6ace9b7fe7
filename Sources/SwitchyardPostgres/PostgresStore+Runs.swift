public import SwitchyardStore

/// iiideas' run history (``PostgresIiideaRuns``): the runs of every router sharing the
/// database, kept to the newest `iiideas.history` per iiidea across them.
extension PostgresStore: IiideaRunStore {
    public func beginRun(_ run: IiideaRun, keep: Int) throws(StoreError) { try runHistory.beginRun(run, keep: keep) }

    public func endRun(_ id: String, iiidea: String, piece: IiideaRun.Piece, output: String?, error: String?, keep: Int)
        throws(StoreError)
    {
        try runHistory.endRun(id, iiidea: iiidea, piece: piece, output: output, error: error, keep: keep)
    }

    public func runs(iiidea: String?, outcome: IiideaRun.Outcome?, limit: Int, offset: Int) throws(StoreError) -> [IiideaRun] {
        try runHistory.runs(iiidea: iiidea, outcome: outcome, limit: limit, offset: offset)
    }

    public func run(id: String) throws(StoreError) -> IiideaRun? { try runHistory.run(id: id) }

    public func runCounts(since unixNanos: Int64) throws(StoreError) -> [String: Int] { try runHistory.runCounts(since: unixNanos) }
}
