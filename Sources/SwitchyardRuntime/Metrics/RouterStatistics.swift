/// A snapshot of the router's counters, read from the same atomics ``MetricsRegistry``
/// publishes (the admin API, the log's route totals and tests read this).
public struct RouterStatistics: Sendable {
    /// Per-route counters.
    public struct Route: Sendable {
        public var name: String
        /// Whether the route is `delivery: at-least-once`; only those have the metrics that
        /// are ``RouteMetric/atLeastOnceOnly``.
        public var atLeastOnce: Bool
        /// Every metric the route has.
        public var values: [RouteMetric: Int]

        /// The value of `metric` (0 for one the route does not have).
        public subscript(_ metric: RouteMetric) -> Int { values[metric] ?? 0 }

        /// Envelopes handed to the route.
        public var received: Int { self[.received] }
        /// Envelopes its `when:` rejected.
        public var filtered: Int { self[.filtered] }
        /// Deliveries a sink took, acknowledged or not yet.
        public var sent: Int { self[.sent] }
        /// Deliveries a sink acknowledged as done.
        public var delivered: Int { self[.delivered] }
        /// Deliveries a sink acknowledged as failed.
        public var failed: Int { self[.failed] }
        /// Envelopes dropped by `on_full: drop_oldest`.
        public var droppedFull: Int { self[.droppedFull] }
        /// Deliveries skipped because the sink instance was already in the trace.
        public var droppedLoop: Int { self[.droppedLoop] }
        /// Deliveries a sink refused.
        public var refused: Int { self[.refused] }
        /// Envelopes waiting now.
        public var queued: Int { self[.queued] }

        /// The counters by the names the log's route totals and the admin API use, in
        /// declaration order; the at-least-once ones only for at-least-once routes.
        public var namedCounters: [(name: String, value: Int)] {
            RouteMetric.allCases.compactMap { metric in values[metric].map { (metric.rawValue, $0) } }
        }
    }

    /// Per-instance counters.
    public struct Instance: Sendable {
        public var name: String
        /// Every metric the instance has.
        public var values: [InstanceMetric: Int]
        /// Per port: envelopes emitted (source) or deliveries taken (sink).
        public var ports: [Port]

        /// The value of `metric`.
        public subscript(_ metric: InstanceMetric) -> Int { values[metric] ?? 0 }

        /// Envelopes it emitted that routes took.
        public var emitted: Int { self[.emitted] }
        /// Emits refused because a blocking queue was full.
        public var refusedFull: Int { self[.refusedFull] }
        /// Emits on ports no route reads.
        public var unrouted: Int { self[.unrouted] }
        /// Emits refused as malformed (unknown port, no type).
        public var invalid: Int { self[.invalid] }
        /// Deliveries it acknowledged as done.
        public var acknowledged: Int { self[.acknowledged] }
        /// Deliveries it acknowledged as failed.
        public var failed: Int { self[.failed] }
        /// Deliveries not yet acknowledged.
        public var inFlight: Int { self[.inFlight] }
    }

    /// One port's count.
    public struct Port: Sendable {
        /// The port name.
        public var name: String
        /// `source` or `sink`.
        public var direction: String
        /// Envelopes emitted that routes took (source), or deliveries taken (sink).
        public var envelopes: Int
    }

    /// Routes, in declaration order.
    public var routes: [Route]
    /// Instances, in declaration order.
    public var instances: [Instance]
    /// Metrics reported by plugins, `instance.metric` → value.
    public var pluginMetrics: [String: Double]
}

extension RouterStatistics.Route {
    init(_ route: RouteRuntime) {
        name = route.name
        atLeastOnce = route.isAtLeastOnce
        values = [:]
        for metric in RouteMetric.allCases where metric.applies(atLeastOnce: atLeastOnce, scripted: route.plan.script != nil) {
            values[metric] = route.value(of: metric)
        }
    }
}

extension RouterStatistics.Instance {
    init(_ instance: InstanceRuntime) {
        name = instance.name
        values = [:]
        for metric in InstanceMetric.allCases { values[metric] = instance.counters.value(of: metric) }
        ports = instance.portCounts.map { .init(name: $0.port, direction: $0.direction, envelopes: $0.count) }
    }
}
