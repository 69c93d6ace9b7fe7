import Benchmark
import CBenchSource
import MallocInterposerSwift
import SwitchyardRuntime

/// Envelopes per measured iteration. One iteration = one batch: the source emits this many
/// envelopes on the benchmark thread and the iteration ends once the sink acknowledged all.
let batch = 100_000

enum RoutingMetric {
    /// `batch` / wall-clock time of the iteration.
    static let envelopesPerSecond = BenchmarkMetric.custom("Envelopes/s", polarity: .prefersLarger, useScalingFactor: false)
    /// Allocations (every thread: emitter, route worker, sink) per 1000 envelopes.
    static let mallocsPerThousand = BenchmarkMetric.custom("Mallocs per 1000 envelopes", polarity: .prefersSmaller, useScalingFactor: false)
    /// Emits the route queue answered "full" per 1000 envelopes: each is a wait of the source
    /// for `resume`, a hand-off between the two threads (the bimodal plain route's suspect).
    static let fullWaitsPerThousand = BenchmarkMetric.custom("Full waits per 1000 envelopes", polarity: .prefersSmaller, useScalingFactor: false)
}

/// Runs one batch (`count` envelopes) and records the custom metrics for it.
func measureBatch(_ benchmark: Benchmark, count: Int = batch, _ work: () -> String?) {
    let mallocsBefore = MallocInterposerSwift.getStatistics().mallocCount
    let fullBefore = bench_source_full_count()
    let start = ContinuousClock.now
    if let failure = work() {
        benchmark.error(failure)
        return
    }
    let elapsed = start.duration(to: ContinuousClock.now)
    let mallocs = MallocInterposerSwift.getStatistics().mallocCount - mallocsBefore
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    benchmark.measurement(RoutingMetric.envelopesPerSecond, Int((Double(count) * 1e9 / nanoseconds).rounded()))
    benchmark.measurement(RoutingMetric.mallocsPerThousand, Int((Double(mallocs) * 1000 / Double(count)).rounded()))
    let fullWaits = bench_source_full_count() - fullBefore
    benchmark.measurement(RoutingMetric.fullWaitsPerThousand, Int((Double(fullWaits) * 1000 / Double(count)).rounded()))
}

/// Holds what a benchmark's setup built until its teardown.
final class Slot<Value>: @unchecked Sendable {
    // Written in setup and teardown, read in the closure; the harness runs them one after another.
    var value: Value?
}

/// The routes measured, as YAML entries under `routes:` (instances `src` and `sink`).
let measuredRoutes: [(name: String, yaml: String)] = [
    (
        "Router: plain route",
        """
        name: plain
        from: src.out
        to: sink.in
        """
    ),
    (
        "Router: route with when",
        """
        name: filtered
        from: src.out
        when: body.value > 20
        to: sink.in
        """
    ),
    (
        "Router: route with when + map",
        """
        name: reshaped
        from: src.out
        when: body.value > 20
        map: { sensor: "{{body.sensor}}", v: "{{body.value}}" }
        to: sink.in
        """
    ),
    // The Mustache map: the baseline of the script routes below (issue 35: a script that
    // reshapes with arithmetic ≥ 0.5× this, measured in the same run).
    (
        "Router: route with map",
        """
        name: mapped
        from: src.out
        map: { sensor: "{{body.sensor}}", value: "{{body.value}}" }
        to: sink.in
        """
    ),
    (
        "Router: route with script (arithmetic reshape)",
        """
        name: scripted
        from: src.out
        script: |
          local body = envelope.body
          return { body = { sensor = body.sensor, fahrenheit = body.value * 9 / 5 + 32 } }
        to: sink.in
        """
    ),
    (
        "Router: route with script (filter only)",
        """
        name: scriptfilter
        from: src.out
        script: "return envelope.body.value > 20"
        to: sink.in
        """
    ),
    // Every envelope written to the SQLite spool (WAL, one transaction per worker batch:
    // a group commit) before the source is settled, and deleted once the sink acked. With the
    // default `spool.sync: full` each commit is fsynced; `normal` leaves it to checkpoints.
    (
        "Router: at-least-once route (sync: full)",
        """
        name: durable
        from: src.out
        to: sink.in
        delivery: at-least-once
        """
    ),
    (
        "Router: at-least-once route (sync: normal)",
        """
        name: durable
        from: src.out
        to: sink.in
        delivery: at-least-once
        """
    ),
]

/// Top-level YAML a measured route needs besides its entry.
func settings(forRoute name: String) -> String {
    name.hasSuffix("(sync: normal)") ? "spool: { sync: normal }" : ""
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [
            .wallClock, .cpuTotal, .mallocCountTotal, RoutingMetric.envelopesPerSecond, RoutingMetric.mallocsPerThousand,
            RoutingMetric.fullWaitsPerThousand,
        ],
        timeUnits: .milliseconds,
        units: [
            RoutingMetric.envelopesPerSecond: .count, RoutingMetric.mallocsPerThousand: .count, RoutingMetric.fullWaitsPerThousand: .count,
            .mallocCountTotal: .count,
        ],
        warmupIterations: 2,
        scalingFactor: .one,
        maxDuration: .seconds(6),
        maxIterations: 30
    )

    // Baselines: the same plugins and ABI calls, no router in between.
    let direct = Slot<DirectFixture>()
    Benchmark("Baseline: sink deliver() in a loop") { benchmark in
        guard let fixture = direct.value else { return benchmark.error("no fixture") }
        measureBatch(benchmark) { fixture.deliverDirectly(batch) }
    } setup: {
        direct.value = try DirectFixture()
    } teardown: {
        direct.value?.shutdown()
        direct.value = nil
    }

    let wired = Slot<DirectFixture>()
    Benchmark("Baseline: source emit() -> sink deliver()") { benchmark in
        guard wired.value != nil else { return benchmark.error("no fixture") }
        measureBatch(benchmark) { pumpThroughSink(batch) }
    } setup: {
        wired.value = try DirectFixture()
    } teardown: {
        wired.value?.shutdown()
        wired.value = nil
    }

    // The plain route with a tap open (`switchyard tap plain`): the route's thread evaluates
    // the tap and hands over a copy; a reader that falls behind loses the oldest.
    let tapped = Slot<RouterFixture>()
    let drain = Slot<Task<Int, Never>>()
    let tappedEmitted = Slot<Int>()
    Benchmark("Router: plain route, tapped") { benchmark in
        guard tapped.value != nil else { return benchmark.error("no fixture") }
        measureBatch(benchmark) { pumpThroughSink(batch) }
        tappedEmitted.value = (tappedEmitted.value ?? 0) + batch
    } setup: {
        tappedEmitted.value = 0
        let fixture = try RouterFixture(route: measuredRoutes[0].yaml)
        let envelopes = try fixture.router.tap(.route("plain"), when: nil)
        drain.value = Task.detached {
            var seen = 0
            for await _ in envelopes { seen += 1 }
            return seen
        }
        tapped.value = fixture
    } teardown: {
        drain.value?.cancel()
        drain.value = nil
        guard let fixture = tapped.value else { return }
        tapped.value = nil
        let problem = fixture.check(expected: tappedEmitted.value ?? 0)
        fixture.shutdown()
        if let problem { throw FixtureError(description: problem) }
    }

    routeScalingBenchmarks()

    for (name, yaml) in measuredRoutes {
        routerBenchmark(name) { try RouterFixture(route: yaml, settings: settings(forRoute: name)) }
    }
}
