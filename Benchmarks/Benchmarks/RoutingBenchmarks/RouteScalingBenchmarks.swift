import Benchmark

/// N routes from one source, each waiting for one sensor (`when: body.sensor == "…"`), of which
/// exactly one takes every envelope (the source's sensor is `s1`): the router looks them up in
/// its condition index (issue 37: an envelope costs O(matching routes)). The same routes with
/// `or false` appended are not indexable: each evaluates its condition, the cost before the
/// index, measured in the same run (with smaller batches: it grows with N).
func routeScalingBenchmarks() {
    for count in [1, 10, 100, 1000, 10_000] {
        scalingBenchmark("Router: \(count) routes, one matches (indexed)", routes: count, indexed: true, batchSize: batch)
    }
    for count in [10, 100, 1000] {
        scalingBenchmark(
            "Router: \(count) routes, one matches (evaluated)", routes: count, indexed: false, batchSize: min(batch, 2_000_000 / count))
    }
}

/// The route entries: the first waits for `s1` (every envelope), the others for sensors that
/// never come.
func scalingRoutes(_ count: Int, indexed: Bool) -> [String] {
    (0..<count).map { index in
        let sensor = index == 0 ? "s1" : "x\(index)"
        let condition = indexed ? "body.sensor == \\\"\(sensor)\\\"" : "body.sensor == \\\"\(sensor)\\\" or false"
        return "{ name: r\(index), from: src.out, to: sink.in, when: \"\(condition)\" }"
    }
}

private func scalingBenchmark(_ name: String, routes count: Int, indexed: Bool, batchSize: Int) {
    routerBenchmark(name, batchSize: batchSize) { try RouterFixture(routes: scalingRoutes(count, indexed: indexed)) }
}

/// A benchmark of a router fixture: each iteration pumps `batchSize` envelopes through it; the
/// teardown checks the first route's counters against what was emitted.
func routerBenchmark(_ name: String, batchSize: Int = batch, fixture: @escaping @Sendable () throws -> RouterFixture) {
    let slot = Slot<RouterFixture>()
    let emitted = Slot<Int>()
    Benchmark(name) { benchmark in
        guard slot.value != nil else { return benchmark.error("no fixture") }
        measureBatch(benchmark, count: batchSize) { pumpThroughSink(batchSize) }
        emitted.value = (emitted.value ?? 0) + batchSize
    } setup: {
        emitted.value = 0
        slot.value = try fixture()
    } teardown: {
        guard let fixture = slot.value else { return }
        slot.value = nil
        let problem = fixture.check(expected: emitted.value ?? 0)
        fixture.shutdown()
        if let problem { throw FixtureError(description: problem) }
    }
}
