public import CoreMetrics
import Foundation
public import Logging
internal import SwitchyardABI
internal import SwitchyardConfig
internal import SwitchyardCore
public import SwitchyardSpool
public import SwitchyardStore
import Synchronization

/// Runs a ``GraphPlan``: creates and starts the plugin instances, moves envelopes along the
/// routes, and shuts down in order (quiesce sources, drain queues, stop, destroy).
public final class Router: Sendable {
    package let logger: Logger
    /// Creates, starts, reconfigures and stops the instances.
    let supervisor: InstanceSupervisor
    /// The running graph, the spool and whether a shutdown has begun (read by the iiideas too).
    package let running: RunningGraph
    /// Every route ever started, by index.
    let routeTable = RouteTable()
    /// Serialises reloads (and a shutdown against a reload).
    let reloadLock = NSLock()
    /// What runs the iiideas (SwitchyardIiideas' `RouterIiideas`), once installed.
    private let installedIiideas = Mutex<(any IiideaEngine)?>(nil)
    /// Copies of what passes routes and source ports, for `switchyard tap`.
    public let taps = TapRegistry()
    /// The spans of each hop, when tracing is configured; nil (one branch per hop) otherwise.
    public let tracing: RouterTracing?
    /// Numbers deliveries and routes their acknowledgements.
    let deliveries: DeliveryLedger
    /// Delivers envelopes straight to a sink port (the admin API's inject).
    public let injector: SinkInjector
    let runningWorkers = Atomic<Int>(0)
    /// The threads of the plain routes (the others have one each).
    let workerPool: RouteWorkerPool
    /// How long a full sink that says when it has room waits at most for its word (``SinkRoom``).
    let sinkSafetyPause: Duration
    /// Wakes a draining shutdown whenever the outstanding count may have dropped.
    let drainProgress = WakeSignal()
    /// Every metric the router exports; plugins' reports are kept here too.
    public let metrics: MetricsRegistry
    /// Per instance, the last warning or error it logged since it last reported itself ready:
    /// the reason `/readyz` gives while it is not.
    private let readinessNotes = Mutex<[String: String]>([:])
    private let started = Atomic<Bool>(false)
    /// The spool of at-least-once routes and the iiideas' state.
    var spool: Spool? { running.spool }

    /// The store routers share (`store.url`), when there is one: plugin state, iiideas'
    /// switches and dead letters live there instead of the spool.
    package let sharedStore: (any SharedStore)?
    /// Hands dead letters from the spool to the shared store, when there is one.
    let deadLetterCourier: DeadLetterCourier?
    /// The holds of the exclusive instances (one router at a time runs each).
    public let exclusiveHolds: ExclusiveHolds
    /// The store of the plugins' key-value state: the shared one, else the spool.
    var stateStore: (any PluginStateStore)? { sharedStore ?? spool?.store }
    /// The sources that said they are done (ABI `source_done`), for `run --exit-when-done`.
    let finiteSources = FiniteSources()
    /// The holds plugins ask for (ABI `hold_acquire`): the shared store's, else this router's own.
    let pluginHolds: any ListenerHolds

    /// Gives the router a spool after it started (a reload that adds the first at-least-once
    /// route needs one).
    public func attach(spool: Spool) {
        running.spool = spool
    }

    /// Prepares a router for `plan`; nothing runs until ``start()``. `spool` is needed when
    /// any route is `delivery: at-least-once`. The metrics go to `metricsFactory`, by default
    /// the one the process bootstrapped. Plain routes run on at most `routeThreads` threads
    /// (by default one per active core); at-least-once and iiidea routes have one each. With
    /// `tracing`, each hop of an envelope is a span (see ``RouterTracing``). Plugin state and
    /// iiideas' switches go to `sharedStore` when given, else to the spool; dead letters are
    /// handed on to it from the spool. A full sink whose plugin says when it has room (ABI
    /// `sink_ready`) is tried again after `sinkSafetyPause` without a word.
    public init(
        plan: GraphPlan, logger: Logger, spool: Spool? = nil, sharedStore: (any SharedStore)? = nil,
        metricsFactory: (any MetricsFactory)? = nil, routeThreads: Int? = nil, tracing: RouterTracing? = nil,
        sinkSafetyPause: Duration = .seconds(1)
    ) {
        self.sinkSafetyPause = sinkSafetyPause
        self.sharedStore = sharedStore
        deliveries = DeliveryLedger(routes: routeTable)
        exclusiveHolds = ExclusiveHolds(store: sharedStore, logger: logger)
        running = RunningGraph(plan: plan, spool: spool)
        injector = SinkInjector(running: running, deliveries: deliveries)
        pluginHolds = sharedStore ?? LocalHolds()
        deadLetterCourier = sharedStore.map { DeadLetterCourier(shared: $0, logger: logger) }
        self.tracing = tracing
        workerPool = RouteWorkerPool(threads: routeThreads ?? ProcessInfo.processInfo.activeProcessorCount)
        metrics = MetricsRegistry(factory: metricsFactory)
        self.logger = logger
        supervisor = InstanceSupervisor(logger: logger)
    }

    /// Gives the router what runs its graph's iiideas, before ``start()``; a router whose graph
    /// has none needs none.
    package func install(iiideas engine: any IiideaEngine) { installedIiideas.withLock { $0 = engine } }

    /// What runs the iiideas, when one is installed.
    package var iiideaEngine: (any IiideaEngine)? { installedIiideas.withLock { $0 } }

    /// The running graph (a snapshot: its plan, instances and routes belong together).
    var graph: CompiledGraph { running.graph }

    /// The running graph's plan: its instances, routes, iiideas and templates as validated.
    public var plan: GraphPlan { graph.plan }

    /// Makes `graph` the running one.
    func install(_ graph: CompiledGraph) { running.install(graph) }

    /// Whether shutdown has begun: at-least-once routes then only spool what arrives.
    public var isDraining: Bool { running.isDraining }

    /// The instances now running (a snapshot).
    var instances: [InstanceRuntime] { graph.instances }

    /// The routes now running (a snapshot).
    var routes: [RouteRuntime] { graph.routes }

    /// Creates every instance, wires the routes and starts everything. On failure whatever
    /// was created is stopped and destroyed again and the error names the instance.
    public func start() throws(RouterError) {
        let plan = graph.plan
        let instances = plan.instances.map(makeInstance)
        let routes = try makeRoutes(plan.routes, instances: instances) + makeIiideaRoutes(plan, instances: instances)
        install(CompiledGraph(plan: plan, instances: instances, routes: routes))
        wire(instances, to: routes)
        var created: [InstanceRuntime] = []
        do {
            for instance in instances {
                try supervisor.create(instance)
                created.append(instance)
            }
            for route in routes { startWorker(route) }
            var started: [InstanceRuntime] = []
            try supervisor.startInOrder(instances.filter { !$0.standingBy.load(ordering: .relaxed) }, started: &started)
        } catch {
            for route in routes { route.close() }
            workerPool.stop()
            for instance in created { supervisor.stopAndDestroy(instance) }
            throw error
        }
        started.store(true, ordering: .releasing)
        iiideaEngine?.adopt(plan)
        deadLettersWritten()  // those a previous run left in the spool
        reloadLock.withLock { exclusiveHolds.askForHolds(of: self) }  // a grant waits for its entry (takeOver takes the lock)
        iiideaEngine?.activateEnabled()
        logger.info(
            "router started", metadata: ["instances": .stringConvertible(instances.count), "routes": .stringConvertible(routes.count)])
    }

    func makeInstance(_ planned: PlannedInstance) -> InstanceRuntime {
        let sources = planned.ports.filter { $0.direction == .source }.map {
            SourcePort(
                name: $0.name, instance: planned.name, tap: taps.point(.port(planned.name + "." + $0.name)),
                settlesAfterDelivery: planned.redelivers.contains($0.name))
        }
        let instance = InstanceRuntime(
            name: planned.name, plugin: planned.plugin, config: planned.config, logLevel: planned.logLevel, exclusive: planned.exclusive,
            sources: sources, inlineSinkPorts: planned.deliversInline, router: self, logger: logger)
        // From the start, before any route worker can deliver to it.
        instance.standingBy.store(exclusiveHolds.mustStandBy(instance), ordering: .relaxed)
        return instance
    }

    /// Builds the runtime of each planned route between `instances`, numbering them after
    /// every route started before.
    func makeRoutes(_ planned: [PlannedRoute], instances: [InstanceRuntime]) throws(RouterError) -> [RouteRuntime] {
        var routes: [RouteRuntime] = []
        for route in planned { routes.append(try makeRoute(route, instances: instances)) }
        return routes
    }

    /// The routes of every iiidea (trigger, and remote when declared), with their chains.
    func makeIiideaRoutes(_ plan: GraphPlan, instances: [InstanceRuntime]) throws(RouterError) -> [RouteRuntime] {
        guard !plan.iiideas.isEmpty else { return [] }
        guard let engine = iiideaEngine else {
            throw RouterError(instance: "iiideas", reason: "the graph has iiideas, and nothing runs them in this router (no RouterIiideas)")
        }
        return try engine.chains(of: plan).map { (planned, chain) throws(RouterError) in
            try makeRoute(planned, instances: instances, chain: chain)
        }
    }

    func makeRoute(_ planned: PlannedRoute, instances: [InstanceRuntime], chain: (any RouteChain)? = nil) throws(RouterError)
        -> RouteRuntime
    {
        let declaration = planned.declaration
        let sinks = declaration.to.compactMap { target -> SinkPort? in
            // The validator guarantees every instance and port exists.
            guard let sink = instances.first(where: { $0.name == target.value.instance }) else { return nil }
            return SinkPort(instance: sink, name: target.value.port)
        }
        var routeSpool: Spool?
        if declaration.delivery == .atLeastOnce {
            guard let spool else {
                throw RouterError(
                    instance: declaration.from.value.instance, reason: "route '\(declaration.name)' is at-least-once but no spool is open")
            }
            routeSpool = spool
        }
        return routeTable.append { index in
            RouteRuntime(plan: planned, index: index, sinks: sinks, router: self, spool: routeSpool, chain: chain)
        }
    }

    /// Points every source port of `instances` at the routes that read from it.
    func wire(_ instances: [InstanceRuntime], to routes: [RouteRuntime]) {
        for instance in instances {
            for port in instance.sources {
                port.routes = routes.filter {
                    $0.plan.declaration.from.value.instance == instance.name && $0.plan.declaration.from.value.port == port.name
                }
            }
        }
    }

    func startWorker(_ route: RouteRuntime) {
        runningWorkers.add(1, ordering: .relaxed)
        route.startWorker()
    }

    /// Graceful shutdown: quiesce every source, wait up to `drainTimeout` for queued envelopes
    /// and unacknowledged deliveries, then stop and destroy every instance. At-least-once
    /// routes stop retrying and spool what is still queued. Returns how many envelopes were
    /// still outstanding and not in the spool when it gave up waiting (0 after a full drain).
    @discardableResult
    public func shutdown(drainTimeout: Duration) -> Int {
        reloadLock.lock()
        defer { reloadLock.unlock() }
        running.startDraining()
        started.store(false, ordering: .releasing)
        let graph = self.graph
        let (instances, routes) = (graph.instances, graph.routes)
        for instance in instances { supervisor.quiesce(instance) }
        let deadline = ContinuousClock.now + drainTimeout
        // Each step waits for an event: every place that lowers the outstanding count (a
        // worker's batch, an acknowledgement that empties an instance, a worker ending)
        // signals `drainProgress` while someone waits.
        // A drain that takes a while says what it waits for: after a second, then every 5 s.
        var report = ContinuousClock.now + .seconds(1)
        while !drainProgress.wait(until: min(deadline, report), while: { outstanding > 0 }), ContinuousClock.now < deadline {
            logger.notice(
                "draining: waiting for what is queued and unacknowledged",
                metadata: [
                    "waiting_for": .string(drainWaits(graph)), "left_seconds": .stringConvertible(Int((deadline - .now) / .seconds(1))),
                ])
            report = .now + .seconds(5)
        }
        // Counted before the queues close: closing fails what a stuck sink still holds, which
        // would then look finished.
        var left = max(0, outstanding)
        for instance in instances { instance.stopAccepting() }
        for route in routes { route.close() }
        _ = drainProgress.wait(until: deadline + .seconds(1)) { runningWorkers.load(ordering: .sequentiallyConsistent) > 0 }
        // Emits that came in after the drain and before `accepting` turned false were just
        // delivered by the closing workers; wait for those sinks' acknowledgements too, so
        // their sources hear of them (an MQTT PUBACK) before the sources stop.
        _ = drainProgress.wait(until: deadline) { outstanding > 0 }
        if left == 0 { left = max(0, outstanding) }  // unacknowledged late deliveries
        // What at-least-once routes have not delivered is in the spool, not lost.
        let lost = max(0, left - routes.reduce(0) { $0 + ($1.isAtLeastOnce ? $1.counters.inFlight.load(ordering: .relaxed) : 0) })
        if left > 0 {
            logger.warning(
                "drain timed out", metadata: ["outstanding": .stringConvertible(left), "not_spooled": .stringConvertible(lost)])
        }
        // No pool thread calls into a plugin once its instance stops.
        workerPool.stop()
        iiideaEngine?.stop()
        for instance in instances { instance.stopPlugin() }
        for instance in instances { instance.destroyPlugin() }
        exclusiveHolds.release { _ in true }  // another router takes them now, not when this process ends
        logger.info("router stopped", metadata: ["drained": .stringConvertible(left == 0)])
        return lost
    }

    /// Envelopes queued or being dispatched, plus deliveries not yet acknowledged. Summed
    /// from per-route and per-instance counters so the hot path shares no counter between
    /// the emitting and the dispatching thread.
    var outstanding: Int {
        let graph = self.graph
        return graph.routes.reduce(0) { $0 + $1.pending }
            + graph.instances.reduce(0) { $0 + $1.counters.inFlight.load(ordering: .sequentiallyConsistent) }
    }

    func workerFinished() {
        runningWorkers.subtract(1, ordering: .sequentiallyConsistent)
        drainProgress.signal()
    }

    func record(metric name: String, instance: String, kind: Int32, value: Double) {
        if name == "ready", kind == SY_METRIC_GAUGE, value != 0 {
            readinessNotes.withLock { $0[instance] = nil }
            let prefix = instance + "."
            iiideaEngine?.askAgain(becauseOf: "\(instance) was ready") { $0.hasPrefix(prefix) }
        }
        metrics.record(metric: name, instance: instance, kind: kind, value: value)
    }

    /// Whether every instance has started and none says it is not ready. A plugin states its
    /// readiness with a gauge named `ready` (1 ready, 0 not, e.g. while disconnected); an
    /// instance that never reports one is ready once started.
    public var readiness: [(instance: String, ready: Bool)] {
        let started = self.started.load(ordering: .acquiring)
        return instances.map { instance in
            (instance.name, started && (metrics.pluginValue(instance: instance.name, name: "ready").map { $0 != 0 } ?? true))
        }
    }

    /// Notes a warning or error `instance` logged (one line, at most 300 characters): the
    /// reason given for it while it reports itself not ready.
    func note(problem text: String, instance: String) {
        let line = String(text.prefix(300).map { $0.isNewline ? " " : $0 })
        readinessNotes.withLock { $0[instance] = line }
    }

    /// Why `instance` is not ready: the last warning or error it logged since it was last ready.
    public func notReadyReason(of instance: String) -> String? { readinessNotes.withLock { $0[instance] } }

    /// The plugins of the instances: name, version, ABI version, file.
    public var plugins: [(name: String, version: String, abi: UInt32, path: String)] {
        var seen: Set<String> = []
        return instances.compactMap { instance in
            let plugin = instance.plugin
            guard seen.insert(plugin.path).inserted else { return nil }
            return (plugin.manifest.name, plugin.manifest.version, plugin.abiVersion, plugin.path)
        }
    }
}
