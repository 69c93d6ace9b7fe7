/// A counter or gauge of every route, declared once: the name the admin API and the log's
/// route totals use, the Prometheus series it is exported as, and its help text.
///
/// The values live in per-route atomics (see `RouteCounters`) because the hot path must not
/// take a lock or a dictionary lookup per envelope; ``MetricsRegistry`` reads them into
/// swift-metrics handles when the metrics are scraped.
public enum RouteMetric: String, CaseIterable, Sendable {
    case received
    case filtered
    case sent
    case delivered
    case failed
    case droppedFull = "dropped_full"
    case droppedLoop = "dropped_loop"
    case refused
    case sinkFull = "sink_full"
    case queued
    case spooled
    case deduplicated
    case retried
    case deadLettered = "dead_lettered"
    case loadedFromSpool = "loaded_from_spool"
    case spoolFailures = "spool_failures"
    case inFlight = "in_flight"
    case spoolBytes = "spool_bytes"
    case scriptCalls = "script_calls"
    case scriptErrors = "script_errors"
    case scriptBudgetStops = "script_budget_stops"
    case scriptMicroseconds = "script_microseconds"

    /// Whether only `delivery: at-least-once` routes have it.
    public var atLeastOnceOnly: Bool {
        switch self {
        case .received, .filtered, .sent, .delivered, .failed, .droppedFull, .droppedLoop, .refused, .sinkFull, .queued: false
        case .scriptCalls, .scriptErrors, .scriptBudgetStops, .scriptMicroseconds: false
        default: true
        }
    }

    /// Whether only routes with a `script:` have it.
    public var scriptOnly: Bool {
        switch self {
        case .scriptCalls, .scriptErrors, .scriptBudgetStops, .scriptMicroseconds: true
        default: false
        }
    }

    /// Whether a route of this kind has it.
    public func applies(atLeastOnce: Bool, scripted: Bool) -> Bool {
        (atLeastOnce || !atLeastOnceOnly) && (scripted || !scriptOnly)
    }

    /// Whether the value goes up and down (exported as a gauge, not a counter).
    public var isGauge: Bool { self == .queued || self == .inFlight || self == .spoolBytes }

    /// What it counts (the Prometheus help text).
    public var help: String {
        switch self {
        case .received: "Envelopes handed to the route"
        case .filtered: "Envelopes the route's when: rejected"
        case .sent: "Deliveries a sink took, acknowledged or not yet"
        case .delivered: "Deliveries a sink acknowledged as done"
        case .failed: "Deliveries a sink acknowledged as failed (each attempt)"
        case .droppedFull, .droppedLoop: "Envelopes or deliveries dropped, by reason (full, loop)"
        case .refused: "Deliveries a sink refused"
        case .sinkFull: "Times a sink answered full and the delivery waited for room"
        case .queued: "Envelopes waiting in the route queue"
        case .spooled: "Envelopes written to the spool"
        case .deduplicated: "Envelopes dropped as already seen within the dedupe window"
        case .retried: "Failed deliveries scheduled for another attempt"
        case .deadLettered: "Deliveries given up on and moved to the dead letters"
        case .loadedFromSpool: "Envelopes read back from the spool"
        case .spoolFailures: "Spool writes that failed"
        case .inFlight: "At-least-once deliveries waiting for their acknowledgement"
        case .spoolBytes: "Bytes the route holds in the spool"
        case .scriptCalls: "Envelopes the route's script ran on"
        case .scriptErrors: "Script calls that failed: a Lua error, a malformed or refused envelope"
        case .scriptBudgetStops: "Script calls stopped by the instruction or memory budget"
        case .scriptMicroseconds: "Time spent in the route's script, in microseconds"
        }
    }

    /// The Prometheus series: its name and the labels besides `route`.
    public var series: (name: String, labels: [(String, String)]) {
        switch self {
        case .droppedFull: ("switchyard_route_dropped_total", [("reason", "full")])
        case .droppedLoop: ("switchyard_route_dropped_total", [("reason", "loop")])
        case .queued: ("switchyard_route_queue_depth", [])
        case .inFlight, .spoolBytes: ("switchyard_route_" + rawValue, [])
        default: ("switchyard_route_" + rawValue + "_total", [])
        }
    }
}

/// A counter or gauge of every plugin instance, declared once (see ``RouteMetric``).
public enum InstanceMetric: String, CaseIterable, Sendable {
    case emitted
    case refusedFull = "refused_full"
    case unrouted
    case invalid
    case acknowledged
    case failed
    case inFlight = "in_flight"

    /// Whether the value goes up and down (exported as a gauge, not a counter).
    public var isGauge: Bool { self == .inFlight }

    /// What it counts (the Prometheus help text).
    public var help: String {
        switch self {
        case .emitted: "Envelopes the instance emitted that routes took"
        case .refusedFull: "Emits refused because a blocking queue was full"
        case .unrouted: "Emits on ports no route reads"
        case .invalid: "Malformed emits refused"
        case .acknowledged: "Deliveries the instance acknowledged as done"
        case .failed: "Deliveries the instance acknowledged as failed"
        case .inFlight: "Deliveries to the instance not yet acknowledged"
        }
    }

    /// The Prometheus series name (the only label is `instance`).
    public var seriesName: String { "switchyard_instance_" + rawValue + (isGauge ? "" : "_total") }
}

/// Names and help texts of every series the router exports.
public enum RouterMetricNames {
    /// Per port: envelopes emitted (source) or deliveries taken (sink); labels `instance`,
    /// `port`, `direction`.
    public static let portEnvelopes = "switchyard_port_envelopes_total"
    /// 1 when the instance is started and reports itself ready; label `instance`.
    public static let instanceReady = "switchyard_instance_ready"
    /// Always 1, one per loaded plugin; labels `plugin`, `version`, `abi`, `path`.
    public static let pluginInfo = "switchyard_plugin_info"
    /// What the plugins report through the host's `metric` call; labels `instance`, `name`.
    public static let pluginMetric = "switchyard_plugin_metric"
    /// Time from delivery to acknowledgement on at-least-once routes; label `route`.
    public static let ackLatency = "switchyard_ack_latency_seconds"
    /// Time from a source's emit to the first sink's `ok`, one envelope of the route at a
    /// time; label `route`.
    public static let routeLatency = "switchyard_route_latency_seconds"
    /// The histogram buckets of ``routeLatency``: in-process routing takes microseconds, a
    /// remote sink's confirmation up to seconds.
    public static let routeLatencyBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30),
    ]
    /// With tracing on: `traceparent`/`tracestate` headers ignored as malformed.
    public static let traceContextsMalformed = "switchyard_trace_contexts_malformed_total"
    /// With tracing on: delivery spans waiting for the sink's acknowledgement.
    public static let traceDeliveriesOpen = "switchyard_trace_deliveries_open"

    /// The help text of series `name` (empty for names the router does not export).
    public static func help(for name: String) -> String {
        switch name {
        case portEnvelopes: "Per port: envelopes emitted (source) or deliveries taken (sink)"
        case instanceReady: "1 when the instance is started and reports itself ready"
        case pluginInfo: "Loaded plugins (always 1)"
        case pluginMetric: "Metrics the plugins reported, by instance and name"
        case ackLatency: "Time from delivery to acknowledgement on at-least-once routes"
        case routeLatency: "Time from a source's emit to the first sink's ok, sampled one envelope in flight per route at a time"
        case traceContextsMalformed: "Malformed traceparent or tracestate headers ignored (tracing on)"
        case traceDeliveriesOpen: "Delivery spans waiting for the sink's acknowledgement (tracing on)"
        default:
            RouteMetric.allCases.first { $0.series.name == name }?.help
                ?? InstanceMetric.allCases.first { $0.seriesName == name }?.help ?? ""
        }
    }
}
