public import SwitchyardStore

/// Work for one ``Spool/commit(_:)`` of one route.
public struct SpoolBatch: Sendable {
    /// A newly accepted envelope.
    public struct Insert: Sendable {
        /// The envelope id (the deduplication key).
        public var envelopeID: String
        /// The sinks (`instance.port`) still to deliver to.
        public var pending: [String]
        /// The envelope in binary form.
        public var envelope: [UInt8]

        /// Creates an insert.
        public init(envelopeID: String, pending: [String], envelope: [UInt8]) {
            self.envelopeID = envelopeID
            self.pending = pending
            self.envelope = envelope
        }
    }

    /// A spooled envelope whose sinks or attempts changed.
    public struct Update: Sendable {
        /// Its sequence number.
        public var sequence: Int64
        /// The sinks still to deliver to.
        public var pending: [String]
        /// Failed attempts so far.
        public var attempts: Int
        /// The last failure.
        public var lastError: String?

        /// Creates an update.
        public init(sequence: Int64, pending: [String], attempts: Int, lastError: String?) {
            self.sequence = sequence
            self.pending = pending
            self.attempts = attempts
            self.lastError = lastError
        }
    }

    /// The route.
    public var route: String
    /// When (nanoseconds since the epoch): the time stamp of seen ids and dead letters.
    public var time: Int64
    /// Skip inserts whose envelope id the route has already seen.
    public var deduplicate: Bool
    /// New envelopes, in order.
    public var inserts: [Insert] = []
    /// Changed envelopes.
    public var updates: [Update] = []
    /// Deliveries given up on (their id, route and time are the batch's, given when it is
    /// committed).
    public var deadLetters: [DeadLetter] = []
    /// Envelopes done with.
    public var deletes: [Int64] = []

    /// An empty batch.
    public init(route: String, time: Int64, deduplicate: Bool) {
        self.route = route
        self.time = time
        self.deduplicate = deduplicate
    }

    /// Whether there is nothing to write.
    public var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deadLetters.isEmpty && deletes.isEmpty }
}
