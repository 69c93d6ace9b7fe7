import Foundation
import Testing

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
        let sandbox = try MQTTTests.sandbox()
        let extra = route.isEmpty ? "" : "\n    " + route
        try sandbox.writeRoutes(
            """
            spool: { path: "\(sandbox.path("state/spool.db"))" }
            store: { url: "${STORE_URL}" }
            instances:
              a: { plugin: mqtt, url: "\(brokerA.url)", share: true, subscriptions: [ { topic: "jobs/#", qos: 1 } ] }
              b: { plugin: mqtt, url: "\(brokerB.url)", publish: { qos: 1 } }
            routes:
              - name: a-to-b
                from: a.messages
                to: b.publish
                delivery: at-least-once\(extra)
            """)
        return (try MQTTTests.run(sandbox, environment: ["STORE_URL": store.url]), sandbox)
    }

    /// The client id broker A's log gives the `index`th connection of instance `a`.
    static func clientIDs(at broker: Mosquitto) -> [String] {
        broker.logText.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: " as switchyard-a-") else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map { "switchyard-a-" + $0 }
        }
    }

    @Test func aRouterKilledForGoodLosesNothingItsPartnerTakesItsSessionOver() async throws {
        let store = try PostgresServer()
        defer { store.stop() }
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let watchB = try MosquittoSubscriber(brokerB, topic: "jobs/#", qos: 1, format: "%p")
        let (first, firstSandbox) = try Self.router(brokerA, brokerB, store: store)
        defer { _ = first.stop(signal: SIGKILL) }
        await first.waitUntil("the first router subscribed") { brokerA.occurrences(of: "Sending SUBACK to switchyard-a-") >= 1 }
        let (second, secondSandbox) = try Self.router(brokerA, brokerB, store: store)
        defer { _ = second.stop(signal: SIGKILL) }
        await second.waitUntil("the second router subscribed") { brokerA.occurrences(of: "Sending SUBACK to switchyard-a-") >= 2 }
        let ids = Self.clientIDs(at: brokerA)
        #expect(ids.count == 2 && ids[0] != ids[1], "\(brokerA.logText)")
        let victim = ids[0]
        // Sessions the broker keeps: no clean start, an hour's expiry.
        #expect(brokerA.occurrences(of: "as \(victim) (p5, c0, k30)") == 1, "\(brokerA.logText)")

        // Broker B frozen: neither router can finish, so each holds its share unsettled (sent
        // by A and not confirmed, or queued for it) when the first is killed.
        brokerB.pause()
        let total = 4_000
        let publisher = try brokerA.startPublishing(1...total, topic: "jobs/new", in: firstSandbox)
        defer { if publisher.isRunning { publisher.terminate() } }
        await first.waitUntil("broker A to have acknowledged every message", timeout: .seconds(60)) { !publisher.isRunning }
        #expect(publisher.terminationStatus == 0, "broker A did not acknowledge every message")
        #expect(brokerA.occurrences(of: "Sending PUBLISH to \(victim)") > 0, "the first router was taking its share")
        _ = first.stop(signal: SIGKILL)
        brokerB.resume()

        func received() -> (distinct: Set<Int>, duplicates: Int) {
            let numbers = watchB.lines.compactMap { Int($0) }
            return (Set(numbers), numbers.count - Set(numbers).count)
        }
        await second.waitUntil("every message at broker B", timeout: .seconds(90)) { received().distinct.count >= total }
        let (distinct, duplicates) = received()
        let missing = Set(1...total).subtracting(distinct).sorted()
        #expect(missing.isEmpty, "lost \(missing.count) of \(total), from \(missing.prefix(20))\n\(second.standardError)")
        await second.waitUntil("the takeover to be logged") { second.standardError.contains("took over MQTT session \(victim)") }
        #expect(second.standardError.contains("MQTT session \(victim) lapsed"), "\(second.standardError)")
        // The drained session was ended: a clean start under the victim's id.
        #expect(brokerA.occurrences(of: "as \(victim) (p5, c1") == 1, "\(brokerA.logText)")
        #expect(second.stop() == 0, "\(second.standardError)")
        withExtendedLifetime(secondSandbox) {}
        print("MQTTTakeoverTests: \(total) messages, the first router killed for good, \(duplicates) duplicates at broker B, 0 lost")
    }
}
