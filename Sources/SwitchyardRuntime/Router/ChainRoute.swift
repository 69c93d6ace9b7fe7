import Foundation
package import Logging
internal import SwitchyardABI
package import SwitchyardCore
package import SwitchyardScript

/// An iiidea route as its chain sees it (``RouteChain``): what a run may do with the route —
/// count, reach the action's sink, run the route's script, report a metric, queue a manual
/// run — and nothing of the router's dispatch beyond that.
package struct ChainRoute: Sendable {
    let route: RouteRuntime

    init(_ route: RouteRuntime) { self.route = route }

    /// The route as planned (its condition, transform and sink).
    package var plan: PlannedRoute { route.plan }

    /// The router's logger.
    package var logger: Logger { route.router.logger }

    /// What a run did with an envelope, for the route's totals.
    package enum Count {
        /// The trigger's condition (or the iiidea's switch) left it out.
        case filtered
        /// Handed to the action's sink.
        case sent
        /// The action's sink refused it.
        case refused
        /// The action acknowledged it.
        case delivered
        /// The action failed it.
        case failed
    }

    /// Counts one envelope in the route's totals.
    package func count(_ count: Count) {
        let counters = route.counters
        switch count {
        case .filtered: counters.filtered.add(1, ordering: .relaxed)
        case .sent: counters.sent.add(1, ordering: .relaxed)
        case .refused: counters.refused.add(1, ordering: .relaxed)
        case .delivered: counters.delivered.add(1, ordering: .relaxed)
        case .failed: counters.failed.add(1, ordering: .relaxed)
        }
    }

    /// The instance of the action's sink.
    package var actionInstance: String? { route.sinks.first?.instance.name }

    /// Whether `envelope` may go to the action's sink: not when that instance is already in
    /// its trace (counted in dropped_loop), unless the route allows loops.
    package func admitsAction(_ envelope: Envelope) -> Bool { !route.sinks.isEmpty && route.admits(envelope, toSink: 0) }

    /// The id of the next delivery: its acknowledgement comes to the worker with it.
    package func nextDeliveryID() -> UInt64 { route.router.deliveries.nextSpooledID(route: route.index) }

    /// Hands `envelope` to the action's sink as delivery `deliveryID`, tapped, waiting while
    /// the sink is full; the sink's status (`SY_OK` when it took it).
    package func deliverToAction(_ envelope: Envelope, deliveryID: UInt64) -> Int32 {
        guard let sink = route.sinks.first else { return SY_ERR_STOPPED }
        if route.tap.isActive { route.tap.publish(envelope) }
        return route.deliverWaitingForRoom(envelope, to: sink, deliveryID: deliveryID)
    }

    /// Waits `duration` (a delay service piece), or less when a stopping router closes the
    /// route once its drain has timed out; false then. A reload that retires the route lets
    /// the pause run its course, as the old route's worker finishes what it holds.
    package func pause(for duration: Duration) -> Bool {
        let router = route.router
        return !route.queue.waitForClose(until: .now + duration, ifThen: { router.isDraining })
    }

    /// Runs the route's script (a script service piece) on `envelope`; nil when it has none.
    package func runScript(_ envelope: Envelope) -> Result<[Envelope], ScriptFailure>? { route.scriptStage?.run(envelope) }

    /// Adds 1 to counter `name` of `instance` among the plugins' metrics
    /// (`switchyard_plugin_metric`).
    package func countMetric(_ name: String, instance: String) {
        route.router.record(metric: name, instance: instance, kind: SY_METRIC_COUNTER, value: 1)
    }

    /// Queues `envelope` as if the trigger had emitted it (a person's "run now"); false when the
    /// route's queue is full.
    package func enqueue(_ envelope: Envelope) -> Bool {
        guard route.pending < route.plan.declaration.queueSize else { return false }
        return route.enqueue(QueuedEnvelope(envelope: envelope, settlement: nil))
    }
}

extension RouteRuntime {
    /// The thread of an iiidea route: hands its chain's worker each envelope of the queue and
    /// each acknowledgement, until the queue is closed and empty.
    func work(_ chain: any RouteChain) {
        let worker = chain.makeWorker(for: ChainRoute(self))
        var items: [QueuedEnvelope] = []
        var acks: [RouteAck] = []
        while true {
            let taken = queue.takeWork(into: &items, limit: 64, acks: &acks, until: nil)
            for waiter in taken.resume { waiter.instance.resume(port: waiter.port) }
            for ack in acks { worker.acknowledged(deliveryID: ack.deliveryID, outcome: ack.outcome, reason: ack.reason) }
            acks.removeAll(keepingCapacity: true)
            for item in items {
                worker.run(item.envelope)
                item.settlement?.complete(SY_OUTCOME_OK)
            }
            counters.processed.add(items.count, ordering: .sequentiallyConsistent)
            router.drainProgress.signal()
            items.removeAll(keepingCapacity: true)
            if taken.closed { break }
        }
    }
}

extension CompiledGraph {
    /// The first route whose chain is a `Chain` that `matches`: that chain, and the route as
    /// it sees it.
    package func chainRoute<Chain: RouteChain>(of _: Chain.Type, where matches: (Chain) -> Bool) -> (chain: Chain, route: ChainRoute)? {
        for route in routes {
            if let chain = route.chain as? Chain, matches(chain) { return (chain, ChainRoute(route)) }
        }
        return nil
    }
}
