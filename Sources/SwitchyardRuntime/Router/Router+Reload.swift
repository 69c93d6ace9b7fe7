import Foundation
internal import Logging
internal import SwitchyardConfig
internal import SwitchyardCore

extension Router {
    /// What a reload changed.
    public struct ReloadSummary: Sendable, CustomStringConvertible {
        /// Instances whose plugin and configuration did not change: they kept running.
        public var keptInstances: [String]
        /// Instances created and started.
        public var startedInstances: [String]
        /// Instances stopped.
        public var stoppedInstances: [String]
        /// Routes that kept their queue and worker.
        public var keptRoutes: [String]
        /// Routes started.
        public var startedRoutes: [String]
        /// Routes retired.
        public var retiredRoutes: [String]

        public var description: String {
            "instances kept \(keptInstances.count), started \(startedInstances), stopped \(stoppedInstances); "
                + "routes kept \(keptRoutes.count), started \(startedRoutes), retired \(retiredRoutes)"
        }
    }

    /// Swaps the running graph for `newPlan` (already validated).
    ///
    /// An instance with the same name, plugin file and configuration is kept as it is — its
    /// connections stay up. A route whose declaration and endpoints are unchanged keeps its
    /// queue and worker. New instances are created first, new routes wired, then every
    /// source port is switched to its new routes, then the new instances start. Retired
    /// routes finish what they queued; removed instances are quiesced, given up to
    /// `drainTimeout` for their deliveries, then stopped.
    ///
    /// If a new instance cannot be created nothing changes and the error says why.
    public func reload(to newPlan: GraphPlan, drainTimeout: Duration) throws(RouterError) -> ReloadSummary {
        reloadLock.lock()
        defer { reloadLock.unlock() }
        let (oldInstances, oldRoutes) = graphLock.withLock { (liveInstances, liveRoutes) }

        var kept: [InstanceRuntime] = []
        var fresh: [InstanceRuntime] = []
        var instances: [InstanceRuntime] = []
        for planned in newPlan.instances {
            if let old = oldInstances.first(where: { $0.name == planned.name }), old.plugin.path == planned.plugin.path,
                old.config == planned.config,
                old.logger.logLevel == (planned.logLevel.flatMap(Logger.Level.init(rawValue:)) ?? logger.logLevel),
                old.handle != nil
            {
                kept.append(old)
                instances.append(old)
            } else {
                let instance = makeInstance(planned)
                fresh.append(instance)
                instances.append(instance)
            }
        }
        var created: [InstanceRuntime] = []
        do {
            for instance in fresh {
                try create(instance)
                created.append(instance)
            }
        } catch {
            for instance in created { stopAndDestroy(instance) }
            throw error
        }

        let keptNames = Set(kept.map(\.name))
        var routes: [RouteRuntime] = []
        var startedRoutes: [RouteRuntime] = []
        var keptRoutes: [RouteRuntime] = []
        for planned in newPlan.routes {
            let endpoints = [planned.declaration.from.value.instance] + planned.declaration.to.map(\.value.instance)
            if endpoints.allSatisfy(keptNames.contains),
                let old = oldRoutes.first(where: {
                    $0.name == planned.name && $0.plan.declaration.fingerprint == planned.declaration.fingerprint
                })
            {
                keptRoutes.append(old)
                routes.append(old)
                continue
            }
            let route: RouteRuntime
            do {
                route = try makeRoute(planned, instances: instances)
            } catch {
                for started in startedRoutes { started.queue.close() }
                for instance in created { stopAndDestroy(instance) }
                throw error
            }
            startWorker(route)
            startedRoutes.append(route)
            routes.append(route)
        }

        do {
            for route in try makeIiideaRoutes(newPlan, instances: instances) {
                startWorker(route)
                startedRoutes.append(route)
                routes.append(route)
            }
        } catch {
            for started in startedRoutes { started.queue.close() }
            for instance in created { stopAndDestroy(instance) }
            throw error
        }

        // The switch: from here on emits go to the new routes.
        graphLock.withLock {
            liveInstances = instances
            liveRoutes = routes
            plan = newPlan
        }
        wire(instances, to: routes)
        let removedInstances = oldInstances.filter { old in !instances.contains { $0 === old } }
        for instance in removedInstances {
            for port in instance.sources { port.routes = [] }
            if let handle = instance.handle { instance.plugin.table.api.quiesce?(handle) }
        }
        do {
            try startInOrder(fresh)
        } catch {
            logger.error("reload: \(error)")
        }
        activateEnabledIiideas()

        let retired = oldRoutes.filter { old in !routes.contains { $0 === old } }
        let deadline = ContinuousClock.now + drainTimeout
        for route in retired { route.queue.close() }
        for route in retired {
            let left = ContinuousClock.now.duration(to: deadline)
            let (seconds, attoseconds) = max(left, .zero).components
            if route.finished.wait(timeout: .now() + Double(seconds) + Double(attoseconds) * 1e-18) == .timedOut {
                logger.warning("reload: retired route still busy at the drain timeout", metadata: ["route": .string(route.name)])
            }
        }
        // Polling (not an event): the in-flight count is updated lock-free on the hot path.
        while removedInstances.contains(where: { $0.counters.inFlight.load(ordering: .acquiring) > 0 }), ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.005)
        }
        for instance in removedInstances { stopAndDestroy(instance) }

        let summary = ReloadSummary(
            keptInstances: kept.map(\.name), startedInstances: fresh.map(\.name), stoppedInstances: removedInstances.map(\.name),
            keptRoutes: keptRoutes.map(\.name), startedRoutes: startedRoutes.map(\.name), retiredRoutes: retired.map(\.name))
        logger.notice("routes reloaded: \(summary)")
        return summary
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
