/// Where dead letters (deliveries given up on) are kept for a person to list, show, replay or
/// drop: the router's spool by default, or a PostgreSQL database several routers share, where
/// the dead letters of every router are visible from each.
public protocol DeadLetterStore: AnyObject, Sendable {
    /// Where the dead letters live, for logs and errors.
    var location: String { get }

    /// Up to `limit` dead letters, oldest first, optionally of one route.
    func deadLetters(route: String?, limit: Int) throws(StoreError) -> [DeadLetter]

    /// One dead letter, or nil when there is none with that id.
    func deadLetter(id: Int64) throws(StoreError) -> DeadLetter?

    /// Hands dead letters (`ids`, or all when nil) back to their route and sink with a fresh
    /// attempt count. Returns how many went back.
    func replayDeadLetters(ids: [Int64]?) throws(StoreError) -> Int

    /// Deletes dead letters (`ids`, or all when nil) for good. Returns how many went.
    func dropDeadLetters(ids: [Int64]?) throws(StoreError) -> Int
}

/// The dead letters of several routers in one place. A router first writes a dead letter to
/// its own spool, in the transaction that takes the envelope out of the spool (so a crash
/// loses neither), then hands it here with ``addDeadLetters(_:)`` and only then forgets its
/// own copy; a crash in between hands it over twice, which ``addDeadLetters(_:)`` ignores.
public protocol SharedDeadLetterStore: AnyObject, Sendable {
    /// Where the dead letters live, for logs and errors.
    var location: String { get }

    /// Up to `limit` dead letters, oldest first, optionally of one route.
    func deadLetters(route: String?, limit: Int) throws(StoreError) -> [DeadLetter]

    /// One dead letter, or nil when there is none with that id.
    func deadLetter(id: Int64) throws(StoreError) -> DeadLetter?

    /// Deletes dead letters (`ids`, or all when nil) for good. Returns how many went.
    func dropDeadLetters(ids: [Int64]?) throws(StoreError) -> Int

    /// Stores dead letters handed over by a router; committed when it returns. A letter
    /// already stored (same route, sink, envelope id and time) is not stored again.
    func addDeadLetters(_ letters: [DeadLetter]) throws(StoreError)

    /// Takes dead letters (`ids`, or all when nil) out: `keep` gets them, page by page, and
    /// must have made them durable elsewhere when it returns; only then are they deleted. A
    /// letter another router is taking at the same moment is skipped, not taken twice.
    /// Returns how many were taken.
    func takeDeadLetters(ids: [Int64]?, _ keep: ([DeadLetter]) throws(StoreError) -> Void) throws(StoreError) -> Int
}

/// What several routers share: the plugins' state, the iiideas' switches, runs, obtained
/// iiideas and preferences, OAuth connections, the dead letters, the routes' dedupe keys and
/// the holds on listeners that cannot be shared.
public typealias SharedStore = PluginStateStore & IiideaSwitchStore & IiideaRunStore & IiideaCatalogStore & OAuthTokenStore
    & SharedDeadLetterStore & ListenerHolds & SharedDedupeStore

/// An envelope a sink kept failing on.
public struct DeadLetter: Sendable, Equatable {
    /// The dead letter's id in its store (for show, replay, drop).
    public var id: Int64
    /// The route it came through.
    public var route: String
    /// The sink (`instance.port`) that failed.
    public var sink: String
    /// The envelope id.
    public var envelopeID: String
    /// The envelope type.
    public var type: String
    /// The envelope subject.
    public var subject: String
    /// Attempts made.
    public var attempts: Int
    /// The last failure.
    public var error: String
    /// When it was given up on, nanoseconds since the epoch.
    public var failedAt: Int64
    /// The envelope in binary form.
    public var envelope: [UInt8]

    /// A dead letter not stored yet: its id, route and time are given when it is (a spool batch
    /// takes its route and time from the batch).
    public init(sink: String, envelopeID: String, type: String, subject: String, attempts: Int, error: String, envelope: [UInt8]) {
        self.init(
            id: 0, route: "", sink: sink, envelopeID: envelopeID, type: type, subject: subject, attempts: attempts, error: error,
            failedAt: 0, envelope: envelope)
    }

    /// Creates a dead letter.
    public init(
        id: Int64, route: String, sink: String, envelopeID: String, type: String, subject: String, attempts: Int, error: String,
        failedAt: Int64, envelope: [UInt8]
    ) {
        self.id = id
        self.route = route
        self.sink = sink
        self.envelopeID = envelopeID
        self.type = type
        self.subject = subject
        self.attempts = attempts
        self.error = error
        self.failedAt = failedAt
        self.envelope = envelope
    }
}
