import Foundation
import Testing

@testable import IntegrationSupport

/// Session takeover (issue 36): two routers share an MQTT subscription (`share: true`) and one
/// PostgreSQL store, and bridge broker A → at-least-once → broker B with nothing else set. One
/// is killed mid-stream and never comes back; the other takes its session over and every
/// message broker A acknowledged reaches broker B.
@Suite(.timeLimit(.minutes(3)))
struct MQTTTakeoverTests {
    /// One router of the pair: its own sandbox and spool, the shared store.
    static func router(_ brokerA: Mosquitto, _ brokerB: Mosquitto, store: PostgresServer, route: String = "") throws -> (
        RouterProcess, Sandbox
    ) {
        let sandbox = try MQTTSessionTests.bridge(from: brokerA, to: brokerB, topic: "jobs/#", route: route, share: true, store: true)
        return (try MQTTRouter.run(sandbox, environment: ["STORE_URL": store.url]), sandbox)
    }

    /// Two routers of one store, both subscribed; `victim` is the first one's client id.
    struct Pair {
        let first: RouterProcess
        let second: RouterProcess
        let sandboxes: [Sandbox]
        let victim: String
    }

    static func startPair(_ brokerA: Mosquitto, _ brokerB: Mosquitto, store: PostgresServer, route: String = "") async throws -> Pair {
        let (first, firstSandbox) = try router(brokerA, brokerB, store: store, route: route)
        await first.waitUntil("the first router subscribed") { brokerA.occurrences(of: "Sending SUBACK to switchyard-a-") >= 1 }
        let (second, secondSandbox) = try router(brokerA, brokerB, store: store, route: route)
        await second.waitUntil("the second router subscribed") { brokerA.occurrences(of: "Sending SUBACK to switchyard-a-") >= 2 }
        let ids = MQTTRouter.clientIDs(at: brokerA)
        #expect(ids.count == 2 && ids[0] != ids[1], "\(brokerA.logText)")
        return Pair(first: first, second: second, sandboxes: [firstSandbox, secondSandbox], victim: ids.first ?? "?")
    }

    /// The distinct numbers a subscriber has seen, and how many arrived more than once.
    static func received(_ watch: MosquittoSubscriber) -> (distinct: Set<Int>, duplicates: Int) {
        let numbers = watch.lines.compactMap { Int($0) }
        return (Set(numbers), numbers.count - Set(numbers).count)
    }

    /// Waits for every number up to `total` at broker B, checks none is missing and that the
    /// second router took the first one's session over; returns the duplicates.
    static func expectEverythingDelivered(_ total: Int, _ watchB: MosquittoSubscriber, _ pair: Pair, _ brokerA: Mosquitto) async -> Int {
        await pair.second.waitUntil("every message at broker B", timeout: .seconds(90)) { received(watchB).distinct.count >= total }
        let (distinct, duplicates) = received(watchB)
        let missing = Set(1...total).subtracting(distinct).sorted()
        #expect(missing.isEmpty, "lost \(missing.count) of \(total), from \(missing.prefix(20))\n\(pair.second.standardError)")
        await pair.second.waitUntil("the takeover to be logged") {
            pair.second.standardError.contains("took over MQTT session \(pair.victim)")
        }
        #expect(pair.second.logged("MQTT session \(pair.victim) lapsed"), "\(pair.second.standardError)")
        // The drained session was ended: a clean start under the victim's id.
        #expect(brokerA.occurrences(of: "as \(pair.victim) (p5, c1") == 1, "\(brokerA.logText)")
        return duplicates
    }

    @Test func aRouterKilledForGoodLosesNothingItsPartnerTakesItsSessionOver() async throws {
        let store = try PostgresServer()
        defer { store.stop() }
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let watchB = try MosquittoSubscriber(brokerB, topic: "jobs/#", qos: 1, format: "%p")
        let pair = try await Self.startPair(brokerA, brokerB, store: store)
        defer { for router in [pair.first, pair.second] { _ = router.stop(signal: SIGKILL) } }
        // Sessions the broker keeps: no clean start, an hour's expiry.
        #expect(brokerA.occurrences(of: "as \(pair.victim) (p5, c0, k30)") == 1, "\(brokerA.logText)")

        // Broker B frozen: neither router can finish, so each holds its share unsettled (sent
        // by A and not confirmed, or queued for it) when the first is killed.
        brokerB.pause()
        let total = 4_000
        let publisher = try brokerA.startPublishing(1...total, topic: "jobs/new", in: pair.sandboxes[0])
        defer { if publisher.isRunning { publisher.terminate() } }
        await pair.first.waitUntil("broker A to have acknowledged every message", timeout: .seconds(60)) { !publisher.isRunning }
        #expect(publisher.terminationStatus == 0, "broker A did not acknowledge every message")
        #expect(brokerA.occurrences(of: "Sending PUBLISH to \(pair.victim)") > 0, "the first router was taking its share")
        _ = pair.first.stop(signal: SIGKILL)
        brokerB.resume()

        let duplicates = await Self.expectEverythingDelivered(total, watchB, pair, brokerA)
        #expect(pair.second.stop() == 0, "\(pair.second.standardError)")
        print("MQTTTakeoverTests: \(total) messages, the first router killed for good, \(duplicates) duplicates at broker B, 0 lost")
    }

    /// The same while broker B takes everything, so the kill falls among deliveries in flight,
    /// with a shared dedupe key: the dead router's keys make the survivor drop nothing it has
    /// not delivered (a key is shared once delivered), so still nothing is lost. What comes back
    /// is what the dead router had not finished: never delivered, or confirmed by broker B in
    /// its last moment, before it could record the key — a duplicate only the sink can catch.
    @Test func aKillAmongDeliveriesInFlightLosesNothingWithASharedDedupeKey() async throws {
        let store = try PostgresServer()
        defer { store.stop() }
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let watchB = try MosquittoSubscriber(brokerB, topic: "jobs/#", qos: 1, format: "%p")
        let pair = try await Self.startPair(brokerA, brokerB, store: store, route: "dedupe: { key: \"{{body}}\", window: 1h }")
        defer { for router in [pair.first, pair.second] { _ = router.stop(signal: SIGKILL) } }
        let total = 4_000
        let third = total / 3
        let opening = try brokerA.startPublishing(1...third, topic: "jobs/new", in: pair.sandboxes[0])
        await pair.first.waitUntil("the first third at broker B", timeout: .seconds(60)) { Self.received(watchB).distinct.count >= third }
        #expect(opening.terminationStatus == 0)
        // The rest is under way when the first router dies.
        let rest = try brokerA.startPublishing((third + 1)...total, topic: "jobs/new", in: pair.sandboxes[0])
        defer { if rest.isRunning { rest.terminate() } }
        await pair.first.waitUntil("the first router taking the rest") {
            brokerA.occurrences(of: "Sending PUBLISH to \(pair.victim)") > third / 2 + 20
        }
        _ = pair.first.stop(signal: SIGKILL)
        await pair.second.waitUntil("broker A to have acknowledged every message", timeout: .seconds(60)) { !rest.isRunning }
        #expect(rest.terminationStatus == 0, "broker A did not acknowledge every message")

        let duplicates = await Self.expectEverythingDelivered(total, watchB, pair, brokerA)
        #expect(pair.second.stop() == 0, "\(pair.second.standardError)")
        let dropped = RouteTotals.counter("deduplicated", route: "a-to-b", in: pair.second.standardError) ?? 0
        print(
            "MQTTTakeoverTests: \(total) messages, killed among deliveries, \(duplicates) duplicates at broker B, \(dropped) dropped by key, 0 lost"
        )
    }
}

extension MQTTTakeoverTests {
    /// Without a shared store the router's own spool keeps the members: a router with
    /// `share: true` that is killed and restarted connects under a fresh id and takes over
    /// the session its last start left, so nothing is lost on one router either.
    @Test func aSharedInstanceRestartedAloneTakesOverTheSessionItLeft() async throws {
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let watchB = try MosquittoSubscriber(brokerB, topic: "jobs/#", qos: 1, format: "%p")
        // Shared, without a store: the spool keeps the members.
        let sandbox = try MQTTSessionTests.bridge(from: brokerA, to: brokerB, topic: "jobs/#", share: true)
        var router = try MQTTRouter.run(sandbox)
        defer { _ = router.stop(signal: SIGKILL) }
        await router.waitUntil("subscribed") { brokerA.occurrences(of: "Sending SUBACK to switchyard-a-") >= 1 }
        let left = MQTTRouter.clientIDs(at: brokerA).first ?? "?"
        brokerB.pause()
        let total = 2_000
        let publisher = try brokerA.startPublishing(1...total, topic: "jobs/new", in: sandbox)
        defer { if publisher.isRunning { publisher.terminate() } }
        await router.waitUntil("broker A to have acknowledged every message", timeout: .seconds(60)) { !publisher.isRunning }
        _ = router.stop(signal: SIGKILL)
        brokerB.resume()
        router = try MQTTRouter.run(sandbox)
        await router.waitUntil("every message at broker B", timeout: .seconds(60)) { Self.received(watchB).distinct.count >= total }
        let missing = Set(1...total).subtracting(Self.received(watchB).distinct)
        #expect(missing.isEmpty, "lost \(missing.count) of \(total)\n\(router.standardError)")
        await router.waitUntil("the takeover to be logged") { router.standardError.contains("took over MQTT session \(left)") }
        let ids = MQTTRouter.clientIDs(at: brokerA)
        #expect(ids.count >= 2 && ids[1] != left, "the restart connects under a fresh id: \(ids)")
        #expect(router.stop() == 0, "\(router.standardError)")
    }
}
