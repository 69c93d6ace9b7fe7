internal import Crypto
internal import Logging
internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardSpool
internal import SwitchyardStore

/// What an at-least-once route with `dedupe:` remembers, besides the seen ids its spool keeps
/// in the transaction that spools each envelope: the key of an arriving envelope
/// (`dedupe.key`), the keys the other routers of a shared store have seen, and when to forget.
///
/// The shared check comes after the spool's commit, so a store that is slow or away costs
/// duplicates (the envelope is delivered), never a loss; after a failure it is skipped for
/// ``sharedPause`` and the route goes on with its own memory. Runs on the route's worker thread.
final class RouteDedupe {
    /// How long the shared check is skipped after the store failed.
    static let sharedPause: Duration = .seconds(10)
    /// How often the keys past the window are forgotten.
    static let cleanupInterval: Duration = .seconds(10)

    private let route: String
    private let template: Template?
    private let window: UInt64
    private let shared: (any SharedDedupeStore)?
    private let logger: Logger
    private var nextCleanup = ContinuousClock.now
    private var sharedPausedUntil: ContinuousClock.Instant?
    private var sharedFailures = 0

    /// The route's dedupe, or nil when it has no `dedupe:`.
    init?(route: PlannedRoute, shared: (any SharedDedupeStore)?, logger: Logger) {
        guard let window = route.declaration.dedupeWindow else { return nil }
        self.route = route.name
        self.template = route.dedupeKey
        self.window = window
        self.shared = shared
        self.logger = logger
    }

    /// Whether seen keys are checked with the other routers too.
    var isShared: Bool { shared != nil }

    /// The `dedupe.key` of an arriving envelope; nil without a key, or when it renders empty
    /// (a missing field): then the envelope id stands for it.
    func key(of envelope: Envelope) -> String? {
        guard let template else { return nil }
        var scope = EnvelopeScope(envelope)
        let key = template.renderText(&scope)
        guard !key.isEmpty else { return nil }
        // A key taken from a hostile payload can be as long as the payload: long ones are
        // remembered by their digest, so the seen tables stay small.
        guard key.utf8.count > 256 else { return "key:" + key }
        return "key-sha256:" + SHA256.hash(data: Array(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Of `keys`, just spooled as new by this router, those another router sharing the store
    /// saw first; none while the store cannot answer.
    func seenElsewhere(_ keys: [String]) -> Set<String> {
        guard let shared, !keys.isEmpty else { return [] }
        if let until = sharedPausedUntil, ContinuousClock.now < until { return [] }
        do {
            let seen = try shared.recordSeen(route: route, keys: keys, time: Clock.nowUnixNanos())
            sharedPausedUntil = nil
            sharedFailures = 0
            return seen
        } catch {
            sharedFailures += 1
            sharedPausedUntil = .now + Self.sharedPause
            if sharedFailures <= 3 || sharedFailures.isMultiple(of: 100) {
                logger.warning(
                    "dedupe keys are not checked with the other routers for \(Self.sharedPause): the shared store did not answer; duplicates are possible meanwhile",
                    metadata: ["route": .string(route), "store": .string(shared.location), "error": .string(error.description)])
            }
            return []
        }
    }

    /// Forgets the keys older than the window, in the spool and the shared store, at most
    /// once per ``cleanupInterval``.
    func forgetOld(in spool: Spool) {
        let now = ContinuousClock.now
        guard now >= nextCleanup else { return }
        nextCleanup = now + Self.cleanupInterval
        let before = Clock.nowUnixNanos() - Int64(clamping: window)
        try? spool.forgetSeen(route: route, before: before)
        if let shared, sharedPausedUntil.map({ now >= $0 }) ?? true { try? shared.forgetSeen(route: route, before: before) }
    }
}
