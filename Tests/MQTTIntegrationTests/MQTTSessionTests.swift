import Foundation
import Testing

@testable import IntegrationSupport

/// A router killed and restarted loses nothing on an at-least-once MQTT → MQTT bridge with
/// the mqtt plugin's default session settings (issue 36): an instance with a QoS 1 subscription
/// keeps its broker session under its stable default id, so what the broker had sent and not
/// seen confirmed, and what it queued while the router was down, comes back after the restart;
/// what the router had confirmed was in its spool.
@Suite(.timeLimit(.minutes(3)))
struct MQTTSessionTests {
    /// Broker A (`topic` at QoS 1) → `delivery: at-least-once` → broker B (QoS 1), nothing else
    /// set on the instances; `route`: more keys of the route `a-to-b`, one per line; `share`:
    /// `share: true` on instance `a`; `store`: the shared store of `${STORE_URL}`.
    static func bridge(
        from brokerA: Mosquitto, to brokerB: Mosquitto, topic: String = "crash/#", route: String = "", share: Bool = false,
        store: Bool = false
    ) throws -> Sandbox {
        let sandbox = try MQTTRouter.sandbox()
        let extra = route.split(separator: "\n").map { "\n    " + $0 }.joined()
        try sandbox.writeRoutes(
            """
            spool: { path: "\(sandbox.path("state/spool.db"))" }
            \(store ? "store: { url: \"${STORE_URL}\" }" : "")
            instances:
              a: { plugin: mqtt, url: "\(brokerA.url)",\(share ? " share: true," : "") subscriptions: [ { topic: "\(topic)", qos: 1 } ] }
              b: { plugin: mqtt, url: "\(brokerB.url)", publish: { qos: 1 } }
            routes:
              - name: a-to-b
                from: a.messages
                to: b.publish
                delivery: at-least-once\(extra)
            """)
        return sandbox
    }

    @Test func aRouterKilledMidStreamAndRestartedLosesNothingWithTheDefaultSessionSettings() async throws {
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let sandbox = try Self.bridge(from: brokerA, to: brokerB)
        let watchB = try MosquittoSubscriber(brokerB, topic: "crash/#", qos: 1, format: "%p")
        /// The distinct numbers broker B has seen, and how many arrived more than once.
        func received() -> (distinct: Set<Int>, duplicates: Int) {
            let numbers = watchB.lines.compactMap { Int($0) }
            return (Set(numbers), numbers.count - Set(numbers).count)
        }
        var router = try MQTTRouter.run(sandbox)
        await router.waitUntil("subscribed to broker A") { brokerA.occurrences(of: "Sending SUBACK to switchyard-a") >= 1 }
        // The default keeps the session: no clean start, an hour's session expiry.
        #expect(brokerA.occurrences(of: "as switchyard-a (p5, c0, k30)") == 1, "\(brokerA.logText)")

        let burst = 4_000
        let rounds = 3
        var kills = 0
        for round in 0..<rounds {
            let numbers = (round * burst + 1)...((round + 1) * burst)
            // Broker B frozen, the router cannot finish the burst: it spools what its queue and
            // window hold, then holds back, and broker A keeps the rest for its session, sent
            // and unconfirmed or queued. The kill falls mid-stream however the machine is loaded.
            brokerB.pause()
            let publisher = try brokerA.startPublishing(numbers, topic: "crash/burst", in: sandbox)
            defer { if publisher.isRunning { publisher.terminate() } }
            await router.waitUntil("broker A to have acknowledged burst \(round + 1)", timeout: .seconds(30)) { !publisher.isRunning }
            #expect(!publisher.isRunning && publisher.terminationStatus == 0, "broker A did not acknowledge every message")
            // The kill must fall while the router takes the burst. A router restarted by the
            // previous round may not have connected yet when the publisher is done (the broker
            // then queues the whole burst for its session): wait for it to be taking.
            await router.waitUntil("the router taking burst \(round + 1)", timeout: .seconds(30)) {
                brokerA.occurrences(of: "Sending PUBLISH to switchyard-a") > round * burst
            }
            _ = router.stop(signal: SIGKILL)
            #expect(router.process.terminationReason == .uncaughtSignal, "killed, not stopped: no DISCONNECT, no drain")
            kills += 1
            router = try MQTTRouter.run(sandbox)
            brokerB.resume()
        }
        let total = rounds * burst
        await router.waitUntil("every message at broker B", timeout: .seconds(60)) { received().distinct.count >= total }
        let (distinct, duplicates) = received()
        let missing = Set(1...total).subtracting(distinct).sorted()
        let lost = missing.count
        #expect(lost == 0, "lost \(lost) of \(total) after \(kills) kills, from \(missing.prefix(20))\n\(router.standardError)")
        // Each restart resumed the session the killed router left, without a clean start.
        await router.waitUntil("the last router connected to broker A") { brokerA.occurrences(of: "as switchyard-a (") >= rounds + 1 }
        #expect(brokerA.occurrences(of: "as switchyard-a (p5, c0, k30)") == rounds + 1, "\(brokerA.logText)")
        #expect(router.stop() == 0, "\(router.standardError)")
        // After a graceful stop the session stays subscribed: what is published meanwhile is
        // queued for the router and bridged when it comes back.
        try brokerA.publish(topic: "crash/after", message: "\(total + 1)", qos: 1)
        router = try MQTTRouter.run(sandbox)
        await router.waitUntil("the message published while the router was stopped", timeout: .seconds(30)) {
            received().distinct.contains(total + 1)
        }
        #expect(router.stop() == 0, "\(router.standardError)")
        print(
            "MQTTSessionTests: \(total) messages, \(kills) kills mid-stream, \(duplicates) duplicates at broker B, 0 lost"
        )
    }

    /// `dedupe.key` drops what a broker sends again after a failover (or a publisher sends
    /// twice) by a key the message carries, here an MQTT 5 user property: the envelope id cannot
    /// serve, as the router stamps a fresh one on each arrival.
    @Test func aDedupeKeyDropsARedeliveryByTheIdTheMessageCarries() async throws {
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let sandbox = try Self.bridge(
            from: brokerA, to: brokerB, topic: "orders/#", route: "dedupe: { key: \"{{headers.mqtt.user.msgid}}\", window: 1h }")
        let watchB = try MosquittoSubscriber(brokerB, topic: "orders/#", qos: 1, format: "%p")
        let router = try MQTTRouter.run(sandbox)
        await router.waitUntil("subscribed to broker A") { brokerA.occurrences(of: "Sending SUBACK to switchyard-a") >= 1 }
        for (id, text) in [("1", "first"), ("1", "first again"), ("2", "second"), ("2", "second again"), ("3", "third")] {
            try brokerA.publish(topic: "orders/new", message: text, qos: 1, arguments: ["-D", "publish", "user-property", "msgid", id])
        }
        try brokerA.publish(topic: "orders/new", message: "without a key", qos: 1)
        await router.waitUntil("the last message at broker B") { watchB.lines.contains("without a key") }
        #expect(router.stop() == 0, "\(router.standardError)")
        #expect(watchB.lines == ["first", "second", "third", "without a key"], "\(router.standardError)")
        #expect(RouteTotals.counter("deduplicated", route: "a-to-b", in: router.standardError) == 2, "\(router.standardError)")
    }

    /// With `store.url`, the dedupe keys are shared once delivered: what one router delivered
    /// and a broker then hands another router (a redelivery after a failover, here the same
    /// orders published again) is dropped there. A key is shared only once its envelope is
    /// delivered, so a router that dies with an order spooled makes no other router drop it.
    @Test func routersOfOneStoreShareTheKeysTheyDelivered() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let broker = try Mosquitto()
        func start(_ node: String) throws -> (RouterProcess, Sandbox) {
            let sandbox = try MQTTRouter.sandbox()
            try sandbox.writeRoutes(
                """
                spool: { path: "\(sandbox.path("state/spool.db"))" }
                store: { url: "${STORE_URL}" }
                instances:
                  a: { plugin: mqtt, url: "\(broker.url)", client_id: "bridge-\(node)", subscriptions: [ { topic: "orders/#", qos: 1 } ] }
                  out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
                routes:
                  - name: orders
                    from: a.messages
                    to: out.write
                    delivery: at-least-once
                    dedupe: { key: "{{body.order}}", window: 1h }
                """)
            return (try MQTTRouter.run(sandbox, environment: ["STORE_URL": server.url]), sandbox)
        }
        /// The orders a router wrote.
        func written(_ sandbox: Sandbox) -> [Int] {
            ((try? sandbox.jsonLines(of: "out.jsonl")) ?? []).compactMap { line in
                let body = (line["body"] as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } ?? line["body"]
                return (body as? [String: Any])?["order"] as? Int
            }
        }
        let orders = 50
        let (first, firstSandbox) = try start("1")
        await first.waitUntil("the first router subscribed") { broker.occurrences(of: "Sending SUBACK to bridge-1") >= 1 }
        for order in 1...orders { try broker.publish(topic: "orders/new", message: "{\"order\": \(order)}", qos: 1) }
        await first.waitUntil("the first router to have written every order") { written(firstSandbox).count >= orders }
        #expect(first.stop() == 0, "\(first.standardError)")

        let (second, secondSandbox) = try start("2")
        await second.waitUntil("the second router subscribed") { broker.occurrences(of: "Sending SUBACK to bridge-2") >= 1 }
        for order in 1...(orders + 1) { try broker.publish(topic: "orders/new", message: "{\"order\": \(order)}", qos: 1) }
        await second.waitUntil("the second router to have written the new order") { written(secondSandbox).contains(orders + 1) }
        #expect(second.stop() == 0, "\(second.standardError)")
        #expect(written(firstSandbox).sorted() == Array(1...orders))
        #expect(written(secondSandbox) == [orders + 1], "the orders the first router delivered are dropped by the second")
        #expect(RouteTotals.counter("deduplicated", route: "orders", in: second.standardError) == orders, "\(second.standardError)")
    }
}
