import Foundation
internal import Logging
internal import SwitchyardABI
internal import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardSpool
import Synchronization

/// The hot-path counters of one route: atomics, so emitting and dispatching threads never
/// share a lock. ``RouteMetric`` declares what is exported from them.
final class RouteCounters: Sendable {
    let received = Atomic<Int>(0)
    let filtered = Atomic<Int>(0)
    let dispatched = Atomic<Int>(0)
    let droppedFull = Atomic<Int>(0)
    let droppedLoop = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    /// Envelopes the worker has finished with (filtered or dispatched to every sink).
    let processed = Atomic<Int>(0)
    /// Times a sink answered "full" and the delivery waited.
    let sinkFull = Atomic<Int>(0)
    /// Deliveries the sinks acknowledged as done (at-least-once routes).
    let acknowledged = Atomic<Int>(0)
    /// Envelopes written to the spool (at-least-once routes).
    let spooled = Atomic<Int>(0)
    /// Envelopes dropped because their id was seen within the dedupe window.
    let deduplicated = Atomic<Int>(0)
    /// Failed deliveries scheduled for another attempt.
    let retried = Atomic<Int>(0)
    /// Deliveries given up on and moved to the dead letters.
    let deadLettered = Atomic<Int>(0)
    /// Envelopes read back from the spool (after a restart, a spill or a replay).
    let loadedFromSpool = Atomic<Int>(0)
    /// Batches the spool could not write (their sources were told to retry).
    let spoolFailures = Atomic<Int>(0)
    /// At-least-once deliveries waiting for their acknowledgement.
    let inFlight = Atomic<Int>(0)
    /// Bytes the route holds in the spool.
    let spoolBytes = Atomic<Int>(0)
}

/// A route at run time: its queue and the worker thread that applies `when` and the
/// transform and delivers to each sink.
final class RouteRuntime: @unchecked Sendable {
    // No lock of its own: everything is immutable after wiring except the counters and
    // `loopWarned` (atomics) and the queue (guarded by its own condition). `spooled` and
    // `iiidea` are not Sendable: only the route's worker thread touches them.
    let plan: PlannedRoute
    let queue: RouteQueue
    let sinks: [SinkPort]
    let counters = RouteCounters()
    /// The route's place in the router: part of its at-least-once delivery ids.
    let index: Int
    unowned let router: Router
    private let loopWarned = Atomic<Bool>(false)
    /// The durable side of an at-least-once route; touched by the worker thread only.
    private let spooled: SpooledDelivery?

    /// The runner of an iiidea route; touched by the worker thread only.
    let iiidea: IiideaRunner?

    init(plan: PlannedRoute, index: Int, sinks: [SinkPort], router: Router, spool: Spool?, iiidea: IiideaRunner? = nil) {
        self.plan = plan
        self.index = index
        self.sinks = sinks
        self.router = router
        self.iiidea = iiidea
        queue = RouteQueue(capacity: plan.declaration.queueSize, policy: plan.declaration.onFull)
        spooled = spool.map { SpooledDelivery(spool: $0) }
        spooled?.route = self
        iiidea?.route = self
    }

    var isAtLeastOnce: Bool { spooled != nil }

    /// The value of `metric`: its atomic, or the queue's depth.
    func value(of metric: RouteMetric) -> Int {
        switch metric {
        case .received: counters.received.load(ordering: .relaxed)
        case .filtered: counters.filtered.load(ordering: .relaxed)
        case .delivered: counters.dispatched.load(ordering: .relaxed)
        case .droppedFull: counters.droppedFull.load(ordering: .relaxed)
        case .droppedLoop: counters.droppedLoop.load(ordering: .relaxed)
        case .refused: counters.refused.load(ordering: .relaxed)
        case .sinkFull: counters.sinkFull.load(ordering: .relaxed)
        case .queued: queue.depth
        case .acknowledged: counters.acknowledged.load(ordering: .relaxed)
        case .spooled: counters.spooled.load(ordering: .relaxed)
        case .deduplicated: counters.deduplicated.load(ordering: .relaxed)
        case .retried: counters.retried.load(ordering: .relaxed)
        case .deadLettered: counters.deadLettered.load(ordering: .relaxed)
        case .loadedFromSpool: counters.loadedFromSpool.load(ordering: .relaxed)
        case .spoolFailures: counters.spoolFailures.load(ordering: .relaxed)
        case .inFlight: counters.inFlight.load(ordering: .relaxed)
        case .spoolBytes: counters.spoolBytes.load(ordering: .relaxed)
        }
    }

    var name: String { plan.name }

    /// Queues an envelope whose room was checked (or a `drop_oldest` queue's).
    func enqueue(_ item: QueuedEnvelope) {
        counters.received.add(1, ordering: .relaxed)
        if let dropped = queue.push(item) { droppedOldest(dropped) }
    }

    /// Queues an envelope if a `block` queue has room (one lock); otherwise remembers to wake
    /// `waiter` and returns false.
    func enqueue(_ item: QueuedEnvelope, orWake waiter: (instance: InstanceRuntime, port: String)) -> Bool {
        switch queue.push(item, orWake: waiter) {
        case .queued:
            counters.received.add(1, ordering: .relaxed)
        case .droppedOldest(let dropped):
            counters.received.add(1, ordering: .relaxed)
            droppedOldest(dropped)
        case .full:
            return false
        }
        return true
    }

    private func droppedOldest(_ dropped: QueuedEnvelope) {
        counters.droppedFull.add(1, ordering: .sequentiallyConsistent)
        router.drainProgress.signal()
        dropped.settlement?.complete(SY_OUTCOME_REJECT)
    }

    /// Envelopes taken by the route and not yet fully dispatched (at-least-once: not yet
    /// spooled).
    var pending: Int {
        // Sequentially consistent: a drain waiting on DrainSignal reads these after counting
        // itself as a waiter (see the ordering argument there).
        counters.received.load(ordering: .sequentiallyConsistent) - counters.processed.load(ordering: .sequentiallyConsistent)
            - counters.droppedFull.load(ordering: .sequentiallyConsistent)
    }

    /// Signalled once the worker has finished (its queue closed and emptied).
    let finished = DispatchSemaphore(value: 0)

    func startWorker() {
        let thread = Thread { [self] in
            work()
            finished.signal()
        }
        thread.name = "route " + name
        thread.start()
    }

    private func work() {
        if let spooled {
            spooled.run()
            router.workerFinished()
            return
        }
        if let iiidea {
            iiidea.run()
            router.workerFinished()
            return
        }
        var batch: [QueuedEnvelope] = []
        batch.reserveCapacity(256)
        while true {
            let (open, resume) = queue.takeBatch(into: &batch, limit: 256)
            for waiter in resume { waiter.instance.resume(port: waiter.port) }
            guard open else { break }
            // By index: each envelope is borrowed from the batch, not copied out and released.
            for index in batch.indices { dispatch(batch[index]) }
            // One count per batch: the emitting thread never waits on this cache line. It is
            // sequentially consistent so a draining shutdown that counted itself as waiting
            // before it read the count is sure to be woken (see DrainSignal).
            counters.processed.add(batch.count, ordering: .sequentiallyConsistent)
            router.drainProgress.signal()
            batch.removeAll(keepingCapacity: true)
        }
        router.workerFinished()
    }

    /// Delivers; while the sink answers "full" (or "stopped" while its instance still runs:
    /// ABI section 5 treats both alike), waits (1 ms, doubling to 50 ms) and tries again.
    /// Holding the worker here is the backpressure: the route queue fills and emits on
    /// `block` routes are refused until the sink has room. Gives up only when the sink
    /// instance stops.
    func deliverWaitingForRoom(_ envelope: Envelope, to sink: SinkPort, deliveryID: UInt64) -> Int32 {
        var pause = 0.001
        while true {
            let status = sink.instance.deliver(envelope, port: sink, deliveryID: deliveryID)
            guard status == SY_ERR_FULL || status == SY_ERR_STOPPED, sink.instance.accepting.load(ordering: .relaxed) else {
                return status
            }
            counters.sinkFull.add(1, ordering: .relaxed)
            Thread.sleep(forTimeInterval: pause)
            pause = min(pause * 2, 0.05)
        }
    }

    /// Applies `when:` and the transform; `nil` (counted as filtered) when the condition
    /// rejects the envelope.
    func transformed(_ envelope: Envelope) -> Envelope? {
        // A plain route neither looks inside nor changes the envelope: no scope to build.
        if plan.condition == nil, plan.transform == nil { return envelope }
        var scope = EnvelopeScope(envelope)
        if let condition = plan.condition, !condition.evaluate(&scope) {
            counters.filtered.add(1, ordering: .relaxed)
            return nil
        }
        return plan.transform.map { $0.apply(&scope) } ?? envelope
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

    private func dispatch(_ item: QueuedEnvelope) {
        guard let output = transformed(item.envelope) else {
            item.settlement?.complete(SY_OUTCOME_OK)
            return
        }
        // Sink by sink rather than through targets(for:): no array per envelope.
        for index in sinks.indices where admits(output, toSink: index) {
            let sink = sinks[index]
            let deliveryID = router.nextDeliveryID(tracking: item.settlement)
            let status = deliverWaitingForRoom(output, to: sink, deliveryID: deliveryID)
            if status == SY_OK {
                counters.dispatched.add(1, ordering: .relaxed)
            } else {
                counters.refused.add(1, ordering: .relaxed)
                router.logger.warning(
                    "sink refused a delivery",
                    metadata: ["route": .string(name), "sink": .string(sink.qualifiedName), "status": .stringConvertible(status)]
                )
                // Not taken "for now" (failed, stopping) is worth another try to the source;
                // invalid or an unknown port never is (ABI section 5).
                let transient = status == SY_ERR_FAILED || status == SY_ERR_STOPPED || status == SY_ERR_FULL
                router.deliveryFinished(deliveryID, outcome: transient ? SY_OUTCOME_RETRY : SY_OUTCOME_REJECT, reason: sy_bytes())
            }
        }
        item.settlement?.complete(SY_OUTCOME_OK)
    }
}
