import Foundation
internal import Logging
internal import SwitchyardConfig
internal import SwitchyardCore

extension Router {
    /// Swaps the running graph for `newPlan` (already validated) and says what it did.
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
    /// `drainTimeout`) for their deliveries, stop them — so their ports are free — and only
    /// then start the new instances. If one of those does not start, the same steps run back
    /// to the previous graph: the old configurations are created and started again.
    public func reload(to newPlan: GraphPlan, drainTimeout: Duration) -> ReloadSummary {
        reloadLock.lock()
        defer { reloadLock.unlock() }
        let previousPlan = graphLock.withLock { plan }
        var (summary, switched) = apply(newPlan, deadline: .now + drainTimeout)
        switch summary.outcome {
        case .applied:
            logger.notice("routes reloaded: \(summary)")
        case .rejected:
            logger.error("reload rejected: \(summary.reason ?? "unknown"); the running graph is unchanged")
        case .rolledBack where !switched:
            // Undone before the switch: the instances a plugin had reconfigured took their
            // previous configuration back.
            logger.error("reload \(summary)")
        case .rolledBack:
            logger.error("reload failed: \(summary.reason ?? "unknown"); restoring the previous graph")
            let (restored, _) = apply(previousPlan, deadline: .now + drainTimeout)
            if restored.outcome != .applied {
                summary.reason = (summary.reason ?? "") + "; restoring the previous graph failed too: \(restored.reason ?? "unknown")"
            }
            logger.error("reload \(summary)", metadata: ["restored": .string("\(restored)")])
        }
        return summary
    }

    /// One pass of ``reload(to:drainTimeout:)`` towards `newPlan`. Fails as rejected when
    /// nothing changed, as rolled back when a plugin refused its configuration (undone here) or
    /// an instance did not start; `switched` then says the running graph changed, and the
    /// caller restores the previous one.
    private func apply(_ newPlan: GraphPlan, deadline: ContinuousClock.Instant) -> (summary: ReloadSummary, switched: Bool) {
        let (oldInstances, oldRoutes) = graphLock.withLock { (liveInstances, liveRoutes) }
        var summary = ReloadSummary()
        var instances: [InstanceRuntime] = []
        var unchanged: [InstanceRuntime] = []
        var fresh: [InstanceRuntime] = []
        /// Reconfigured instances with the configuration they had, to offer back on failure.
        var reconfigured: [(instance: InstanceRuntime, previous: JSONValue)] = []
        var created: [InstanceRuntime] = []
        var startedRoutes: [RouteRuntime] = []
        /// Undoes everything done before the switch; `reason` says why.
        func abandon(_ reason: String) -> (summary: ReloadSummary, switched: Bool) {
            for route in startedRoutes { route.queue.close() }
            for instance in created { supervisor.stopAndDestroy(instance) }
            for (instance, previous) in reconfigured.reversed() where supervisor.reconfigure(instance, to: previous) != .adopted {
                logger.error("reload: instance '\(instance.name)' could not take its previous configuration back")
            }
            var failed = summary
            failed.outcome = reconfigured.isEmpty ? .rejected : .rolledBack
            failed.reason = reason
            return (failed, false)
        }

        for planned in newPlan.instances {
            if let old = oldInstances.first(where: { $0.name == planned.name }), old.plugin.path == planned.plugin.path,
                old.logger.logLevel == (planned.logLevel.flatMap(Logger.Level.init(rawValue:)) ?? logger.logLevel),
                old.handle != nil
            {
                if old.config == planned.config {
                    summary.keptInstances.append(old.name)
                    unchanged.append(old)
                    instances.append(old)
                    continue
                }
                let previous = old.config
                switch supervisor.reconfigure(old, to: planned.config) {
                case .adopted:
                    summary.reconfiguredInstances.append(old.name)
                    reconfigured.append((old, previous))
                    unchanged.append(old)
                    instances.append(old)
                    continue
                case .needsRestart:
                    break
                case .refused(let reason):
                    var failed = abandon("instance '\(old.name)': \(reason)")
                    failed.summary.outcome = .rolledBack
                    return failed
                }
            }
            let instance = makeInstance(planned)
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

        let unchangedNames = Set(unchanged.map(\.name))
        var routes: [RouteRuntime] = []
        for planned in newPlan.routes {
            let endpoints = [planned.declaration.from.value.instance] + planned.declaration.to.map(\.value.instance)
            if endpoints.allSatisfy(unchangedNames.contains),
                let old = oldRoutes.first(where: {
                    $0.name == planned.name && $0.plan.declaration.fingerprint == planned.declaration.fingerprint
                })
            {
                summary.keptRoutes.append(old.name)
                routes.append(old)
                continue
            }
            do {
                let route = try makeRoute(planned, instances: instances)
                startWorker(route)
                startedRoutes.append(route)
                routes.append(route)
            } catch {
                return abandon("\(error)")
            }
        }
        do {
            for route in try makeIiideaRoutes(newPlan, instances: instances) {
                startWorker(route)
                startedRoutes.append(route)
                routes.append(route)
            }
        } catch {
            return abandon("\(error)")
        }
        summary.startedRoutes = startedRoutes.map(\.name)

        // The switch: from here on emits go to the new routes.
        graphLock.withLock {
            liveInstances = instances
            liveRoutes = routes
            plan = newPlan
        }
        wire(instances, to: routes)
        let removed = oldInstances.filter { old in !instances.contains { $0 === old } }
        for instance in removed {
            for port in instance.sources { port.routes = [] }
            supervisor.quiesce(instance)
        }
        let retired = oldRoutes.filter { old in !routes.contains { $0 === old } }
        summary.retiredRoutes = retired.map(\.name)
        retire(retired, until: deadline)
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
            try supervisor.startInOrder(fresh, started: &started)
        } catch {
            // Not started, so never stopped by the way back: stop and free them here.
            for instance in fresh where !started.contains(where: { $0 === instance }) { supervisor.stopAndDestroy(instance) }
            summary.startedInstances = started.map(\.name)
            summary.outcome = .rolledBack
            summary.reason = "\(error)"
            return (summary, true)
        }
        summary.startedInstances = fresh.map(\.name)
        activateEnabledIiideas()
        return (summary, true)
    }

    /// Closes the queues of `routes` and waits (until `deadline`) for their workers to finish
    /// what they hold; at-least-once routes leave what they could not deliver in the spool.
    private func retire(_ routes: [RouteRuntime], until deadline: ContinuousClock.Instant) {
        for route in routes { route.queue.close() }
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
            "\(retry.attempts)/\(retry.backoff)/\(retry.maxBackoff)", dedupeWindow.map(String.init) ?? "", String(spoolLimit),
        ]
        return parts.joined(separator: "\u{1}")
    }
}
