internal import Logging
internal import SwitchyardABI
internal import SwitchyardCore

// Emits: what a source port hands over, stamped and queued on the port's routes.
extension InstanceRuntime {
    /// The host's `emit`: copy (with `read`, which knows the plugin's envelope layout and
    /// answers nil for a malformed one), stamp, and hand to every route of the port.
    func emit(port portBytes: sy_bytes, settleToken: UInt64, read: () -> Envelope?) -> Int32 {
        guard accepting.load(ordering: .relaxed) else { return SY_ERR_STOPPED }
        guard let port = sourcePort(matching: portBytes) else {
            if plugin.manifest.port(named: portBytes.string)?.direction == .source {
                return unrouted(settleToken: settleToken)
            }
            reportInvalid("emit on unknown source port '\(portBytes.string)'")
            return SY_ERR_UNKNOWN_PORT
        }
        let wiring = port.wiring
        guard !wiring.routes.isEmpty else { return unrouted(settleToken: settleToken) }
        // With several routes, check every blocking queue first so an emit is all or nothing;
        // a single route checks and pushes under one lock below. With a condition index, the
        // envelope is read first: only the routes it picks are checked.
        if wiring.index == nil, !reserveRoom(on: wiring.routes, for: port) {
            counters.refusedFull.add(1, ordering: .relaxed)
            return SY_ERR_FULL
        }
        guard var envelope = read() else {
            reportInvalid("envelope emitted on \(port.qualifiedName) has a struct_size smaller than ABI version 2's")
            return SY_ERR_INVALID
        }
        guard !envelope.type.isEmpty else {
            reportInvalid("envelope emitted on \(port.qualifiedName) has no type")
            return SY_ERR_INVALID
        }
        if envelope.time == 0 { envelope.time = Clock.nowUnixNanos() }
        if envelope.id.isEmpty { envelope.id = ULID.next(unixNanos: envelope.time) }
        envelope.source = port.qualifiedName
        if envelope.trace.isEmpty { envelope.trace = traceOfItself } else { envelope.trace.append(name) }
        var routes = wiring.routes
        if wiring.index != nil {
            routes = wiring.candidates(for: envelope)
            if !reserveRoom(on: routes, for: port) {
                counters.refusedFull.add(1, ordering: .relaxed)
                return SY_ERR_FULL
            }
        }
        if let tracing {
            let span = tracing.received(&envelope, on: port.qualifiedName)
            let status = hand(envelope, from: port, to: routes, indexed: wiring.index != nil, settleToken: settleToken)
            tracing.emitted(span, status: status)
            return status
        }
        return hand(envelope, from: port, to: routes, indexed: wiring.index != nil, settleToken: settleToken)
    }

    /// Reserves room on every blocking queue of `routes` when there are several (one route
    /// checks and pushes under one lock); false when one is full (its waiter is set).
    private func reserveRoom(on routes: [RouteRuntime], for port: SourcePort) -> Bool {
        guard routes.count > 1 else { return true }
        for route in routes where route.queue.policy != .dropOldest {
            guard route.queue.reserveRoom(orWake: (self, port.name)) else { return false }
        }
        return true
    }

    /// The rest of ``emit(port:settleToken:read:)``: queues the stamped envelope on every route
    /// of `port` and counts it.
    ///
    /// A route closed meanwhile takes nothing (its worker may have ended): during a shutdown the
    /// emit is refused as stopped; after a reload retired the route, it goes to the routes the
    /// reload wired to the port instead. A refused emit leaves its settlement unsettled (the
    /// emitter's own share is never completed): the source hears the status and keeps it.
    @inline(__always)
    private func hand(_ envelope: Envelope, from port: SourcePort, to routes: [RouteRuntime], indexed: Bool, settleToken: UInt64)
        -> Int32
    {
        let settlement =
            settleToken != 0 && plugin.table.api.settled != nil
            ? Settlement(instance: self, token: settleToken, afterDelivery: port.settlesAfterDelivery) : nil
        var routes = routes
        var indexed = indexed
        if indexed, routes.isEmpty { return pickedNone(envelope, from: port, settlement: settlement) }
        // A reload wires the new routes before it closes the old, so one more look finds them.
        for attempt in 0..<3 {
            let taken: Bool
            if routes.count == 1 {
                settlement?.expect()
                let queued = QueuedEnvelope(envelope: envelope, settlement: settlement, probe: routes[0].latency?.claim() ?? 0)
                let outcome = routes[0].enqueue(queued, orWake: (self, port.name))
                taken = outcome == .taken
                if !taken {
                    if queued.probe != 0 { routes[0].latency?.finish(queued.probe, ok: false) }
                    // Undoes this route's expect(); the emitter's own share keeps it unsettled.
                    settlement?.complete(SY_OUTCOME_OK)
                    if outcome == .full {
                        counters.refusedFull.add(1, ordering: .relaxed)
                        return SY_ERR_FULL
                    }
                }
            } else {
                var closed: [RouteRuntime] = []
                for route in routes {
                    settlement?.expect()
                    let queued = QueuedEnvelope(envelope: envelope, settlement: settlement, probe: route.latency?.claim() ?? 0)
                    if !route.enqueue(queued) {
                        if queued.probe != 0 { route.latency?.finish(queued.probe, ok: false) }
                        settlement?.complete(SY_OUTCOME_OK)
                        closed.append(route)
                    }
                }
                taken = closed.count < routes.count
                // Some routes took it: a retired one among them is replaced by its successor
                // (same name), if the reload kept one; during a shutdown it is left out.
                if taken, !closed.isEmpty, !router.isDraining {
                    let current = port.routes
                    for route in closed {
                        guard let successor = current.first(where: { $0.name == route.name && $0 !== route }) else { continue }
                        settlement?.expect()
                        if !successor.enqueue(QueuedEnvelope(envelope: envelope, settlement: settlement)) {
                            settlement?.complete(SY_OUTCOME_OK)
                        }
                    }
                }
            }
            if taken {
                if indexed {
                    port.indexedDispatches.add(1, ordering: .relaxed)
                    for route in routes { route.counters.indexSelected.add(1, ordering: .relaxed) }
                }
                counters.emitted.add(1, ordering: .relaxed)
                port.emitted.add(1, ordering: .relaxed)
                if port.tap.isActive { port.tap.publish(envelope) }
                settlement?.complete(SY_OUTCOME_OK)
                return SY_OK
            }
            // Every route was closed: stopped during a shutdown, else the routes wired now.
            guard attempt < 2, !router.isDraining else { return SY_ERR_STOPPED }
            let rewired = port.wiring
            guard !rewired.routes.isEmpty else { return unrouted(settleToken: settleToken) }
            routes = rewired.candidates(for: envelope)
            indexed = rewired.index != nil
            if indexed, routes.isEmpty { return pickedNone(envelope, from: port, settlement: settlement) }
        }
        return SY_ERR_STOPPED
    }

    /// An envelope the condition index picked no route for: every route's condition is false
    /// for it, as if each had evaluated it (they count it received and filtered).
    private func pickedNone(_ envelope: Envelope, from port: SourcePort, settlement: Settlement?) -> Int32 {
        port.indexedDispatches.add(1, ordering: .relaxed)
        counters.emitted.add(1, ordering: .relaxed)
        port.emitted.add(1, ordering: .relaxed)
        if port.tap.isActive { port.tap.publish(envelope) }
        settlement?.complete(SY_OUTCOME_OK)
        return SY_OK
    }

    /// An emit on a port no route reads from: nothing to deliver, so it is settled at once.
    private func unrouted(settleToken: UInt64) -> Int32 {
        counters.unrouted.add(1, ordering: .relaxed)
        if settleToken != 0 { settled(token: settleToken, outcome: SY_OUTCOME_OK) }
        return SY_OK
    }

    /// Counts and logs a malformed emit; the first few get a line each.
    private func reportInvalid(_ problem: String) {
        let count = counters.invalid.add(1, ordering: .relaxed).newValue
        if count <= 10 || count.isMultiple(of: 1000) {
            logger.warning("invalid emit refused: \(problem)", metadata: ["invalid_emits": .stringConvertible(count)])
        }
    }
}
