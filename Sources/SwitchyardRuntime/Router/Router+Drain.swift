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
}
