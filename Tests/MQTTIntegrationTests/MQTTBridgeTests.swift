import Foundation
import Testing

@testable import IntegrationSupport

/// Two real brokers bridged both ways through one router: every message crosses exactly once
/// and nothing echoes back — MQTT 5 by no-local on the router's own subscriptions, MQTT 3.1.1
/// by the link's memory of what it published.
@Suite(.timeLimit(.minutes(2)))
struct MQTTBridgeTests {
    @Test(arguments: ["5", "\"3.1.1\""])
    func bidirectionalBridgeBetweenTwoBrokersDoesNotEcho(version: String) async throws {
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let sandbox = try Sandbox()
        try sandbox.installPlugin("mqtt")
        try sandbox.writeRoutes(
            """
            instances:
              a: { plugin: mqtt, url: "\(brokerA.url)", version: \(version), client_id: bridge-a, subscriptions: [ { topic: "chat/#", qos: 1 } ], publish: { qos: 1 } }
              b: { plugin: mqtt, url: "\(brokerB.url)", version: \(version), client_id: bridge-b, subscriptions: [ { topic: "chat/#", qos: 1 } ], publish: { qos: 1 } }
            routes:
              - { name: a-to-b, from: a.messages, to: b.publish }
              - { name: b-to-a, from: b.messages, to: a.publish }
            """
        )
        let watchA = try MosquittoSubscriber(brokerA, topic: "chat/#", qos: 1)
        let watchB = try MosquittoSubscriber(brokerB, topic: "chat/#", qos: 1)
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("both links subscribed") {
            brokerA.occurrences(of: "Sending SUBACK to bridge-a") > 0 && brokerB.occurrences(of: "Sending SUBACK to bridge-b") > 0
        }
        try brokerA.publish(topic: "chat/from-a", message: "hello from A", qos: 1)
        try brokerB.publish(topic: "chat/from-b", message: "hello from B", qos: 1)
        await router.waitUntil("each message on both brokers") { watchA.lines.count >= 2 && watchB.lines.count >= 2 }
        // Another message proves the earlier ones have had time to echo, had they done so.
        try brokerA.publish(topic: "chat/last", message: "done", qos: 1)
        await router.waitUntil("the last message bridged") { watchB.lines.contains("chat/last done") }
        #expect(router.stop() == 0)
        #expect(watchA.lines.sorted() == ["chat/from-a hello from A", "chat/from-b hello from B", "chat/last done"])
        #expect(watchB.lines.sorted() == ["chat/from-a hello from A", "chat/from-b hello from B", "chat/last done"])
        let aToB = try #require(RouteTotals.parse(route: "a-to-b", in: router.standardError), "\(router.standardError)")
        let bToA = try #require(RouteTotals.parse(route: "b-to-a", in: router.standardError), "\(router.standardError)")
        #expect(aToB.received == 2)
        #expect(bToA.received == 1)
    }

    /// MQTT 5 properties a bridge must not drop: the Message Expiry Interval goes on less the
    /// time the router held the message (as a broker forwards it), the Payload Format Indicator
    /// as it came.
    @Test func messageExpiryAndPayloadFormatCrossTheBridge() async throws {
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let sandbox = try MQTTSessionTests.bridge(from: brokerA, to: brokerB, topic: "props/#")
        let watchB = try MosquittoSubscriber(brokerB, topic: "props/#", qos: 1, version: "mqttv5", format: "%E|%F|%p")
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("subscribed to broker A") { brokerA.occurrences(of: "Sending SUBACK to switchyard-a") > 0 }
        try brokerA.publish(
            topic: "props/expiring", message: "short-lived", qos: 1, version: "mqttv5",
            arguments: ["-D", "publish", "message-expiry-interval", "120", "-D", "publish", "payload-format-indicator", "1"])
        try brokerA.publish(topic: "props/plain", message: "plain", qos: 1, version: "mqttv5")
        await router.waitUntil("both messages at broker B") { watchB.lines.count >= 2 }
        #expect(router.stop() == 0, "\(router.standardError)")
        let lines = watchB.lines
        let expiring = try #require(lines.first { $0.hasSuffix("|short-lived") }, "\(lines)")
        let fields = expiring.split(separator: "|", omittingEmptySubsequences: false)
        // Held for well under a second here: whole seconds left, at most what was sent.
        #expect(fields.count == 3 && (115...120).contains(Int(fields[0]) ?? -1) && fields[1] == "1", "\(expiring)")
        #expect(lines.contains("||plain"), "no properties invented for a publish without them: \(lines)")
    }

    /// A message published retained on A while the bridge runs is retained on B too (MQTT 5
    /// Retain As Published on the router's subscription), as with Mosquitto's own bridge: a
    /// client that subscribes to B later gets it, flagged retained.
    @Test func aRetainedMessageStaysRetainedAcrossTheBridge() async throws {
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let sandbox = try MQTTSessionTests.bridge(from: brokerA, to: brokerB, topic: "status/#")
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("subscribed to broker A") { brokerA.occurrences(of: "Sending SUBACK to switchyard-a") > 0 }
        try brokerA.publish(topic: "status/door", message: "open", qos: 1, retain: true)
        try brokerA.publish(topic: "status/light", message: "on", qos: 1)
        await router.waitUntil("both bridged") { brokerB.occurrences(of: "Received PUBLISH from switchyard-b") >= 2 }
        #expect(router.stop() == 0, "\(router.standardError)")
        // The router published the one retained (r1), the other not (r0).
        #expect(brokerB.logText.contains(#"Received PUBLISH from switchyard-b (d0, q1, r1, m"#), "\(brokerB.logText)")
        #expect(brokerB.occurrences(of: "r1, m") == 1 && brokerB.occurrences(of: "'status/light'") == 1, "\(brokerB.logText)")
        let late = try MosquittoSubscriber(brokerB, topic: "status/door", qos: 1, format: "%r|%t|%p")
        #expect(late.waitForLines(1) == ["1|status/door|open"], "a later subscriber gets it from B, flagged retained")
    }

    /// A broker that is down is one warning with the system's reason until a connection
    /// succeeds, not one per attempt, and not NIO's error types (issue 34).
    @Test func aBrokerThatIsDownIsOneWarningWithTheSystemsReason() async throws {
        let broker = try Mosquitto()
        _ = broker.stop()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              a:
                plugin: mqtt
                url: "\(broker.url)"
                reconnect: { initial_delay: 10ms, max_delay: 20ms }
                subscriptions: [ { topic: "x/#", qos: 0 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { from: a.messages, to: out.write }
            """)
        let router = try MQTTRouter.run(sandbox)
        await router.waitUntil("the first refused connection") { router.standardError.contains("cannot connect to") }
        // Attempts every 10-20 ms while the broker starts again: many refusals, one line.
        try broker.restart()
        await router.waitUntil("connected once the broker is back") {
            router.standardError.contains("connected to 127.0.0.1:\(broker.port)")
        }
        let refusals = MQTTTests.logLines(router.standardError) { $0.contains("cannot connect to") }
        #expect(refusals.count == 1, "\(refusals)")
        #expect(refusals.first?.contains("127.0.0.1:\(broker.port): Connection refused; trying again with backoff") == true, "\(refusals)")
        #expect(!router.standardError.contains("SingleConnectionFailure") && !router.standardError.contains("errno:"))
        #expect(router.stop() == 0, "\(router.standardError)")
    }
}
