public import SwitchyardStore

/// The dead letters of several routers, seen from one of them: listed, shown and dropped in
/// the shared store; replayed into this router's spool (a running router picks them up within
/// a second). ``handOver()`` moves this router's own dead letters from its spool to the store.
public final class SharedDeadLetters: DeadLetterStore {
    /// The store the routers share.
    public let shared: any SharedDeadLetterStore
    /// This router's spool.
    public let spool: Spool

    /// How many dead letters one step of ``handOver()`` moves.
    static let handOverPage = 100

    /// Dead letters of `shared`, replayed into `spool`.
    public init(shared: any SharedDeadLetterStore, spool: Spool) {
        self.shared = shared
        self.spool = spool
    }

    public var location: String { shared.location }

    public func deadLetters(route: String?, limit: Int) throws(StoreError) -> [DeadLetter] {
        try shared.deadLetters(route: route, limit: limit)
    }

    public func deadLetter(id: Int64) throws(StoreError) -> DeadLetter? {
        try shared.deadLetter(id: id)
    }

    public func replayDeadLetters(ids: [Int64]?) throws(StoreError) -> Int {
        try shared.takeDeadLetters(ids: ids) { letters throws(StoreError) in try spool.requeue(letters) }
    }

    public func dropDeadLetters(ids: [Int64]?) throws(StoreError) -> Int {
        try shared.dropDeadLetters(ids: ids)
    }

    /// Moves every dead letter of the spool to the shared store, a page at a time: each page
    /// is committed there before it is deleted here, so a crash in between hands it over twice
    /// (which the store ignores) and never loses it. Returns how many moved.
    @discardableResult
    public func handOver() throws(StoreError) -> Int {
        var moved = 0
        while true {
            let letters = try spool.deadLetters(route: nil, limit: Self.handOverPage)
            guard !letters.isEmpty else { return moved }
            try shared.addDeadLetters(letters)
            try spool.dropDeadLetters(ids: letters.map(\.id))
            moved += letters.count
        }
    }
}
