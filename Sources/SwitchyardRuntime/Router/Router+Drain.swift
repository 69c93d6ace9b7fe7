extension Router {
    /// What a draining shutdown still waits for, as one line: each route's queued envelopes and
    /// each instance's unacknowledged deliveries (`route 'jobs': 120 queued; instance 'broker':
    /// 3 unacknowledged`), so a stop that hangs on a peer names the peer.
    func drainWaits(_ graph: CompiledGraph) -> String {
        var parts: [String] = []
        for route in graph.routes where route.pending > 0 { parts.append("route '\(route.name)': \(route.pending) queued") }
        for instance in graph.instances {
            let unacknowledged = instance.counters.inFlight.load(ordering: .relaxed)
            if unacknowledged > 0 { parts.append("instance '\(instance.name)': \(unacknowledged) unacknowledged") }
        }
        return parts.isEmpty ? "nothing (finishing)" : parts.joined(separator: "; ")
    }

    /// Waits until nothing is queued, in flight, spooled or waiting for a retry; false at
    /// `deadline` (`switchyard test` between a case's inputs and its verdict). Every worker
    /// turn signals the drain signal, an at-least-once route's included (its acknowledgements
    /// and retries are worker turns); the spool counters read here are relaxed atomics, so a
    /// wake-up could in principle be missed: the wait is cut into slices of 100 ms as a
    /// backstop, never as the way to see progress.
    package func waitUntilQuiet(until deadline: ContinuousClock.Instant) -> Bool {
        func busy() -> Bool {
            outstanding > 0
                || routes.contains {
                    $0.isAtLeastOnce
                        && ($0.counters.spoolBytes.load(ordering: .relaxed) > 0 || $0.counters.inFlight.load(ordering: .relaxed) > 0)
                }
        }
        while ContinuousClock.now < deadline {
            if drainProgress.wait(until: min(deadline, ContinuousClock.now + .milliseconds(100)), while: busy) { return true }
        }
        return !busy()
    }
}
