import CoreMetrics
import SwitchyardABI
import SwitchyardBridge
import SwitchyardCore
import Synchronization
import Testing

@testable import SwitchyardRuntime

/// The router's metrics registry, seen through a swift-metrics backend that records what the
/// handles were given (the admin port's Prometheus registry is one such backend).
@Suite struct MetricsRegistryTests {
    @Test func countersReachTheirHandlesOnceEachAndOnlyTheDifference() async throws {
        let source = FakeInstance.register("regSrc")
        let sink = FakeInstance.register("regSnk")
        let backend = RecordingMetrics()
        let yaml = """
            instances:
              regSrc: { plugin: fake }
              regSnk: { plugin: fake }
            routes:
              - { name: counted, from: regSrc.out, to: regSnk.any }
            """
        try await withRouter(yaml, metricsFactory: backend) { router in
            for x in 1...3 { #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK) }
            #expect(await waitUntil { sink.deliveries.count == 3 })
            router.publishMetrics()
            let received = "switchyard_route_received_total{route=counted}"
            #expect(backend.value(received) == 3)
            #expect(backend.value("switchyard_route_delivered_total{route=counted}") == 3)
            #expect(backend.value("switchyard_route_dropped_total{route=counted,reason=full}") == 0)
            #expect(backend.value("switchyard_route_queue_depth{route=counted}") == 0)
            #expect(backend.value("switchyard_instance_emitted_total{instance=regSrc}") == 3)
            #expect(backend.value("switchyard_port_envelopes_total{instance=regSrc,port=out,direction=source}") == 3)
            #expect(backend.value("switchyard_instance_ready{instance=regSnk}") == 1)
            // At-most-once routes have no at-least-once series.
            #expect(backend.value("switchyard_route_spooled_total{route=counted}") == nil)
            let made = backend.handlesMade

            for x in 4...5 { #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK) }
            #expect(await waitUntil { sink.deliveries.count == 5 })
            router.publishMetrics()
            router.publishMetrics()
            #expect(backend.value(received) == 5)
            #expect(backend.value("switchyard_instance_emitted_total{instance=regSrc}") == 5)
            // A scrape makes no handles: each series has one, made the first time.
            #expect(backend.handlesMade == made)
        }
    }

    /// `switchyard_route_latency_seconds`: emit → the first sink's ok, one envelope of the
    /// route in flight at a time (``LatencyProbe``).
    @Test func routeLatencySamplesOneEnvelopeInFlightAtATime() async throws {
        let source = FakeInstance.register("latSrc")
        let sink = FakeInstance.register("latSnk", autoAck: false)
        let backend = RecordingMetrics()
        let yaml = """
            instances:
              latSrc: { plugin: fake }
              latSnk: { plugin: fake }
            routes:
              - { name: timed, from: latSrc.out, when: "body.x > 0", to: latSnk.any }
            """
        let samples = "switchyard_route_latency_seconds{route=timed}"
        try await withRouter(yaml, metricsFactory: backend) { router in
            // Three while the first is unacknowledged: only the first is the sample.
            for x in 1...3 { #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK) }
            #expect(await waitUntil { sink.deliveries.count == 3 })
            for delivery in sink.deliveries.reversed() { sink.ack(delivery.id, outcome: SY_OUTCOME_OK) }
            #expect(backend.value(samples) == 1)
            // Acknowledged, the probe is free: the next envelope is timed.
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 4))) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == 4 })
            sink.ack(sink.deliveries[3].id, outcome: SY_OUTCOME_OK)
            #expect(backend.value(samples) == 2)
            // A sample the condition filters out, or the sink rejects, is given back unrecorded.
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 0))) == SY_OK)
            #expect(await waitUntil { router.routes[0].counters.processed.load(ordering: .relaxed) == 5 })
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 5))) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == 5 })
            sink.ack(sink.deliveries[4].id, outcome: SY_OUTCOME_REJECT)
            #expect(backend.value(samples) == 2)
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 6))) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == 6 })
            sink.ack(sink.deliveries[5].id, outcome: SY_OUTCOME_OK)
            #expect(backend.value(samples) == 3)
        }
    }

    /// A sample whose acknowledgement never comes is released when metrics are read, so the
    /// route is timed again.
    @Test func aLostSampleIsReleasedAtTheNextScrape() throws {
        let probe = LatencyProbe(histogram: CoreMetrics.Timer(label: "lost", dimensions: [], factory: RecordingMetrics()))
        let lost = probe.claim()
        #expect(lost != 0)
        #expect(probe.claim() == 0)
        probe.releaseIfStale(olderThan: 60_000_000_000)
        #expect(probe.claim() == 0)
        probe.releaseIfStale(olderThan: 0)
        let next = probe.claim()
        #expect(next != 0)
        // The lost sample's late acknowledgement does not end the new one.
        probe.dispatched(next, as: 7)
        probe.finish(lost, ok: true)
        #expect(probe.claim() == 0)
        probe.acknowledged(7, ok: true)
        #expect(probe.claim() != 0)
    }

    @Test func aRouteThatReplacedAnotherCountsOnInTheSameSeries() async throws {
        let backend = RecordingMetrics()
        var routes: [RouteRuntime] = []
        var routers: [Router] = []
        defer { for router in routers { router.shutdown(drainTimeout: .seconds(5)) } }
        // The same route twice, as a reload that replaces it: the second counts from zero.
        for (generation, count) in [(1, 2), (2, 3)] {
            let source = FakeInstance.register("regRe\(generation)")
            let sink = FakeInstance.register("regReSnk\(generation)")
            let yaml = """
                instances:
                  regRe\(generation): { plugin: fake }
                  regReSnk\(generation): { plugin: fake }
                routes:
                  - { name: replaced, from: regRe\(generation).out, to: regReSnk\(generation).any }
                """
            let router = Router(plan: try plan(yaml), logger: quietLogger)
            try router.start()
            routers.append(router)
            for x in 0..<count { #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK) }
            #expect(await waitUntil { sink.deliveries.count == count })
            routes += router.routes
        }
        let registry = MetricsRegistry(factory: backend)
        registry.publish(routes: [routes[0]], instances: [], ready: [], plugins: [])
        #expect(backend.value("switchyard_route_received_total{route=replaced}") == 2)
        registry.publish(routes: [routes[1]], instances: [], ready: [], plugins: [])
        #expect(backend.value("switchyard_route_received_total{route=replaced}") == 5)
    }

    @Test func pluginMetricsGoToTheirHandleAtOnce() throws {
        let source = FakeInstance.register("regMet")
        let backend = RecordingMetrics()
        let router = Router(plan: try plan("instances:\n  regMet: { plugin: fake }\n"), logger: quietLogger, metricsFactory: backend)
        try router.start()
        defer { router.shutdown(drainTimeout: .seconds(5)) }
        let host = hostAPI()
        let before = backend.handlesMade
        for (name, kind, values) in [
            ("hits", SY_METRIC_COUNTER, [2.0, 3]), ("level", SY_METRIC_GAUGE, [7, 4]), ("wait", SY_METRIC_HISTOGRAM, [1, 2]),
        ] {
            var name = name
            name.withUTF8 { bytes in
                for value in values { host.metric?(source.context, kind, sy_bytes(bytes), value) }
            }
        }
        #expect(backend.value("switchyard_plugin_metric{instance=regMet,name=hits}") == 5)
        #expect(backend.value("switchyard_plugin_metric{instance=regMet,name=level}") == 4)
        #expect(backend.value("switchyard_plugin_metric{instance=regMet,name=wait_count}") == 2)
        #expect(backend.value("switchyard_plugin_metric{instance=regMet,name=wait_sum}") == 3)
        #expect(router.statistics.pluginMetrics["regMet.hits"] == 5)
        // One handle per series, not one per report.
        #expect(backend.handlesMade == before + 4)
    }

    @Test func everyExportedSeriesHasHelpText() {
        for metric in RouteMetric.allCases { #expect(!RouterMetricNames.help(for: metric.series.name).isEmpty, "\(metric)") }
        for metric in InstanceMetric.allCases { #expect(!RouterMetricNames.help(for: metric.seriesName).isEmpty, "\(metric)") }
        for name in [RouterMetricNames.portEnvelopes, RouterMetricNames.pluginMetric, RouterMetricNames.ackLatency] {
            #expect(!RouterMetricNames.help(for: name).isEmpty, "\(name)")
        }
    }
}

/// A swift-metrics backend that keeps each series' current value (counters: their total) by
/// `name{label=value,…}`, and counts the handles made.
private final class RecordingMetrics: MetricsFactory, Sendable {
    private let values = Mutex<[String: Double]>([:])
    private let made = Atomic<Int>(0)

    var handlesMade: Int { made.load(ordering: .relaxed) }

    func value(_ series: String) -> Double? { values.withLock { $0[series] } }

    private func handler(_ label: String, _ dimensions: [(String, String)]) -> Handler {
        made.add(1, ordering: .relaxed)
        let series = label + "{" + dimensions.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
        values.withLock { $0[series] = 0 }
        return Handler(series: series, values: self)
    }

    fileprivate func update(_ series: String, _ next: (Double) -> Double) {
        values.withLock { $0[series] = next($0[series] ?? 0) }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { handler(label, dimensions) }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        handler(label, dimensions)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        handler(label, dimensions)
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { handler(label, dimensions) }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { handler(label, dimensions) }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    private final class Handler: CounterHandler, FloatingPointCounterHandler, RecorderHandler, MeterHandler, TimerHandler,
        Sendable
    {
        let series: String
        let values: RecordingMetrics

        init(series: String, values: RecordingMetrics) {
            self.series = series
            self.values = values
        }

        func increment(by amount: Int64) { values.update(series) { $0 + Double(amount) } }
        func increment(by amount: Double) { values.update(series) { $0 + amount } }
        func decrement(by amount: Double) { values.update(series) { $0 - amount } }
        func reset() { values.update(series) { _ in 0 } }
        func record(_ value: Int64) { values.update(series) { _ in Double(value) } }
        func record(_ value: Double) { values.update(series) { _ in value } }
        func set(_ value: Int64) { values.update(series) { _ in Double(value) } }
        func set(_ value: Double) { values.update(series) { _ in value } }
        func recordNanoseconds(_ duration: Int64) { values.update(series) { $0 + 1 } }
    }
}
