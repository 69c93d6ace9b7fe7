public import SwitchyardCore

/// A route from YAML `routes:`.
public struct RouteDeclaration: Sendable {
    /// The route name (given, or `file#index`).
    public var name: String
    /// Where the route starts.
    public var location: SourceLocation
    /// The source port.
    public var from: Located<PortReference>
    /// The sink ports (fan-out).
    public var to: [Located<PortReference>]
    /// The condition text.
    public var when: Located<String>?
    /// `map:`: a mapping of body fields to templates (nested mappings and lists allowed).
    public var map: ConfigNode?
    /// `template:`: a text body.
    public var template: Located<String>?
    /// `type:`: the type of the envelope the route produces.
    public var outputType: Located<String>?
    /// `content_type:` of the produced envelope.
    public var contentType: Located<String>?
    /// Queue capacity in envelopes.
    public var queueSize: Int
    /// Full-queue policy.
    public var onFull: OnFull
    /// `loop: allow` lets envelopes re-enter instances already in their trace.
    public var allowLoops: Bool
    /// `delivery:`.
    public var delivery: Delivery = .atMostOnce
    /// `retry:` (at-least-once routes).
    public var retry: RetryPolicy = .standard
    /// `dedupe:`: envelopes whose key was seen within this window (nanoseconds) are dropped.
    public var dedupeWindow: UInt64?
    /// `dedupe.key`: a template over the arriving envelope whose text is the key (a message id
    /// in the payload, an MQTT 5 user property); without one the key is the envelope id.
    public var dedupeKey: Located<String>?
    /// `queue.spool_limit`: bytes the route may hold in the spool before it blocks.
    public var spoolLimit: Int = ConfigLoader.defaultSpoolLimit
    /// `script:`: Lua run on each envelope after `when:`, instead of `map:`/`template:`.
    public var script: ScriptDeclaration?
}

/// What a route queue does when it is full.
public enum OnFull: String, Sendable, CaseIterable {
    /// The source is told to wait (emit returns "full") until there is room.
    case block
    /// The oldest queued envelope is dropped (and counted) to make room.
    case dropOldest = "drop_oldest"
    /// The backlog goes to the durable spool on disk, up to the route's spool limit; past it
    /// the route blocks. Needs `delivery: at-least-once`.
    case spool
}

/// What a route promises about each envelope it accepts.
public enum Delivery: String, Sendable, CaseIterable {
    /// Delivered once or lost (on a crash, a full `drop_oldest` queue or a failed sink).
    case atMostOnce = "at-most-once"
    /// Written to the durable spool before the source is acknowledged; delivered (again, after
    /// a crash) until every sink acknowledges, retried with backoff, dead-lettered past the
    /// retry limit.
    case atLeastOnce = "at-least-once"
}

/// How an at-least-once route retries a sink that failed.
public struct RetryPolicy: Sendable, Equatable {
    /// Deliveries tried before the envelope becomes a dead letter (the first one included).
    public var attempts: Int
    /// The pause after the first failure, in nanoseconds; it doubles after each failure.
    public var backoff: UInt64
    /// The longest pause, in nanoseconds.
    public var maxBackoff: UInt64

    /// The defaults: 8 attempts, 200 ms doubling up to 1 minute.
    public static let standard = RetryPolicy(attempts: 8, backoff: 200_000_000, maxBackoff: 60_000_000_000)

    /// Creates a policy.
    public init(attempts: Int, backoff: UInt64, maxBackoff: UInt64) {
        self.attempts = attempts
        self.backoff = backoff
        self.maxBackoff = maxBackoff
    }

    /// The pause before attempt `failures + 1`: exponential, with full jitter over its upper
    /// half so that many envelopes failing at once do not retry in lockstep.
    public func pause(afterFailures failures: Int, random: Double) -> UInt64 {
        let exponent = min(max(failures - 1, 0), 40)
        let ceiling = min(Double(backoff) * pow2(exponent), Double(maxBackoff))
        return UInt64(ceiling * (0.5 + 0.5 * min(max(random, 0), 1)))
    }

    private func pow2(_ exponent: Int) -> Double { Double(sign: .plus, exponent: exponent, significand: 1) }
}
