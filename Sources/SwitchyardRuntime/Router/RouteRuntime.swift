import Foundation
internal import Logging
internal import SwitchyardABI
internal import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardSpool
import Synchronization

/// A route at run time: its queue and the worker that applies `when` and the transform and
/// delivers to each sink — the router's ``RouteWorkerPool`` for a plain route, a thread of its
/// own for an at-least-once or iiidea route.
final class RouteRuntime: Sendable {
    let plan: PlannedRoute
    let queue: RouteQueue
    let sinks: [SinkPort]
    let counters: RouteCounters
    /// The route's place in the router: part of its at-least-once delivery ids.
    let index: Int
    unowned let router: Router
    /// The router's tracing (nil when off), kept here so the worker tests a field of its own
    /// rather than load the unowned router first.
    let tracing: RouterTracing?
    private let loopWarned = Atomic<Bool>(false)
    /// The spool of an at-least-once route: its worker thread makes a ``SpooledDelivery`` on it.
    private let spool: Spool?

    /// The chain of an iiidea route: its worker thread runs it.
    let chain: (any RouteChain)?
    /// A plain route's work on the pool, slice by slice, and where it is between slices.
    private let slicer = PlainRouteSlicer()
    /// Emit → acknowledgement timing of one envelope at a time; nil for an iiidea route (its
    /// runs have their own durations).
    let latency: LatencyProbe?
    /// Taps of the envelopes this route delivers (`switchyard tap ROUTE`).
    let tap: TapPoint
    /// The route's script, when it has one.
    let scriptStage: RouteScriptStage?
    /// Whether an emit that finds the route idle runs it on the emitting thread rather than
    /// waking a pool thread: a plain route without a script, whose every sink lets `deliver`
    /// run on any thread (the description's `delivers_inline`). It saves the hand-off — a
    /// wake-up and two threads touching each envelope — that costs a paced stream most of its
    /// latency, and is what a broker's own bridge does.
    let deliversInline: Bool
    /// The source port whose condition index may leave this route out, and how many envelopes
    /// it had dispatched through its index when the route was wired to it.
    private let indexWatch = Mutex<(port: SourcePort, baseline: Int)?>(nil)

    init(plan: PlannedRoute, index: Int, sinks: [SinkPort], router: Router, spool: Spool?, chain: (any RouteChain)? = nil) {
        self.plan = plan
        counters = RouteCounters()
        self.index = index
        self.sinks = sinks
        self.router = router
        tracing = router.tracing
        self.chain = chain
        tap = router.taps.point(.route(plan.name))
        latency = chain == nil ? LatencyProbe(histogram: router.metrics.routeLatency(route: plan.name)) : nil
        queue = RouteQueue(capacity: plan.declaration.queueSize, policy: plan.declaration.onFull, pooled: spool == nil && chain == nil)
        self.spool = spool
        // A script may run for its whole budget (milliseconds): not on a source's event loop.
        deliversInline = queue.pooled && plan.script == nil && !sinks.isEmpty && sinks.allSatisfy(\.deliversInline)
        scriptStage = RouteScriptStage(
            plan: plan, counters: counters, logger: router.logger, store: router.stateStore,
            failureOutcome: chain != nil ? "the run ends at the service" : spool != nil ? "dead letter" : "dropped")
    }

    var isAtLeastOnce: Bool { spool != nil }

    /// Notes the port whose index dispatches to this route (once: a route reads one port).
    func watchIndex(of port: SourcePort) {
        indexWatch.withLock { watch in
            if watch == nil || watch?.port !== port { watch = (port, port.indexedDispatches.load(ordering: .relaxed)) }
        }
    }

    /// Envelopes the port's condition index left this route out of: its condition could not
    /// hold for them. They count as received and filtered, as if the route had evaluated them.
    var skippedByIndex: Int {
        guard let (port, baseline) = indexWatch.withLock({ $0 }) else { return 0 }
        let dispatched = port.indexedDispatches.load(ordering: .relaxed) - baseline
        return max(0, dispatched - counters.indexSelected.load(ordering: .relaxed))
    }

    /// The value of `metric`: its atomic, or the queue's depth.
    func value(of metric: RouteMetric) -> Int {
        switch metric {
        case .received: counters.received.load(ordering: .relaxed) + skippedByIndex
        case .filtered: counters.filtered.load(ordering: .relaxed) + skippedByIndex
        case .sent: counters.sent.load(ordering: .relaxed)
        case .delivered: counters.delivered.load(ordering: .relaxed)
        case .failed: counters.failed.load(ordering: .relaxed)
        case .droppedFull: counters.droppedFull.load(ordering: .relaxed)
        case .droppedLoop: counters.droppedLoop.load(ordering: .relaxed)
        case .refused: counters.refused.load(ordering: .relaxed)
        case .sinkFull: counters.sinkFull.load(ordering: .relaxed)
        case .queued: queue.depth
        case .spooled: counters.spooled.load(ordering: .relaxed)
        case .deduplicated: counters.deduplicated.load(ordering: .relaxed)
        case .retried: counters.retried.load(ordering: .relaxed)
        case .deadLettered: counters.deadLettered.load(ordering: .relaxed)
        case .loadedFromSpool: counters.loadedFromSpool.load(ordering: .relaxed)
        case .spoolFailures: counters.spoolFailures.load(ordering: .relaxed)
        case .inFlight: counters.inFlight.load(ordering: .relaxed)
        case .spoolBytes: counters.spoolBytes.load(ordering: .relaxed)
        case .scriptCalls: counters.scriptCalls.load(ordering: .relaxed)
        case .scriptErrors: counters.scriptErrors.load(ordering: .relaxed)
        case .scriptBudgetStops: counters.scriptBudgetStops.load(ordering: .relaxed)
        case .scriptMicroseconds: counters.scriptMicroseconds.load(ordering: .relaxed)
        }
    }

    var name: String { plan.name }

    /// What an enqueue did.
    enum Enqueued {
        /// Taken: queued, or delivered at once on the emitting thread (an idle inline route).
        case taken
        /// A full `block` queue: the waiter is resumed once there is room.
        case full
        /// The route was closed (a shutdown, or a reload that retired it): it takes nothing
        /// more, since its worker may have finished already.
        case closed
    }

    /// Queues an envelope whose room was checked (or a `drop_oldest` queue's), or delivers it
    /// at once when the route is idle and delivers inline; false when the route is closed.
    @discardableResult
    func enqueue(_ item: QueuedEnvelope) -> Bool {
        if deliveredIfIdle(item) { return true }
        // Counted first: the worker may take it (and count it processed) before push returns.
        counters.received.add(1, ordering: .relaxed)
        let result = queue.push(item)
        guard !result.closed else {
            uncountRefused()
            return false
        }
        pushed(result)
        return true
    }

    /// Queues an envelope if a `block` queue has room (one lock); otherwise remembers to wake
    /// `waiter` (full) or refuses it (closed).
    func enqueue(_ item: QueuedEnvelope, orWake waiter: (instance: InstanceRuntime, port: String)) -> Enqueued {
        if deliveredIfIdle(item) { return .taken }
        counters.received.add(1, ordering: .relaxed)
        let result = queue.push(item, orWake: waiter)
        guard result.queued else {
            uncountRefused()
            return result.closed ? .closed : .full
        }
        pushed(result)
        return .taken
    }

    /// Takes back the count of an envelope the queue did not take (counted before the push,
    /// so `pending` never goes below what is queued); a drain waiting on it hears.
    private func uncountRefused() {
        counters.received.subtract(1, ordering: .sequentiallyConsistent)
        router.drainProgress.signal()
    }

    /// What follows a push: the dropped envelope's settlement, the pool's turn.
    private func pushed(_ result: RouteQueue.PushResult) {
        if let dropped = result.dropped {
            counters.droppedFull.add(1, ordering: .sequentiallyConsistent)
            router.drainProgress.signal()
            dropped.settlement?.complete(SY_OUTCOME_REJECT)
        }
        // An inline route is delivered on the emitting thread by ``deliveredIfIdle(_:)`` when it
        // is idle; a push schedules it only when it went idle between a claim that found it
        // busy and the push, or for a thread already delivering inline: the pool runs it.
        if result.schedule { router.workerPool.schedule(self) }
    }

    /// An idle route that delivers inline takes the emitted envelope straight to its sinks on
    /// the emitting thread, past the queue (see ``PlainRouteSlicer/deliverClaimed(_:of:)``);
    /// false when the emit should queue it: the route is busy, or delivers through the pool.
    /// At most one level deep: a sink that emits from inside its deliver sends that route to
    /// the pool, so no chain of routes grows on one thread's stack.
    private func deliveredIfIdle(_ item: QueuedEnvelope) -> Bool {
        guard deliversInline, InlineDelivery.enter() else { return false }
        defer { InlineDelivery.leave() }
        guard queue.claimIfIdle() else { return false }
        counters.received.add(1, ordering: .relaxed)
        switch slicer.deliverClaimed(item, of: self) {
        case .idle, .finished: break
        // More came meanwhile, or a sink is full: the pool takes over, and the emitting thread
        // never waits.
        case .more: router.workerPool.schedule(self)
        case .retry(let wait): router.workerPool.retry(self, waitingFor: wait)
        }
        return true
    }

    /// Closes the queue: the worker finishes what it holds and ends.
    func close() {
        if queue.close() { router.workerPool.schedule(self) }
    }

    /// Envelopes taken by the route and not yet fully dispatched (at-least-once: not yet
    /// spooled).
    var pending: Int {
        // Sequentially consistent: a drain waiting on WakeSignal reads these after counting
        // itself as a waiter (see the ordering argument there).
        counters.received.load(ordering: .sequentiallyConsistent) - counters.processed.load(ordering: .sequentiallyConsistent)
            - counters.droppedFull.load(ordering: .sequentiallyConsistent)
    }

    /// One slice of a plain route's work on the pool (see ``PlainRouteSlicer``).
    func runSlice() -> RouteSliceOutcome { slicer.runSlice(of: self, inline: false) }

    /// Signalled once the worker has finished (its queue closed and emptied).
    let finished = DispatchSemaphore(value: 0)

    /// Starts the thread of an at-least-once or iiidea route; a plain route's worker is the
    /// pool, which runs it whenever its queue schedules it.
    func startWorker() {
        guard !queue.pooled else { return }
        let thread = Thread { [self] in
            if let spool {
                SpooledDelivery(spool: spool, route: self).run()
            } else if let chain {
                work(chain)
            }
            workerDone()
        }
        thread.name = "route " + name
        thread.start()
    }

    /// The worker has finished: the script's state is written one last time, the router told.
    func workerDone() {
        scriptStage?.keepState(force: true)
        router.workerFinished()
        finished.signal()
    }

    /// What one try at a sink came to.
    enum SinkTry {
        /// Its answer for this delivery: taken (`SY_OK`) or refused.
        case answered(Int32)
        /// Not taken for now: try again once the wait is over.
        case full(SinkWait)
    }

    /// Delivers once. The sink answered "full" (or "stopped" while its instance still runs:
    /// ABI section 5 treats both alike): ``SinkTry/full(_:)``, with what to wait for before the
    /// next try, `previous` being the last pause (nil: none yet). Waiting is the backpressure:
    /// the route queue fills and emits on `block` routes are refused until the sink has room.
    /// Gives up only when the sink instance stops (or, on an at-least-once route, stands by).
    func tryDelivery(_ envelope: Envelope, to sink: SinkPort, deliveryID: UInt64, after previous: Duration?) -> SinkTry {
        let room = sink.instance.sinkRoom
        // Noted before the try: the sink's word that comes after its "full" is not missed.
        let seen = room.count
        let status =
            if let tracing {
                tracing.deliver(envelope, route: name, to: sink, deliveryID: deliveryID)
            } else {
                sink.instance.deliver(envelope, port: sink, deliveryID: deliveryID)
            }
        guard status == SY_ERR_FULL || status == SY_ERR_STOPPED, sink.instance.accepting.load(ordering: .relaxed) else {
            return .answered(status)
        }
        // A sink standing by (another router holds it) may stay so for good: an at-least-once
        // route keeps the envelope in its spool, retried later, and goes on accepting.
        let standingBy = sink.instance.standingBy.load(ordering: .relaxed)
        if status == SY_ERR_STOPPED, isAtLeastOnce, standingBy { return .answered(status) }
        counters.sinkFull.add(1, ordering: .relaxed)
        // No word of room follows "stopped", nor anything the host answers for an instance
        // standing by: those are tried again on the timer.
        let timerOnly = status == SY_ERR_STOPPED || standingBy
        return .full(SinkWait(pause: room.pause(after: previous, timerOnly: timerOnly), room: room, seen: seen))
    }

    /// ``tryDelivery(_:to:deliveryID:after:)`` until the sink takes it, waiting between tries
    /// for the sink to say it has room (or the pause to pass): for the routes with a thread of
    /// their own (at-least-once, iiidea).
    func deliverWaitingForRoom(_ envelope: Envelope, to sink: SinkPort, deliveryID: UInt64) -> Int32 {
        var pause: Duration?
        while true {
            switch tryDelivery(envelope, to: sink, deliveryID: deliveryID, after: pause) {
            case .answered(let status):
                return status
            case .full(let wait):
                wait.room.wait(after: wait.seen, atMost: wait.pause)
                pause = wait.pause
            }
        }
    }

    /// Applies `when:` and the transform or script: what the route sends for `envelope`.
    func outcome(for envelope: Envelope) -> RouteOutcome {
        if let tracing { return tracing.routed(envelope, route: name) { untracedOutcome(for: $0) } }
        return untracedOutcome(for: envelope)
    }

    /// ``outcome(for:)`` outside a span.
    @inline(__always)
    private func untracedOutcome(for envelope: Envelope) -> RouteOutcome {
        // A plain route neither looks inside nor changes the envelope: no scope to build.
        if plan.condition == nil, plan.transform == nil, plan.script == nil {
            if tap.isActive { tap.publish(envelope) }
            return .one(envelope)
        }
        // One scope for the condition and the transform: the body is decoded once.
        var scope: EnvelopeScope?
        if let condition = plan.condition {
            var conditionScope = EnvelopeScope(envelope)
            guard condition.evaluate(&conditionScope) else {
                counters.filtered.add(1, ordering: .relaxed)
                return .filtered
            }
            scope = conditionScope
        }
        if let transform = plan.transform {
            var transformScope = scope ?? EnvelopeScope(envelope)
            let output = transform.apply(&transformScope)
            if tap.isActive { tap.publish(output) }
            return .one(output)
        }
        if let scriptStage { return scriptStage.outcome(for: envelope, tappedBy: tap) }
        if tap.isActive { tap.publish(envelope) }
        return .one(envelope)
    }

    /// The indexes of the sinks `envelope` may go to: all but those already in its trace
    /// (counted in dropped_loop) unless the route allows loops.
    func targets(for envelope: Envelope) -> [Int] {
        sinks.indices.filter { admits(envelope, toSink: $0) }
    }

    /// Whether `envelope` may go to sink `index`: not when the sink's instance is already in
    /// its trace (counted in dropped_loop), unless the route allows loops.
    @inline(__always)
    func admits(_ envelope: Envelope, toSink index: Int) -> Bool {
        let sink = sinks[index]
        guard !plan.declaration.allowLoops, envelope.trace.contains(sink.instance.name) else { return true }
        counters.droppedLoop.add(1, ordering: .relaxed)
        if !loopWarned.exchange(true, ordering: .relaxed) {
            router.logger.notice(
                "loop stopped: envelope already passed through the target instance (counted in dropped_loop; 'loop: allow' on the route lets it through)",
                metadata: [
                    "route": .string(name), "sink": .string(sink.qualifiedName),
                    "trace": .string(envelope.trace.joined(separator: " → ")),
                ]
            )
        }
        return false
    }
}
