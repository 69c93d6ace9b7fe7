internal import Crypto
internal import Logging
internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardSpool
internal import SwitchyardStore

/// What an at-least-once route with `dedupe:` remembers, besides the seen ids its spool keeps
/// in the transaction that spools each envelope: the key of an arriving envelope
/// (`dedupe.key`), the keys the routers of a shared store have delivered, and when to forget.
///
/// The shared check comes after the spool's commit and drops only what another router has
/// delivered (a key is shared once its envelope is done, see ``delivered(_:)``): a router that
/// dies with an envelope spooled and undelivered makes no other router drop its copy. Two
/// routers that receive one key at the same moment may both deliver it. A store that is slow
/// or away costs duplicates, never a loss; after a failure it is skipped for ``sharedPause``
/// and the route goes on with its own memory. Runs on the route's worker thread.
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
    /// Keys of envelopes delivered since the last ``shareDelivered()``.
    private var deliveredKeys: [String] = []

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

    /// Of `keys`, just spooled as new by this router, those a router sharing the store has
    /// delivered already; none while the store cannot answer.
    func seenElsewhere(_ keys: [String]) -> Set<String> {
        guard let shared, !keys.isEmpty else { return [] }
        return askShared(shared) { () throws(StoreError) in try shared.delivered(route: route, keys: keys) } ?? []
    }

    /// Notes that the envelope spooled under `key` is done with (delivered, or given up on
    /// and kept as a dead letter): shared with the next ``shareDelivered()``.
    func delivered(_ key: String) {
        if shared != nil { deliveredKeys.append(key) }
    }

    /// Records the keys delivered since the last call in the shared store (once per worker
    /// turn). Keys that cannot be recorded are let go: a redelivery of them is then delivered
    /// again, a duplicate and not a loss.
    func shareDelivered() {
        guard let shared, !deliveredKeys.isEmpty else { return }
        defer { deliveredKeys.removeAll(keepingCapacity: true) }
        let keys = deliveredKeys
        _ = askShared(shared) { () throws(StoreError) in try shared.recordDelivered(route: route, keys: keys, time: Clock.nowUnixNanos()) }
    }

    /// Runs one call to the shared store unless it failed lately; nil when skipped or failed.
    private func askShared<Result>(_ shared: any SharedDedupeStore, _ call: () throws(StoreError) -> Result) -> Result? {
        if let until = sharedPausedUntil, ContinuousClock.now < until { return nil }
        do {
            let result = try call()
            sharedPausedUntil = nil
            sharedFailures = 0
            return result
        } catch {
            sharedFailures += 1
            sharedPausedUntil = .now + Self.sharedPause
            if sharedFailures <= 3 || sharedFailures.isMultiple(of: 100) {
                logger.warning(
                    "dedupe keys are not shared with the other routers for \(Self.sharedPause): the shared store did not answer; duplicates are possible meanwhile",
                    metadata: ["route": .string(route), "store": .string(shared.location), "error": .string(error.description)])
            }
            return nil
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
