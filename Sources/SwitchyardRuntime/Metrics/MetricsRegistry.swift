import CoreMetrics
internal import SwitchyardABI
import Synchronization

/// The router's one metrics registry: every series it exports goes through here into
/// swift-metrics handles, each made once per label set and kept, so whichever backend the
/// process bootstrapped (the admin port's Prometheus registry) sees them.
///
/// Route and instance counters are counted in their own atomics on the hot path (a handle's
/// backend may take a lock per increment); ``publish(routes:instances:ready:plugins:tracing:)`` adds
/// what they counted since the last call to the handles. What plugins report through the
/// host's `metric` call goes to its handle at once, and its value is kept for readiness.
public final class MetricsRegistry: Sendable {
    /// Handles by series (name and labels), made on first use.
    private let handles = Mutex<[String: Series]>([:])
    /// Plugin metrics by instance and name: the value and its handle.
    private let pluginSeries = Mutex<[PluginSeriesKey: PluginSeries]>([:])

    /// A handle and, for a counter published from an atomic, what it has been given so far.
    private struct Series {
        enum Handle {
            case counter(CoreMetrics.Counter)
            case gauge(CoreMetrics.Gauge)
            case timer(CoreMetrics.Timer)
        }

        let handle: Handle
        var published = 0
        /// The object whose atomic was published last: a route or instance a reload replaced
        /// counts from zero again.
        var source: ObjectIdentifier?
    }

    private struct PluginSeries {
        var value: Double
        let meter: Meter
    }

    /// A plugin metric's instance and name, apart: a plugin may report on every message, and a
    /// key joined into one string would be built (and allocated) for each report.
    private struct PluginSeriesKey: Hashable {
        var instance: String
        var name: String
    }

    /// Where the handles are made: a test's factory, or (nil) the one the process
    /// bootstrapped, looked up when a handle is first needed.
    private let factory: (any MetricsFactory)?

    init(factory: (any MetricsFactory)? = nil) {
        self.factory = factory
    }

    private var handleFactory: any MetricsFactory { factory ?? MetricsSystem.factory }

    // MARK: Plugin metrics

    /// Records what a plugin instance reported: a counter adds, a gauge replaces, a histogram
    /// sample adds to `name_count` and `name_sum`.
    func record(metric name: String, instance: String, kind: Int32, value: Double) {
        pluginSeries.withLock { series in
            switch kind {
            case SY_METRIC_GAUGE:
                update(&series, instance: instance, name: name) { _ in value }
            case SY_METRIC_HISTOGRAM:
                update(&series, instance: instance, name: name + "_count") { $0 + 1 }
                update(&series, instance: instance, name: name + "_sum") { $0 + value }
            default:
                update(&series, instance: instance, name: name) { $0 + value }
            }
        }
    }

    private func update(
        _ series: inout [PluginSeriesKey: PluginSeries], instance: String, name: String, _ next: (Double) -> Double
    ) {
        let key = PluginSeriesKey(instance: instance, name: name)
        // One hash on the usual path: the series exists and is updated in place.
        if let index = series.index(forKey: key) {
            series.values[index].value = next(series.values[index].value)
            series.values[index].meter.set(series.values[index].value)
            return
        }
        let meter = Meter(
            label: RouterMetricNames.pluginMetric, dimensions: [("instance", instance), ("name", name)], factory: handleFactory)
        let value = next(0)
        meter.set(value)
        series[key] = PluginSeries(value: value, meter: meter)
    }

    /// The value plugin instance `instance` last reported for `name`, if any.
    func pluginValue(instance: String, name: String) -> Double? {
        pluginSeries.withLock { $0[PluginSeriesKey(instance: instance, name: name)]?.value }
    }

    /// Every plugin metric, `instance.name` → value.
    var pluginValues: [String: Double] {
        pluginSeries.withLock { series in
            // Instance names hold no '.', so no two keys join alike; a merge would not trap anyway.
            Dictionary(series.map { ($0.key.instance + "." + $0.key.name, $0.value.value) }, uniquingKeysWith: { first, _ in first })
        }
    }

    // MARK: Timers

    /// The acknowledgement latency timer of route `route`.
    func ackLatency(route: String) -> CoreMetrics.Timer { timer(RouterMetricNames.ackLatency, route: route) }

    /// The emit → acknowledgement latency timer of route `route` (``LatencyProbe``).
    func routeLatency(route: String) -> CoreMetrics.Timer { timer(RouterMetricNames.routeLatency, route: route) }

    /// The timer `name` of route `route`, one per name and route: a route a reload replaced
    /// records on in the same series.
    private func timer(_ name: String, route: String) -> CoreMetrics.Timer {
        let labels = [("route", route)]
        return handles.withLock { handles in
            let key = Self.key(name, labels)
            if let series = handles[key], case .timer(let timer) = series.handle { return timer }
            let timer = CoreMetrics.Timer(label: name, dimensions: labels, factory: handleFactory)
            handles[key] = Series(handle: .timer(timer))
            return timer
        }
    }

    // MARK: Publishing the router's counters

    /// Adds what the route and instance counters (and, with tracing on, the malformed trace
    /// contexts) counted since the last call to their handles and sets the gauges: call before
    /// exporting.
    func publish(
        routes: [RouteRuntime], instances: [InstanceRuntime], ready: [(instance: String, ready: Bool)],
        plugins: [(name: String, version: String, abi: UInt32, path: String)], tracing: RouterTracing? = nil
    ) {
        handles.withLock { handles in
            if let tracing {
                let malformed = tracing.malformedContexts.load(ordering: .relaxed)
                advance(&handles, RouterMetricNames.traceContextsMalformed, [], to: malformed, source: ObjectIdentifier(tracing))
                set(&handles, RouterMetricNames.traceDeliveriesOpen, [], Double(tracing.openDeliveryCount))
            }
            for route in routes {
                // A sample whose acknowledgement is not coming must not keep the route untimed.
                route.latency?.releaseIfStale()
                let labels = [("route", route.name)]
                for metric in RouteMetric.allCases
                where metric.applies(atLeastOnce: route.isAtLeastOnce, scripted: route.plan.script != nil) {
                    let (name, extra) = metric.series
                    let value = route.value(of: metric)
                    if metric.isGauge {
                        set(&handles, name, labels + extra, Double(value))
                    } else {
                        advance(&handles, name, labels + extra, to: value, source: ObjectIdentifier(route))
                    }
                }
            }
            for instance in instances {
                let labels = [("instance", instance.name)]
                let source = ObjectIdentifier(instance)
                for metric in InstanceMetric.allCases {
                    let value = instance.counters.value(of: metric)
                    if metric.isGauge {
                        set(&handles, metric.seriesName, labels, Double(value))
                    } else {
                        advance(&handles, metric.seriesName, labels, to: value, source: source)
                    }
                }
                for port in instance.portCounts {
                    let portLabels = labels + [("port", port.port), ("direction", port.direction)]
                    advance(&handles, RouterMetricNames.portEnvelopes, portLabels, to: port.count, source: source)
                }
            }
            for (instance, isReady) in ready {
                set(&handles, RouterMetricNames.instanceReady, [("instance", instance)], isReady ? 1 : 0)
            }
            for plugin in plugins {
                let labels = [("plugin", plugin.name), ("version", plugin.version), ("abi", String(plugin.abi)), ("path", plugin.path)]
                set(&handles, RouterMetricNames.pluginInfo, labels, 1)
            }
        }
    }

    private static func key(_ name: String, _ labels: [(String, String)]) -> String {
        labels.reduce(into: name) { key, label in key += "|" + label.0 + "=" + label.1 }
    }

    private func set(_ handles: inout [String: Series], _ name: String, _ labels: [(String, String)], _ value: Double) {
        let key = Self.key(name, labels)
        if let series = handles[key], case .gauge(let gauge) = series.handle {
            gauge.record(value)
            return
        }
        let gauge = CoreMetrics.Gauge(label: name, dimensions: labels, factory: handleFactory)
        handles[key] = Series(handle: .gauge(gauge))
        gauge.record(value)
    }

    /// Adds to a counter what `source`'s atomic counted since it was last published.
    private func advance(
        _ handles: inout [String: Series], _ name: String, _ labels: [(String, String)], to value: Int, source: ObjectIdentifier
    ) {
        let key = Self.key(name, labels)
        var series = handles[key] ?? Series(handle: .counter(CoreMetrics.Counter(label: name, dimensions: labels, factory: handleFactory)))
        guard case .counter(let counter) = series.handle else { return }
        // A new source (a route or instance a reload replaced) counts from zero; so does an
        // atomic that went down, which only a new object at a freed one's address can do.
        if series.source != source || value < series.published {
            series.source = source
            series.published = 0
        }
        if value > series.published { counter.increment(by: value - series.published) }
        series.published = value
        handles[key] = series
    }
}

extension InstanceCounters {
    /// The value of `metric`.
    func value(of metric: InstanceMetric) -> Int {
        switch metric {
        case .emitted: emitted.load(ordering: .relaxed)
        case .refusedFull: refusedFull.load(ordering: .relaxed)
        case .unrouted: unrouted.load(ordering: .relaxed)
        case .invalid: invalid.load(ordering: .relaxed)
        case .acknowledged: acknowledged.load(ordering: .relaxed)
        case .failed: failed.load(ordering: .relaxed)
        case .inFlight: inFlight.load(ordering: .relaxed)
        }
    }
}
