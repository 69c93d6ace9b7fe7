import Metrics
import Prometheus
import SwitchyardRuntime
import Synchronization

/// The router's counters in Prometheus form, read from ``RouterStatistics`` at each scrape so
/// the hot path only ever touches its own atomics; ack latency histograms come from the
/// runtime's swift-metrics timers through the same registry.
final class RouterMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    /// Counter values at the previous scrape, so each scrape adds only the difference.
    private let previous = Mutex<[String: Int]>([:])

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    private static let help: [String: String] = [
        "switchyard_route_received_total": "Envelopes handed to the route",
        "switchyard_route_filtered_total": "Envelopes the route's when: rejected",
        "switchyard_route_delivered_total": "Deliveries a sink took",
        "switchyard_route_dropped_total": "Envelopes or deliveries dropped, by reason (full, loop)",
        "switchyard_route_refused_total": "Deliveries a sink refused",
        "switchyard_route_sink_full_total": "Times a sink answered full and the delivery waited for room",
        "switchyard_route_acknowledged_total": "Deliveries the sinks acknowledged as done (at-least-once routes)",
        "switchyard_route_spooled_total": "Envelopes written to the spool",
        "switchyard_route_deduplicated_total": "Envelopes dropped as already seen within the dedupe window",
        "switchyard_route_retried_total": "Failed deliveries scheduled for another attempt",
        "switchyard_route_dead_lettered_total": "Deliveries given up on and moved to the dead letters",
        "switchyard_route_loaded_from_spool_total": "Envelopes read back from the spool",
        "switchyard_route_spool_failures_total": "Spool writes that failed",
        "switchyard_route_queue_depth": "Envelopes waiting in the route queue",
        "switchyard_route_in_flight": "At-least-once deliveries waiting for their acknowledgement",
        "switchyard_route_spool_bytes": "Bytes the route holds in the spool",
        "switchyard_instance_emitted_total": "Envelopes the instance emitted that routes took",
        "switchyard_instance_refused_full_total": "Emits refused because a blocking queue was full",
        "switchyard_instance_unrouted_total": "Emits on ports no route reads",
        "switchyard_instance_invalid_total": "Malformed emits refused",
        "switchyard_instance_acknowledged_total": "Deliveries the instance acknowledged as done",
        "switchyard_instance_failed_total": "Deliveries the instance acknowledged as failed",
        "switchyard_instance_in_flight": "Deliveries to the instance not yet acknowledged",
        "switchyard_port_envelopes_total": "Per port: envelopes emitted (source) or deliveries taken (sink)",
        "switchyard_instance_ready": "1 when the instance is started and reports itself ready",
        "switchyard_plugin_info": "Loaded plugins (always 1)",
        "switchyard_plugin_metric": "Metrics the plugins reported, by instance and name",
    ]

    /// The exposition text for `router`.
    func render(_ router: SwitchyardRuntime.Router) -> [UInt8] {
        let statistics = router.statistics
        for route in statistics.routes {
            let labels = [("route", route.name)]
            count("switchyard_route_received_total", labels, route.received)
            count("switchyard_route_filtered_total", labels, route.filtered)
            count("switchyard_route_delivered_total", labels, route.dispatched)
            count("switchyard_route_dropped_total", labels + [("reason", "full")], route.droppedFull)
            count("switchyard_route_dropped_total", labels + [("reason", "loop")], route.droppedLoop)
            count("switchyard_route_refused_total", labels, route.refused)
            count("switchyard_route_sink_full_total", labels, route.sinkFull)
            gauge("switchyard_route_queue_depth", labels, Double(route.queued))
            guard route.atLeastOnce else { continue }
            count("switchyard_route_acknowledged_total", labels, route.acknowledged)
            count("switchyard_route_spooled_total", labels, route.spooled)
            count("switchyard_route_deduplicated_total", labels, route.deduplicated)
            count("switchyard_route_retried_total", labels, route.retried)
            count("switchyard_route_dead_lettered_total", labels, route.deadLettered)
            count("switchyard_route_loaded_from_spool_total", labels, route.loadedFromSpool)
            count("switchyard_route_spool_failures_total", labels, route.spoolFailures)
            gauge("switchyard_route_in_flight", labels, Double(route.inFlight))
            gauge("switchyard_route_spool_bytes", labels, Double(route.spoolBytes))
        }
        for instance in statistics.instances {
            let labels = [("instance", instance.name)]
            count("switchyard_instance_emitted_total", labels, instance.emitted)
            count("switchyard_instance_refused_full_total", labels, instance.refusedFull)
            count("switchyard_instance_unrouted_total", labels, instance.unrouted)
            count("switchyard_instance_invalid_total", labels, instance.invalid)
            count("switchyard_instance_acknowledged_total", labels, instance.acknowledged)
            count("switchyard_instance_failed_total", labels, instance.failed)
            gauge("switchyard_instance_in_flight", labels, Double(instance.inFlight))
            for port in instance.ports {
                count(
                    "switchyard_port_envelopes_total", labels + [("port", port.name), ("direction", port.direction)], port.envelopes)
            }
        }
        for (instance, ready) in router.readiness {
            gauge("switchyard_instance_ready", [("instance", instance)], ready ? 1 : 0)
        }
        for plugin in router.plugins {
            gauge(
                "switchyard_plugin_info",
                [("plugin", plugin.name), ("version", plugin.version), ("abi", String(plugin.abi)), ("path", plugin.path)], 1)
        }
        for (key, value) in statistics.pluginMetrics {
            let parts = key.split(separator: ".", maxSplits: 1)
            guard parts.count == 2 else { continue }
            gauge("switchyard_plugin_metric", [("instance", String(parts[0])), ("name", String(parts[1]))], value)
        }
        return registry.emitToBuffer()
    }

    private func count(_ name: String, _ labels: [(String, String)], _ value: Int) {
        let key = name + labels.map { "|\($0.0)=\($0.1)" }.joined()
        let delta = previous.withLock { previous in
            defer { previous[key] = value }
            return value - (previous[key] ?? 0)
        }
        let counter = registry.makeCounter(descriptor: Self.descriptor(name), labels: labels)
        if delta > 0 { counter.increment(by: Int64(delta)) }
    }

    private func gauge(_ name: String, _ labels: [(String, String)], _ value: Double) {
        registry.makeGauge(descriptor: Self.descriptor(name), labels: labels).set(to: value)
    }

    private static func descriptor(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help[name] ?? "")
    }
}
