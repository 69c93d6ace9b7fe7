public import SwitchyardStore

/// The dead letters of every router sharing the database (``PostgresDeadLetters``). Each router
/// hands its own over from its spool; any router can list, replay (into its own spool) or drop
/// them.
extension PostgresStore: SharedDeadLetterStore {
    public func deadLetters(route: String?, limit: Int) throws(StoreError) -> [DeadLetter] {
        try sharedDeadLetters.deadLetters(route: route, limit: limit)
    }

    public func deadLetter(id: Int64) throws(StoreError) -> DeadLetter? { try sharedDeadLetters.deadLetter(id: id) }

    public func dropDeadLetters(ids: [Int64]?) throws(StoreError) -> Int { try sharedDeadLetters.dropDeadLetters(ids: ids) }

    public func addDeadLetters(_ letters: [DeadLetter]) throws(StoreError) { try sharedDeadLetters.addDeadLetters(letters) }

    /// Each page is its own transaction: a failure after `keep` leaves that page here as well
    /// (replayed twice rather than lost).
    public func takeDeadLetters(ids: [Int64]?, _ keep: ([DeadLetter]) throws(StoreError) -> Void) throws(StoreError) -> Int {
        try sharedDeadLetters.takeDeadLetters(ids: ids, keep)
    }
}
