import Dispatch
import Foundation
internal import Logging
public import SwitchyardConfig
public import SwitchyardCore
public import SwitchyardRuntime
internal import SwitchyardSpool
public import SwitchyardStore

/// A router's iiideas: their switches, "run now", their service pieces, their run feed and
/// the OAuth connections their http pieces call with. It owns that state apart from the
/// router's dispatch and delivery, which run its chains through ``IiideaEngine``, and reads the
/// running graph through ``RunningGraph``.
public final class RouterIiideas: IiideaEngine {
    /// Switches iiideas and talks to their plugin pieces.
    let controller: IiideaController
    /// The OAuth 2.0 connections of the route files (`oauth:`), their tokens and refreshes.
    public let oauth: OAuthConnections
    /// Every iiidea run as it starts and ends, for live views.
    public let runFeed = RunFeed()
    let running: RunningGraph
    /// The store routers share (`store.url`), when there is one.
    private let sharedStore: (any SharedStore)?
    private let logger: Logger
    /// Where switches and OAuth changes stored by other routers are followed, one at a time.
    private let follower = DispatchQueue(label: "switchyard.iiidea-switches")

    /// The iiideas of `router`, which runs them from now on: make them before it starts.
    public init(router: Router) {
        running = router.running
        sharedStore = router.sharedStore
        logger = router.logger
        oauth = OAuthConnections(logger: router.logger)
        controller = IiideaController(logger: router.logger, oauth: oauth)
        // A connection made later makes the pieces refused for it ask again.
        oauth.whenConnected { [weak self] name in
            self?.askAgain(becauseOf: "connection \(name)") { $0.contains("connect \(name) first") }
        }
        router.install(iiideas: self)
    }

    /// The store of iiideas' switches: the shared one, else the spool.
    var switchStore: (any IiideaSwitchStore)? { sharedStore ?? running.spool?.store }
    /// The store of iiideas' run history: the shared one, else the spool.
    public var runStore: (any IiideaRunStore)? { sharedStore ?? running.spool?.store }
    /// The store of obtained iiideas and preference overrides: the shared one, else the spool.
    public var catalogStore: (any IiideaCatalogStore)? { sharedStore ?? running.spool?.store }
    /// The store's catalog of the running graph (`iiidea_templates:`).
    public var templates: [IiideaTemplate] { running.graph.plan.iiideaTemplates }

    /// The chain of each route of every iiidea of `plan` (trigger, and remote when declared),
    /// each iiidea's switch read from the store (or kept from before a reload).
    package func chains(of plan: GraphPlan) throws(RouterError) -> [(route: PlannedRoute, chain: any RouteChain)] {
        guard !plan.iiideas.isEmpty else { return [] }
        guard let spool = running.spool else {
            throw RouterError(instance: "iiideas", reason: "iiideas need the spool database, and none is open")
        }
        // The shared store when there is one, else the spool's: read once for every chain.
        let switches: any IiideaSwitchStore = sharedStore ?? spool.store
        let runs: any IiideaRunStore = sharedStore ?? spool.store
        let saved: [String: Bool]
        do {
            saved = try switches.iiideaSwitches()
        } catch {
            throw RouterError(instance: "iiideas", reason: "cannot read their state: \(error)")
        }
        var chains: [(PlannedRoute, any RouteChain)] = []
        for iiidea in plan.iiideas {
            let state = controller.state(of: iiidea, saved: saved)
            for (planned, remote) in [(iiidea.route, false)] + (iiidea.remoteRoute.map { [($0, true)] } ?? []) {
                let chain = IiideaChain(
                    planned: iiidea, state: state, remote: remote, store: runs, keep: plan.iiideaHistory, iiideas: self)
                chains.append((planned, chain))
            }
        }
        return chains
    }

    /// Asks the pieces of the enabled iiideas left inactive for a reason `matches` again, soon
    /// and on another thread (see ``IiideaController/askAgain(becauseOf:_:graph:)``).
    package func askAgain(becauseOf cause: String, _ matches: @escaping @Sendable (String) -> Bool) {
        controller.askAgain(becauseOf: cause, matches) { [weak running] in running?.graph }
    }

    /// The host's piece_done: a service piece's answer.
    package func pieceDone(token: UInt64, status: Int32, output: [UInt8]) {
        controller.pieceDone(token: token, status: status, output: output)
    }

    /// Runs iiidea `id` once with `input` as the trigger's output, as a person's "run now"
    /// does: the trigger's condition is skipped, the run is recorded like any other. Returns
    /// the id of the envelope that starts it (the run's `trigger_envelope_id`).
    public func run(_ id: String, input: JSONValue) throws(RouterError) -> String {
        let graph = running.graph
        guard let entry = controller.list(graph).first(where: { $0.iiidea.id == id }) else {
            throw RouterError(iiidea: id, reason: "there is no iiidea with this id")
        }
        guard entry.enabled else { throw RouterError(iiidea: id, reason: "the iiidea is disabled") }
        if let reason = entry.inactiveReason { throw RouterError(iiidea: id, reason: "the iiidea is inactive: \(reason)") }
        guard let (chain, route) = graph.chainRoute(of: IiideaChain.self, where: { $0.planned.id == id && !$0.remote }) else {
            throw RouterError(iiidea: id, reason: "the iiidea has no running chain")
        }
        let trigger = entry.iiidea.declaration.trigger.value
        let declared = graph.plan.instances.first { $0.name == trigger.instance }?.ports.first { $0.name == trigger.port }?.types.first
        let type = declared.flatMap { $0 == "*" ? nil : $0 } ?? BuiltinTypes.json
        // The sample stands for the trigger's output: it must be what the trigger could emit.
        let violations = graph.plan.types[type]?.schema.violations(of: input) ?? []
        if !violations.isEmpty {
            throw RouterError(
                iiidea: id,
                reason: "the sample input is not a \(type): " + violations.prefix(5).map(\.description).joined(separator: "; "))
        }
        let envelope = Envelope(
            type: type, source: "console", body: input.serializedBytes(),
            trace: [trigger.instance])
        // Expected before it is queued: the route's thread may take it at once.
        chain.state.expectManualRun(envelope.id)
        guard route.enqueue(envelope) else {
            _ = chain.state.isManualRun(envelope.id)
            throw RouterError(iiidea: id, reason: "the iiidea's queue is full; try again")
        }
        return envelope.id
    }

    /// The JSON Schemas of an iiidea's preferences: its service piece's (built-in or a plugin's
    /// service port) and its action port's, nil where the piece declares none.
    public func preferenceSchemas(of iiidea: IiideaDeclaration) -> (service: JSONValue?, action: JSONValue?) {
        let instances = running.graph.plan.instances
        func port(_ reference: PortReference) -> PortDeclaration? {
            instances.first { $0.name == reference.instance }?.ports.first { $0.name == reference.port }
        }
        let service: JSONValue? =
            BuiltinPieces.preferenceSchema(of: iiidea.piece.value) ?? PortReference(iiidea.piece.value).flatMap { port($0)?.preferences }
        return (service, port(iiidea.action.value)?.preferences)
    }

    /// Enables or disables iiidea `id` for good (the choice is stored and survives restarts).
    /// Enabling asks its pieces; one may refuse, leaving it enabled but inactive (see
    /// ``IiideaState/inactiveReason``).
    public func set(_ id: String, enabled: Bool) throws(RouterError) {
        try controller.set(id, enabled: enabled, in: running.graph, store: switchStore)
    }

    /// ``set(_:enabled:)`` from async code, on a thread of its own: storing the switch
    /// may wait on a remote database, and async callers (the admin port's handlers) run on the
    /// few cooperative threads every other task needs.
    public func setOnOwnThread(_ id: String, enabled: Bool) async throws(RouterError) {
        try await onOwnThread(named: "iiidea switch") { () throws(RouterError) in try self.set(id, enabled: enabled) }
    }

    /// Follows a switch another router stored in the shared store (`id`; nil: any may have
    /// changed). Safe to call from any thread: the store is read, and the iiideas enabled or
    /// disabled, on a queue of their own.
    public func followSwitch(_ id: String?) {
        guard let sharedStore else { return }
        follower.async { [self] in
            do {
                controller.follow(try sharedStore.iiideaSwitches(), in: running.graph)
            } catch {
                logger.error("iiidea switches: cannot read them", metadata: ["error": .string("\(error)")])
            }
        }
    }

    /// Every iiidea with its switch and, when a piece refused to enable, why it is inactive.
    public var list: [(iiidea: PlannedIiidea, enabled: Bool, inactiveReason: String?)] { controller.list(running.graph) }

    /// Enables the pieces of every enabled iiidea (after start and after a reload; plugins
    /// see enable again for an iiidea they already serve and should accept it quietly).
    package func activateEnabled() { controller.activateEnabled(in: running.graph) }

    package func reconcile(from old: CompiledGraph, to new: CompiledGraph) { controller.reconcile(from: old, to: new) }

    package func stop() { oauth.stop() }

    /// Gives the OAuth connections the plan's declarations and the store their tokens live in:
    /// the shared one when there is one (the sealing key must then be the same on every
    /// router), else the spool, with `oauth.key` beside it.
    package func adopt(_ plan: GraphPlan) {
        let spool = running.spool
        let keyDirectory = spool.map { URL(fileURLWithPath: $0.path).deletingLastPathComponent().path }
        oauth.adopt(plan.oauth, store: sharedStore ?? spool?.store, keyDirectory: keyDirectory, shared: sharedStore != nil)
    }

    /// Follows a connection another router connected, refreshed or removed in the shared store
    /// (`name`; nil: any may have changed). Safe to call from any thread: the store is read on
    /// the queue that follows switches.
    public func followOAuthChange(_ name: String?) {
        guard sharedStore != nil, !running.isDraining else { return }
        follower.async { [self] in oauth.storedTokensChanged(name) }
    }
}
