internal import SwitchyardABI
internal import SwitchyardCore

/// Runs a plain route on the router's ``RouteWorkerPool`` one slice at a time, and owns where
/// the route is between two slices (``PlainRouteSlice``). Separate from ``RouteRuntime``, which
/// holds what every kind of route shares (queue, sinks, counters, delivery to a sink): only a
/// plain route is worked in slices, an at-least-once or iiidea route has a thread of its own.
///
/// The route is handed in rather than kept, so reaching it costs what reaching `self` did.
struct PlainRouteSlicer: Sendable {
    /// Envelopes a slice takes from the queue at a time.
    static let sliceBatch = 256
    /// Batches a slice works through before the route goes to the back of the pool's ready
    /// list, so a busy route cannot keep the others waiting.
    static let batchesPerSlice = 4
    /// The route's place in its work between slices. A pooled route runs on one pool thread
    /// at a time (the queue's `scheduled` flag orders them), so the lock is never contended;
    /// it hands the slice from one thread to the next.
    private let slice = Locked(PlainRouteSlice())

    /// One slice of `route`'s work: finishes the batch in hand, then takes and dispatches up to
    /// ``batchesPerSlice`` more. `inline`: the slice runs on an emitting thread (see
    /// ``RouteRuntime/deliversInline``), so it takes one batch, looks once for more and never
    /// watches the empty queue.
    func runSlice(of route: RouteRuntime, inline: Bool) -> RouteSliceOutcome {
        // Worked on as a local and put back at the end: two uncontended lock operations per
        // slice, none per envelope.
        var work = slice.withLock { slice in
            defer { slice = PlainRouteSlice() }
            return slice
        }
        let outcome = runSlice(&work, of: route, inline: inline)
        slice.withLock { $0 = work }
        switch outcome {
        case .idle:
            // Last: once unscheduled, another pool thread may run this route at once, so
            // nothing of it may be touched after this (its state is back in `slice`).
            return route.queue.unscheduleIfEmpty() ? .idle : .more
        case .finished:
            route.workerDone()
            return .finished
        case .more, .retry:
            return outcome
        }
    }

    /// Delivers one envelope of a route its emitting thread claimed idle (see
    /// ``RouteQueue/claimIfIdle()``), without queueing it: the queue, the batch and the slice's
    /// lock are what an idle route's envelope would otherwise pass through. What was queued
    /// meanwhile is taken by an inline slice, as an emit that had queued it would have; a full
    /// sink leaves the envelope as the batch in hand, for the pool to try again.
    func deliverClaimed(_ item: QueuedEnvelope, of route: RouteRuntime) -> RouteSliceOutcome {
        var work = PlainRouteSlice()
        if let wait = dispatch(item, &work, on: route) {
            work.batch = [item]
            slice.withLock { stored in
                work.spinBudget = stored.spinBudget
                work.idleSince = stored.idleSince
                stored = work
            }
            return .retry(wait)
        }
        route.counters.processed.add(1, ordering: .sequentiallyConsistent)
        route.router.drainProgress.signal()
        return route.queue.unscheduleIfEmpty() ? .idle : runSlice(of: route, inline: true)
    }

    private func runSlice(_ work: inout PlainRouteSlice, of route: RouteRuntime, inline: Bool) -> RouteSliceOutcome {
        if !inline, let idleSince = work.idleSince {
            work.spinBudget.idled(for: idleSince.duration(to: .now))
            work.idleSince = nil
        }
        // Inline: the second take finds the queue empty in the usual case (the emit that
        // started the slice is in the first), so the route goes idle without the pool.
        for _ in 0..<(inline ? 2 : Self.batchesPerSlice) {
            if let wait = finishBatch(&work, of: route) { return .retry(wait) }
            // Waiting a little for more is worth it only on a pool thread, and only while no
            // other route waits for one.
            let spins = inline || route.router.workerPool.hasReadyRoutes ? 0 : work.spinBudget.spins
            let (take, spun, resume) = route.queue.take(into: &work.batch, limit: Self.sliceBatch, spins: spins)
            for waiter in resume { waiter.instance.resume(port: waiter.port) }
            switch take {
            case .taken:
                if spun > 0 { work.spinBudget.found() }
            case .empty:
                if spins > 0 { work.spinBudget.missed() }
                if !inline { work.idleSince = .now }
                return .idle
            case .closed: return .finished
            }
        }
        if let wait = finishBatch(&work, of: route) { return .retry(wait) }
        return .more
    }

    /// Dispatches the rest of the batch in hand; what to wait for before the next try when a
    /// sink was full.
    private func finishBatch(_ work: inout PlainRouteSlice, of route: RouteRuntime) -> SinkWait? {
        while work.position < work.batch.count {
            // By index: each envelope is borrowed from the batch, not copied out and released.
            if let wait = dispatch(work.batch[work.position], &work, on: route) { return wait }
            work.position += 1
        }
        guard !work.batch.isEmpty else { return nil }
        // One count per batch: the emitting thread never waits on this cache line. It is
        // sequentially consistent so a draining shutdown that counted itself as waiting
        // before it read the count is sure to be woken (see WakeSignal).
        route.counters.processed.add(work.batch.count, ordering: .sequentiallyConsistent)
        route.router.drainProgress.signal()
        work.batch.removeAll(keepingCapacity: true)
        work.position = 0
        return nil
    }

    /// Delivers `item` to each sink from the one the route got to; what to wait for before the
    /// next try when a sink was full (the route resumes at that sink).
    private func dispatch(_ item: QueuedEnvelope, _ work: inout PlainRouteSlice, on route: RouteRuntime) -> SinkWait? {
        if work.output == nil {
            switch route.outcome(for: item.envelope) {
            case .filtered:
                if item.probe != 0 { route.latency?.finish(item.probe, ok: false) }
                item.settlement?.complete(SY_OUTCOME_OK)
                return nil
            case .failed:
                // Counted and logged by the script stage; at most once, so it is dropped.
                if item.probe != 0 { route.latency?.finish(item.probe, ok: false) }
                item.settlement?.complete(SY_OUTCOME_REJECT)
                return nil
            case .one(let output):
                work.output = output
            case .many(let outputs):
                work.output = outputs.first
                work.laterOutputs = outputs.dropFirst().reversed()
            }
            work.sink = 0
            work.probeSent = false
        }
        while let output = work.output {
            // Sink by sink rather than through targets(for:): no array per envelope.
            while work.sink < route.sinks.count {
                let index = work.sink
                if route.admits(output, toSink: index) {
                    let sink = route.sinks[index]
                    // The sample rides on the first delivery of its envelope.
                    let probing = item.probe != 0 && !work.probeSent
                    let deliveryID =
                        work.retriedDeliveryID
                        ?? route.router.deliveries.nextID(tracking: item.settlement, route: route.index, probing: probing)
                    if probing {
                        route.latency?.dispatched(item.probe, as: deliveryID)
                        work.probeSent = true
                    }
                    let status: Int32
                    switch route.tryDelivery(output, to: sink, deliveryID: deliveryID, after: work.pause) {
                    case .answered(let answer):
                        status = answer
                    case .full(let wait):
                        work.retriedDeliveryID = deliveryID
                        work.pause = wait.pause
                        return wait
                    }
                    work.retriedDeliveryID = nil
                    work.pause = nil
                    if status == SY_OK {
                        route.counters.sent.add(1, ordering: .relaxed)
                    } else {
                        refused(deliveryID, by: sink, status: status, on: route)
                    }
                }
                work.sink = index + 1
            }
            work.output = work.laterOutputs.popLast()
            work.sink = 0
        }
        if item.probe != 0, !work.probeSent { route.latency?.finish(item.probe, ok: false) }
        item.settlement?.complete(SY_OUTCOME_OK)
        return nil
    }

    /// A sink refused a delivery: counted, logged and settled as the ABI says.
    private func refused(_ deliveryID: UInt64, by sink: SinkPort, status: Int32, on route: RouteRuntime) {
        route.counters.refused.add(1, ordering: .relaxed)
        route.router.logger.warning(
            "sink refused a delivery",
            metadata: ["route": .string(route.name), "sink": .string(sink.qualifiedName), "status": .stringConvertible(status)]
        )
        // Not taken "for now" (failed, stopping) is worth another try to the source;
        // invalid or an unknown port never is (ABI section 5).
        let transient = status == SY_ERR_FAILED || status == SY_ERR_STOPPED || status == SY_ERR_FULL
        route.router.deliveries.finished(
            deliveryID, outcome: transient ? SY_OUTCOME_RETRY : SY_OUTCOME_REJECT, reason: sy_bytes(), acknowledgedBySink: false)
    }
}
