import Foundation
internal import Logging
internal import SwitchyardConfig
internal import SwitchyardCore

extension Router {
    /// Swaps the running graph for `newPlan` (already validated) and says what it did; one
    /// reload at a time (see ``ReloadTransaction``).
    public func reload(to newPlan: GraphPlan, drainTimeout: Duration) -> ReloadSummary {
        reloadLock.withLock {
            // A router shutting down starts nothing (a change announced by another router may
            // still ask for a reload).
            guard !isDraining else { return .rejected("the router is stopping") }
            return ReloadTransaction.reload(self, to: newPlan, drainTimeout: drainTimeout)
        }
    }
}

/// One reload of a running ``Router``: plans the change, reconfigures, stops and starts
/// instances through the router's ``InstanceSupervisor``, swaps in the new ``CompiledGraph`` and
/// rolls back when that fails.
///
/// An instance with the same name, plugin file, log level and configuration is kept as it
/// is — its connections stay up. One whose configuration changed is offered the new one
/// (the plugin's reconfigure, ABI section 7): adopted, it keeps running; refused as
/// unsupported, it is replaced; refused as wrong, the reload rolls back. A route whose
/// declaration and endpoints are unchanged keeps its queue and worker.
///
/// The order: create the new instances (no I/O yet) and routes, switch every source port to
/// its new routes, retire the old routes (they finish what they queued; at-least-once ones
/// leave the rest in the spool), quiesce the instances going away and wait (until
/// the drain deadline) for their deliveries, stop them — so their ports are free — and only
/// then start the new instances. If one of those does not start, the same steps run back
/// to the previous graph: the old configurations are created and started again.
///
/// Runs on the control thread under the router's reload lock, so it needs no lock of its own.
struct ReloadTransaction {
    private let router: Router
    private let target: GraphPlan
    private let deadline: ContinuousClock.Instant
    private var logger: Logger { router.logger }
    private var supervisor: InstanceSupervisor { router.supervisor }

    private var summary = ReloadSummary()
    /// Whether the running graph changed (the caller then restores the previous one on failure).
    private var switched = false
    /// Instances kept as they were, or reconfigured in place.
    private var unchanged: [InstanceRuntime] = []
    /// Instances made for the new graph.
    private var fresh: [InstanceRuntime] = []
    /// Reconfigured instances with the configuration they had, to offer back on failure.
    private var reconfigured: [(instance: InstanceRuntime, previous: JSONValue)] = []
    private var created: [InstanceRuntime] = []
    private var startedRoutes: [RouteRuntime] = []

    private init(_ router: Router, to target: GraphPlan, deadline: ContinuousClock.Instant) {
        self.router = router
        self.target = target
        self.deadline = deadline
    }

    /// Reloads `router` to `newPlan`, restoring the previous graph when the attempt fails after
    /// the switch, and logs what happened. The caller holds the reload lock.
    static func reload(_ router: Router, to newPlan: GraphPlan, drainTimeout: Duration) -> ReloadSummary {
        let logger = router.logger
        let previousPlan = router.graph.plan
        var attempt = ReloadTransaction(router, to: newPlan, deadline: .now + drainTimeout)
        var summary = attempt.apply()
        switch summary.outcome {
        case .applied:
            logger.notice("routes reloaded: \(summary)")
        case .rejected:
            logger.error("reload rejected: \(summary.reason ?? "unknown"); the running graph is unchanged")
        case .rolledBack where !attempt.switched:
            // Undone before the switch: the instances a plugin had reconfigured took their
            // previous configuration back.
            logger.error("reload \(summary)")
        case .rolledBack:
            logger.error("reload failed: \(summary.reason ?? "unknown"); restoring the previous graph")
            var back = ReloadTransaction(router, to: previousPlan, deadline: .now + drainTimeout)
            let restored = back.apply()
            if restored.outcome != .applied {
                summary.reason = (summary.reason ?? "") + "; restoring the previous graph failed too: \(restored.reason ?? "unknown")"
            }
            logger.error("reload \(summary)", metadata: ["restored": .string("\(restored)")])
        }
        return summary
    }

    /// One pass towards `target`. Fails as rejected when nothing changed, as rolled back when a
    /// plugin refused its configuration (undone here) or an instance did not start; `switched`
    /// then says the running graph changed, and ``reload(_:to:drainTimeout:)`` restores the
    /// previous one.
    private mutating func apply() -> ReloadSummary {
        let old = router.graph
        var instances: [InstanceRuntime] = []
        for planned in target.instances {
            if let existing = old.instance(named: planned.name), existing.plugin.path == planned.plugin.path,
                existing.logger.logLevel == (planned.logLevel.flatMap(Logger.Level.init(rawValue:)) ?? logger.logLevel),
                existing.handle != nil, existing.exclusive == planned.exclusive
            {
                if existing.config == planned.config {
                    summary.keptInstances.append(existing.name)
                    unchanged.append(existing)
                    instances.append(existing)
                    continue
                }
                let previous = existing.config
                // A standing-by instance never started: reconfigure() is for a running one (and
                // might start what another router holds, a registration say). It is replaced.
                switch existing.standingBy.load(ordering: .relaxed) ? .needsRestart : supervisor.reconfigure(existing, to: planned.config) {
                case .adopted:
                    summary.reconfiguredInstances.append(existing.name)
                    reconfigured.append((existing, previous))
                    unchanged.append(existing)
                    instances.append(existing)
                    continue
                case .needsRestart:
                    break
                case .refused(let reason):
                    var failed = abandon("instance '\(existing.name)': \(reason)")
                    failed.outcome = .rolledBack
                    return failed
                }
            }
            let instance = router.makeInstance(planned)
            fresh.append(instance)
            instances.append(instance)
        }
        do {
            for instance in fresh {
                try supervisor.create(instance)
                created.append(instance)
            }
        } catch {
            return abandon("\(error)")
        }
        let routes: [RouteRuntime]
        do {
            routes = try makeRoutes(between: instances, keeping: old.routes)
        } catch {
            return abandon("\(error)")
        }
        summary.startedRoutes = startedRoutes.map(\.name)

        // The switch: from here on emits go to the new routes.
        router.install(CompiledGraph(plan: target, instances: instances, routes: routes))
        switched = true
        router.wire(instances, to: routes)
        let removed = old.instances.filter { old in !instances.contains { $0 === old } }
        for instance in removed {
            for port in instance.sources { port.routes = [] }
            supervisor.quiesce(instance)
        }
        let retired = old.routes.filter { old in !routes.contains { $0 === old } }
        summary.retiredRoutes = retired.map(\.name)
        retire(retired)
        for instance in supervisor.awaitIdle(removed, until: deadline) {
            logger.warning(
                "reload: instance still has unacknowledged deliveries at the drain timeout; stopping it anyway",
                metadata: [
                    "instance": .string(instance.name),
                    "in_flight": .stringConvertible(instance.counters.inFlight.load(ordering: .relaxed)),
                ])
        }
        // Stopped before the new instances start: a replacement may need the same port.
        for instance in removed { supervisor.stopAndDestroy(instance) }
        summary.stoppedInstances = removed.map(\.name)

        var started: [InstanceRuntime] = []
        do {
            try supervisor.startInOrder(fresh.filter { !$0.standingBy.load(ordering: .relaxed) }, started: &started)
        } catch {
            // Not started, so never stopped by the way back: stop and free them here.
            for instance in fresh where !started.contains(where: { $0 === instance }) { supervisor.stopAndDestroy(instance) }
            summary.startedInstances = started.map(\.name)
            summary.outcome = .rolledBack
            summary.reason = "\(error)"
            return summary
        }
        summary.startedInstances = fresh.filter { !$0.standingBy.load(ordering: .relaxed) }.map(\.name)
        router.exclusiveHolds.release(keeping: Set(router.graph.instances.filter(\.exclusive).map(\.name)))
        router.exclusiveHolds.askForHolds(of: router)
        router.iiideaEngine?.adopt(router.graph.plan)
        router.iiideaEngine?.reconcile(from: old, to: router.graph)
        return summary
    }

    /// The routes of `target` between `instances`: a route whose declaration and endpoints did
    /// not change is taken from `running`; the others (and the iiideas' routes) are made and
    /// their workers started.
    private mutating func makeRoutes(between instances: [InstanceRuntime], keeping running: [RouteRuntime]) throws(RouterError)
        -> [RouteRuntime]
    {
        let unchangedNames = Set(unchanged.map(\.name))
        var routes: [RouteRuntime] = []
        for planned in target.routes {
            let endpoints = [planned.declaration.from.value.instance] + planned.declaration.to.map(\.value.instance)
            if endpoints.allSatisfy(unchangedNames.contains),
                let old = running.first(where: {
                    $0.name == planned.name && $0.plan.declaration.fingerprint == planned.declaration.fingerprint
                })
            {
                summary.keptRoutes.append(old.name)
                routes.append(old)
                continue
            }
            var planned = planned
            // A script that did not change keeps its Lua state (its `state` table and globals)
            // even when the rest of the route changed.
            if let old = running.first(where: { $0.name == planned.name }), let script = old.plan.script,
                let declaration = planned.declaration.script, script.source == declaration.source, script.limits == declaration.limits
            {
                planned.script = script
                planned.carriesScriptState = true
            }
            let route = try router.makeRoute(planned, instances: instances)
            router.startWorker(route)
            startedRoutes.append(route)
            routes.append(route)
        }
        for route in try router.makeIiideaRoutes(target, instances: instances) {
            router.startWorker(route)
            startedRoutes.append(route)
            routes.append(route)
        }
        return routes
    }

    /// Undoes everything done before the switch; `reason` says why.
    private func abandon(_ reason: String) -> ReloadSummary {
        for route in startedRoutes { route.close() }
        for instance in created { supervisor.stopAndDestroy(instance) }
        for (instance, previous) in reconfigured.reversed() where supervisor.reconfigure(instance, to: previous) != .adopted {
            logger.error("reload: instance '\(instance.name)' could not take its previous configuration back")
        }
        var failed = summary
        failed.outcome = reconfigured.isEmpty ? .rejected : .rolledBack
        failed.reason = reason
        return failed
    }

    /// Closes the queues of `routes` and waits (until the deadline) for their workers to finish
    /// what they hold; at-least-once routes leave what they could not deliver in the spool.
    private func retire(_ routes: [RouteRuntime]) {
        for route in routes { route.close() }
        for route in routes {
            let (seconds, attoseconds) = max(ContinuousClock.now.duration(to: deadline), .zero).components
            if route.finished.wait(timeout: .now() + Double(seconds) + Double(attoseconds) * 1e-18) == .timedOut {
                logger.warning("reload: retired route still busy at the drain timeout", metadata: ["route": .string(route.name)])
            }
        }
    }
}

extension RouteDeclaration {
    /// Everything that shapes the route's behaviour, as text: equal fingerprints mean a reload
    /// can keep the running route.
    var fingerprint: String {
        let parts: [String] = [
            name, from.value.description, to.map(\.value.description).joined(separator: ","), when?.value ?? "",
            map.map { $0.json.serialized() } ?? "", template?.value ?? "", outputType?.value ?? "", contentType?.value ?? "",
            String(queueSize), onFull.rawValue, String(allowLoops), delivery.rawValue,
            "\(retry.attempts)/\(retry.backoff)/\(retry.maxBackoff)", dedupeWindow.map(String.init) ?? "", dedupeKey?.value ?? "",
            String(spoolLimit),
            script.map { "\($0.source)|\($0.limits)|\($0.persistentState)" } ?? "",
        ]
        return parts.joined(separator: "\u{1}")
    }
}
