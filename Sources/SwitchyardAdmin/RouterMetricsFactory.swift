import CoreMetrics
import Prometheus
import SwitchyardRuntime

/// The swift-metrics backend of the admin port: Prometheus's, with the help text of every
/// series the router declares (``RouterMetricNames/help(for:)``), so `/metrics` explains
/// them. Every handle of one name gets the same help text, as the registry requires.
struct RouterMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    /// Buckets and destruction come from Prometheus's own factory.
    private let prometheus: PrometheusMetricsFactory

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        var prometheus = PrometheusMetricsFactory(registry: registry)
        prometheus.durationHistogramBuckets[RouterMetricNames.routeLatency] = RouterMetricNames.routeLatencyBuckets
        self.prometheus = prometheus
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: Self.descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: Self.descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return makeGauge(label: label, dimensions: dimensions) }
        let buckets = prometheus.valueHistogramBuckets[label] ?? prometheus.defaultValueHistogramBuckets
        return registry.makeValueHistogram(descriptor: Self.descriptor(label), labels: dimensions, buckets: buckets)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        makeGauge(label: label, dimensions: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        let buckets = prometheus.durationHistogramBuckets[label] ?? prometheus.defaultDurationHistogramBuckets
        return registry.makeDurationHistogram(descriptor: Self.descriptor(label), labels: dimensions, buckets: buckets)
    }

    private func makeGauge(label: String, dimensions: [(String, String)]) -> Prometheus.Gauge {
        registry.makeGauge(descriptor: Self.descriptor(label), labels: dimensions)
    }

    /// The series' name and help text. The router's names are whole (`…_total`, `…_seconds`),
    /// so there is no namespace or unit for Prometheus to join on.
    private static func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: RouterMetricNames.help(for: label))
    }

    func destroyCounter(_ handler: any CounterHandler) { prometheus.destroyCounter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        prometheus.destroyFloatingPointCounter(handler)
    }
    func destroyRecorder(_ handler: any RecorderHandler) { prometheus.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { prometheus.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) { prometheus.destroyTimer(handler) }
}
