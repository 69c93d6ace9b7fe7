import SwitchyardABI
import SwitchyardCore
import Testing

@testable import SwitchyardRuntime

/// Taps in the running router: what a reader gets, what a slow reader loses, and that a tap
/// ends with its reader.
@Suite(.timeLimit(.minutes(1)))
struct TapRegistryTests {
    private static func graph(_ prefix: String) -> String {
        """
        instances:
          \(prefix)Src: { plugin: fake }
          \(prefix)Snk: { plugin: fake }
        routes:
          - { name: tapped, from: \(prefix)Src.out, to: \(prefix)Snk.any }
        """
    }

    /// A started router of `graph(prefix)` and its source's fake; shut down by the caller.
    private static func start(_ prefix: String) throws -> (Router, FakeInstance) {
        let source = FakeInstance.register(prefix + "Src")
        FakeInstance.register(prefix + "Snk")
        let router = Router(plan: try plan(graph(prefix)), logger: quietLogger)
        try router.start()
        return (router, source)
    }

    @Test func aRouteTapGetsWhatTheRouteDeliversAndItsConditionFilters() async throws {
        let (router, source) = try Self.start("tapA")
        defer { router.shutdown(drainTimeout: .seconds(5)) }
        let all = try router.tap(.route("tapped"), when: nil)
        let later = try router.tap(.port("tapASrc.out"), when: "body.x > 3")
        #expect(router.routes[0].tap.isActive)
        for x in 1...6 { #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK) }
        var seen: [Int] = []
        for await envelope in all {
            seen.append(try JSONValue(parsing: envelope.body)["x"]?.intValue ?? -1)
            if seen.count == 6 { break }
        }
        #expect(seen == [1, 2, 3, 4, 5, 6])
        var odds: [Int] = []
        for await envelope in later {
            odds.append(try JSONValue(parsing: envelope.body)["x"]?.intValue ?? -1)
            if odds.count == 3 { break }
        }
        #expect(odds == [4, 5, 6])
    }

    @Test func aSlowReaderLosesTheOldestAndATapEndsWithItsReader() async throws {
        let (router, source) = try Self.start("tapB")
        defer { router.shutdown(drainTimeout: .seconds(5)) }
        let route = router.routes[0]
        do {
            let stream = try router.tap(.route("tapped"), when: nil, rate: TapRegistry.maximumRate)
            let total = TapRegistry.buffer + 500
            for x in 1...total { #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK) }
            #expect(await waitUntil { route.counters.processed.load(ordering: .relaxed) == total })
            var first: Int?
            var count = 0
            for await envelope in stream {
                if first == nil { first = try JSONValue(parsing: envelope.body)["x"]?.intValue }
                count += 1
                if count == TapRegistry.buffer { break }
            }
            #expect(first == 501)
        }
        // The stream is gone: the route no longer pays for it, and every tap slot is free.
        #expect(!route.tap.isActive)
        let taps = try (0..<TapRegistry.limit).map { _ in try router.tap(.route("tapped"), when: nil) }
        #expect(throws: RouterError.self) { try router.tap(.route("tapped"), when: nil) }
        _ = taps
    }

    /// Over its rate a tap only counts: a busy route keeps its throughput.
    @Test func aTapTakesAtMostItsRateAndCountsTheRest() async throws {
        let (router, source) = try Self.start("tapC")
        defer { router.shutdown(drainTimeout: .seconds(5)) }
        // Two a second: one per half-second window.
        let stream = try router.tap(.route("tapped"), when: nil, rate: 2)
        for x in 1...10 { #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK) }
        #expect(await waitUntil { router.routes[0].counters.processed.load(ordering: .relaxed) == 10 })
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        #expect(try first.map { try JSONValue(parsing: $0.body)["x"]?.intValue } == 1)
        #expect(stream.takeSkipped() == 9)
        #expect(throws: RouterError.self) { try router.tap(.route("tapped"), when: nil, rate: 0) }
    }

    /// The budget is refilled when a window ends (a window of zero: at every take).
    @Test func theBudgetIsRefilledEachWindow() async throws {
        let reader = TapReader(condition: nil, rate: 2, window: .zero)
        for x in 1...10 { reader.offer(Envelope(type: "t.A", body: bodyA(x: x))) }
        #expect(await reader.take()?.count == 1)
        #expect(reader.takeSkipped() == 9)
        // take() began a new window: its budget (at least one) takes the next envelope.
        reader.offer(Envelope(type: "t.A", body: bodyA(x: 11)))
        let next = await reader.take()
        #expect(try next.map { try $0.map { try JSONValue(parsing: $0.body)["x"]?.intValue } } == [11])
        reader.close()
        #expect(await reader.take() == nil)
    }
}
