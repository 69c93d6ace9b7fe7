import Foundation
internal import Logging
internal import SwitchyardABI
internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardRuntime
internal import SwitchyardScript
internal import SwitchyardSpool
internal import SwitchyardStore
import Synchronization

/// An iiidea's switch: shared by the runners of its trigger and remote routes, kept across
/// reloads.
public final class IiideaState: Sendable {
    /// The iiidea's id.
    public let id: String
    private let enabled: Atomic<Bool>

    init(id: String, enabled: Bool) {
        self.id = id
        self.enabled = Atomic(enabled)
        // A new iiidea's routes start before its pieces are asked to enable: until they answer
        // it must not run (a piece may yet refuse).
        refusal = Mutex(enabled ? Self.pending : nil)
    }

    /// The reason an enabled iiidea shows until its pieces have answered `piece_enable`.
    static let pending = "its pieces are being enabled"

    private let refusal: Mutex<String?>
    /// Broadcast when the pieces' answer replaces ``pending``; a trigger that fired meanwhile
    /// waits on it (``waitWhilePending(atMost:)``).
    private let answered = NSCondition()

    /// Whether the user wants it on.
    public var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// Why it is inactive although enabled: the message of the piece that refused to enable.
    public var inactiveReason: String? { refusal.withLock { $0 } }

    /// Whether runs start: enabled, and every piece accepted.
    public var isActive: Bool { isEnabled && inactiveReason == nil }

    func set(enabled value: Bool) {
        enabled.store(value, ordering: .relaxed)
        answered.withLock { answered.broadcast() }
    }

    func set(inactiveReason reason: String?) {
        refusal.withLock { $0 = reason }
        answered.withLock { answered.broadcast() }
    }

    /// Waits, at most `limit`, while the pieces have not answered `piece_enable` yet. A source
    /// started just before the pieces are asked (a fast timer at start, or a trigger firing as
    /// the user enables the iiidea) would otherwise have its first envelopes dropped as if the
    /// iiidea were off. The bound covers a start that failed before the pieces were asked.
    func waitWhilePending(atMost limit: Duration) {
        let deadline = Date(timeIntervalSinceNow: Double(limit.components.seconds))
        answered.withLock {
            while inactiveReason == Self.pending, isEnabled { if !answered.wait(until: deadline) { return } }
        }
    }

    /// The plugin pieces that accepted `piece_enable` (or have no such entry) since the iiidea
    /// was last enabled: the ones `piece_disable` goes to.
    private let acceptedPieces = Mutex<[PortReference]>([])

    func set(acceptedPieces pieces: [PortReference]) { acceptedPieces.withLock { $0 = pieces } }

    func takeAcceptedPieces() -> [PortReference] {
        acceptedPieces.withLock { pieces in
            defer { pieces = [] }; return pieces
        }
    }

    /// Envelopes a person queued with "run now": they run without the trigger's condition.
    private let manualRuns = Mutex<Set<String>>([])

    func expectManualRun(_ envelopeID: String) { manualRuns.withLock { _ = $0.insert(envelopeID) } }

    func isManualRun(_ envelopeID: String) -> Bool { manualRuns.withLock { $0.remove(envelopeID) != nil } }
}

/// What an iiidea route runs: its iiidea, whose switch, and where runs are recorded.
struct IiideaChain: RouteChain {
    let planned: PlannedIiidea
    let state: IiideaState
    /// Whether this is the chain's remote half (a trigger another router's instance emits).
    let remote: Bool
    let store: any IiideaRunStore
    /// How many runs each iiidea keeps in its history.
    let keep: Int
    /// The router's iiideas, whose run feed, OAuth connections and plugin pieces a run uses
    /// (unowned: they hold the running graph, which holds this chain).
    unowned let iiideas: RouterIiideas

    func makeWorker(for route: ChainRoute) -> any RouteChainWorker { IiideaRunner(chain: self, route: route) }
}

/// The worker of an iiidea route: runs trigger → service → action for each envelope, in order,
/// and records every run (start, end, the piece that ended it, output or error). The route's
/// worker thread makes it and is the only one to touch it (it is not `Sendable`).
final class IiideaRunner: RouteChainWorker {
    let chain: IiideaChain
    let route: ChainRoute
    /// Runs whose action has not acknowledged yet: delivery id → run id and output.
    private var pending: [UInt64: (run: String, output: String)] = [:]

    init(chain: IiideaChain, route: ChainRoute) {
        self.chain = chain
        self.route = route
    }

    var planned: PlannedIiidea { chain.planned }
    var state: IiideaState { chain.state }
    var remote: Bool { chain.remote }
    var store: any IiideaRunStore { chain.store }
    var keep: Int { chain.keep }

    private var logger: Logger { route.logger }

    func run(_ trigger: Envelope) {
        var scope = EnvelopeScope(trigger)
        if !state.isManualRun(trigger.id), let condition = route.plan.condition, !condition.evaluate(&scope) {
            route.count(.filtered)
            return
        }
        state.waitWhilePending(atMost: .seconds(10))
        guard state.isActive else {
            route.count(.filtered)
            return
        }
        let runID = ULID.next()
        var input = trigger
        if remote {
            // A remote run: the named iiidea runs with the message's data as the trigger output.
            let data = trigger.decodedBody()["data"] ?? .object([:])
            input.body = data.serializedBytes()
            input.contentType = "application/json"
        }
        record { () throws(StoreError) in
            try store.beginRun(
                IiideaRun(
                    id: runID, iiidea: planned.id, triggerEnvelopeID: trigger.id, startedAt: Clock.nowUnixNanos(),
                    input: input.decodedBody().serialized()),
                keep: keep)
        }
        chain.iiideas.runFeed.publish(iiidea: planned.id, run: runID)
        let output: Envelope
        do {
            output = try service(input)
        } catch {
            end(runID, .service, error: "\(error)")
            return
        }
        var action = output
        action.headers["iiidea.id"] = planned.id
        action.headers["iiidea.run"] = runID
        if let preferences = planned.actionPreferences {
            var outputScope = EnvelopeScope(output)
            let rendered = preferences.render(&outputScope)
            // No preferences (a settings form saved an empty object) sends no header, as before.
            if rendered != .object([:]) { action.headers["iiidea.preferences"] = rendered.serialized() }
        }
        // Acting on the instance that emitted the trigger (a board's button and its display) is
        // the chain's purpose, not a loop; an envelope that already went round is still stopped.
        let actsOnTrigger =
            route.actionInstance.map { sink in action.trace.last == sink && action.trace.filter { $0 == sink }.count == 1 } ?? false
        guard actsOnTrigger || route.admitsAction(action) else {
            end(runID, .action, error: "loop stopped: the action's instance is already in the envelope's trace")
            return
        }
        let deliveryID = route.nextDeliveryID()
        pending[deliveryID] = (runID, output.decodedBody().serialized())
        let status = route.deliverToAction(action, deliveryID: deliveryID)
        if status == SY_OK {
            route.count(.sent)
        } else {
            pending.removeValue(forKey: deliveryID)
            route.count(.refused)
            end(runID, .action, error: "the action refused the delivery (status \(status))")
        }
    }

    /// The service piece: the trigger output in, the action input out.
    private func service(_ input: Envelope) throws(ServiceError) -> Envelope {
        switch planned.service {
        case .pass:
            return input
        case .template, .map:
            var scope = EnvelopeScope(input)
            return planned.route.transform.map { $0.apply(&scope) } ?? input
        case .script:
            switch route.runScript(input) {
            case nil: return input
            case .failure(let failure):
                throw ServiceError(description: "the script failed (\(failure.kind.rawValue)): \(failure.message)")
            case .success(let outputs):
                guard outputs.count == 1, let output = outputs.first else {
                    throw ServiceError(
                        description: outputs.isEmpty
                            ? "the script sent nothing (it returned nil or false), so the action does not run"
                            : "a script service piece sends one envelope to the action; it sent \(outputs.count)")
                }
                return output
            }
        case .delay(let nanos):
            guard route.pause(for: .nanoseconds(Int64(clamping: nanos))) else {
                throw ServiceError(description: "the router stopped during the delay (its drain timed out)")
            }
            return input
        case .http(let request, let timeout, let policy, let connection):
            var scope = EnvelopeScope(input)
            var rendered = request.render(&scope)
            if let connection {
                // The connection's token, never the iiidea's own header of that name.
                let token = try chain.iiideas.oauth.accessToken(connection)
                var headers = rendered["headers"]?.objectValue ?? [:]
                headers = headers.filter { $0.key.lowercased() != "authorization" }
                headers["Authorization"] = .string("Bearer " + token)
                if case .object(var members) = rendered {
                    members["headers"] = .object(headers)
                    rendered = .object(members)
                }
            }
            var output = input
            do {
                output.body = try HTTPPiece.call(rendered, timeout: timeout, policy: policy).serializedBytes()
            } catch {
                // Counted per iiidea: switchyard_plugin_metric{instance="iiidea:ID", name="http_refused_total"}.
                if error.refused {
                    route.countMetric("http_refused_total", instance: "iiidea:" + planned.id)
                }
                throw error
            }
            output.type = BuiltinTypes.json
            output.contentType = "application/json"
            return output
        case .plugin(let port, let preferences, let timeout):
            var output = input
            output.body = try chain.iiideas.controller.executePiece(
                port, iiidea: planned.id, input: input.decodedBody(), preferences: preferences, timeout: timeout,
                in: chain.iiideas.running.graph
            ).serializedBytes()
            output.type = BuiltinTypes.json
            output.contentType = "application/json"
            return output
        }
    }

    func acknowledged(deliveryID: UInt64, outcome: Int32, reason: String) {
        guard let (run, output) = pending.removeValue(forKey: deliveryID) else { return }
        if outcome == SY_OUTCOME_OK {
            route.count(.delivered)
            end(run, .action, output: output)
        } else {
            route.count(.failed)
            end(run, .action, error: reason.isEmpty ? "the action failed" : reason)
        }
    }

    private func end(_ run: String, _ piece: IiideaRun.Piece, output: String? = nil, error: String? = nil) {
        if let error {
            logger.warning(
                "iiidea run failed",
                metadata: ["iiidea": .string(planned.id), "run": .string(run), "piece": .string(piece.rawValue), "error": .string(error)])
        }
        record { () throws(StoreError) in
            try store.endRun(run, iiidea: planned.id, piece: piece, output: output, error: error, keep: keep)
        }
        chain.iiideas.runFeed.publish(iiidea: planned.id, run: run)
    }

    private func record(_ write: () throws(StoreError) -> Void) {
        do {
            try write()
        } catch {
            logger.error("iiidea run history not written", metadata: ["iiidea": .string(planned.id), "error": .string(error.description)])
        }
    }
}
