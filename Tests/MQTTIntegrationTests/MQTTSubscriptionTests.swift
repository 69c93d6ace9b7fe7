import Foundation
import Testing

@testable import IntegrationSupport

/// What the `mqtt` plugin's subscriptions receive, end to end against a real Mosquitto per
/// test: wildcard filters with their QoS, MQTT 5 shared subscriptions split between two links,
/// retained messages in both directions, and per-topic ordering of QoS 1 publishes through a
/// small inflight window. Every wait is bounded; every process dies with its test.
@Suite(.timeLimit(.minutes(2)))
struct MQTTSubscriptionTests {
    static let clientID = "switchyard-subs"

    /// The JSON objects of a file sink's output (envelope format).
    static func envelopes(_ sandbox: Sandbox, _ file: String) throws -> [[String: Any]] { try sandbox.jsonLines(of: file) }

    static func headers(_ envelope: [String: Any]) -> [String: String] { envelope["headers"] as? [String: String] ?? [:] }

    // MARK: - Wildcards

    /// `+` matches exactly one level and `#` the parent level and everything below; each
    /// message arrives once, in publish order, with the QoS the broker granted it: the lower of
    /// the publish QoS and the QoS of the subscription it matched.
    @Test func wildcardFiltersDeliverExactlyTheMatchingTopicsWithTheLowerQoS() async throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                subscriptions:
                  - { topic: "home/+/temp", qos: 1 }
                  - { topic: "alarm/#", qos: 2 }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: inbound
                from: broker.messages
                to: out.write
            """
        )
        let router = try MQTTRouter.run(sandbox)
        try #require(broker.waitForLog("Sending SUBACK to \(Self.clientID)"), "\(router.standardError)")
        // Both filters went to the broker with their own QoS.
        #expect(broker.logText.contains("home/+/temp (QoS 1)"), "\(broker.logText)")
        #expect(broker.logText.contains("alarm/# (QoS 2)"), "\(broker.logText)")

        // (topic, payload, publish QoS, the QoS expected on arrival or nil when it must not arrive)
        let sent: [(topic: String, payload: String, qos: Int, arrives: Int?)] = [
            ("home/kitchen/temp", "kitchen 21.5", 2, 1),  // the subscription's QoS 1 is lower
            ("home/kitchen/humidity", "humidity 40", 2, nil),
            ("home/a/b/temp", "two levels for one +", 2, nil),
            ("alarm", "alarm parent level", 1, 1),  // `alarm/#` matches `alarm`; the publish QoS 1 is lower
            ("alarm/door/front", "door open", 2, 2),
            ("other", "not subscribed", 2, nil),
            // Last, so everything before it has been forwarded (or not) by the time it arrives.
            ("home/hall/temp", "hall 19", 0, 0),
        ]
        // One mosquitto_pub after the other, each finished (PUBACK/PUBCOMP) before the next: the
        // broker forwards them in this order.
        for message in sent {
            try broker.publish(topic: message.topic, message: message.payload, qos: message.qos)
        }
        await router.waitUntil("the last message in out.jsonl") { sandbox.lines(of: "out.jsonl").contains { $0.contains("hall 19") } }
        #expect(router.stop() == 0, "\(router.standardError)")

        let expected = sent.filter { $0.arrives != nil }
        let lines = try Self.envelopes(sandbox, "out.jsonl")
        #expect(lines.count == expected.count, "\(sandbox.lines(of: "out.jsonl"))")
        #expect(lines.compactMap { $0["subject"] as? String } == expected.map(\.topic))
        #expect(lines.compactMap { $0["body"] as? String } == expected.map(\.payload))
        #expect(lines.map { Self.headers($0)["mqtt.topic"] } == expected.map(\.topic))
        #expect(lines.map { Self.headers($0)["mqtt.qos"] } == expected.map { $0.arrives.map(String.init) }, "\(lines)")
        #expect(lines.allSatisfy { Self.headers($0)["mqtt.retain"] == "false" && Self.headers($0)["mqtt.dup"] == "false" })
        #expect(lines.allSatisfy { $0["type"] as? String == "mqtt.Message" && $0["source"] as? String == "broker.messages" })
        let totals = try #require(RouteTotals.parse(route: "inbound", in: router.standardError), "\(router.standardError)")
        #expect(totals.received == expected.count && totals.delivered == expected.count, "\(totals)")
        #expect(MQTTTests.failedDeliveries(router.standardError).isEmpty, "\(router.standardError)")
        // The broker sent the router exactly the matching ones (its log read from a pipe that may lag).
        _ = broker.waitForLog("Sending PUBLISH to \(Self.clientID)", count: expected.count)
        #expect(broker.occurrences(of: "Sending PUBLISH to \(Self.clientID)") == expected.count, "\(broker.logText)")
    }

    // MARK: - Shared subscriptions

    /// Two links in one group `$share/workers/jobs/#` (MQTT 5): Mosquitto hands each message to
    /// one member, round robin, so every job arrives exactly once in one of the two files, and
    /// both get some.
    @Test func sharedSubscriptionSplitsTheJobsBetweenTwoLinksWithoutDuplicates() async throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              worker1:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: worker-1
                subscriptions: [ { topic: "$share/workers/jobs/#", qos: 1 } ]
              worker2:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: worker-2
                subscriptions: [ { topic: "$share/workers/jobs/#", qos: 1 } ]
              out1: { plugin: core, file: { path: "\(sandbox.path("worker1.jsonl"))" } }
              out2: { plugin: core, file: { path: "\(sandbox.path("worker2.jsonl"))" } }
            routes:
              - { name: jobs-1, from: worker1.messages, to: out1.write }
              - { name: jobs-2, from: worker2.messages, to: out2.write }
            """
        )
        let router = try MQTTRouter.run(sandbox)
        let subscribed =
            broker.waitForLog("Sending SUBACK to worker-1", timeout: .seconds(15))
            && broker.waitForLog("Sending SUBACK to worker-2", timeout: .seconds(15))
        try #require(subscribed, "router log:\n\(router.standardError)")
        #expect(router.process.isRunning)

        let jobs = 40
        for job in 1...jobs { try broker.publish(topic: "jobs/\(job)", message: "job \(job)", qos: 1) }
        await router.waitUntil("\(jobs) lines in the two files", timeout: .seconds(30)) {
            sandbox.lines(of: "worker1.jsonl").count + sandbox.lines(of: "worker2.jsonl").count >= jobs
        }
        #expect(router.stop() == 0, "\(router.standardError)")

        let first = try Self.envelopes(sandbox, "worker1.jsonl")
        let second = try Self.envelopes(sandbox, "worker2.jsonl")
        let payloads = (first + second).compactMap { $0["body"] as? String }
        #expect(payloads.count == jobs, "worker1: \(first.count), worker2: \(second.count)")
        #expect(Set(payloads).count == payloads.count, "duplicates: \(payloads.sorted())")
        #expect(Set(payloads) == Set((1...jobs).map { "job \($0)" }), "\(payloads.sorted())")
        #expect(!first.isEmpty && !second.isEmpty, "worker1: \(first.count), worker2: \(second.count)")
        // Subjects and headers carry the topic the job was published on, without the share prefix.
        for envelope in first + second {
            let body = envelope["body"] as? String ?? "?"
            let topic = "jobs/" + body.dropFirst("job ".count)
            #expect(envelope["subject"] as? String == topic, "\(envelope)")
            #expect(Self.headers(envelope)["mqtt.topic"] == topic, "\(envelope)")
            #expect(Self.headers(envelope)["mqtt.qos"] == "1", "\(envelope)")
        }
        #expect(first.allSatisfy { $0["source"] as? String == "worker1.messages" })
        #expect(second.allSatisfy { $0["source"] as? String == "worker2.messages" })
        // The broker sent each job to one member only.
        #expect(
            broker.occurrences(of: "Sending PUBLISH to worker-1") + broker.occurrences(of: "Sending PUBLISH to worker-2") == jobs,
            "\(broker.logText)")
        #expect(MQTTTests.failedDeliveries(router.standardError).isEmpty, "\(router.standardError)")
    }

    // MARK: - Retained messages

    /// A message retained before the router starts reaches its subscription flagged retained;
    /// a live one does not. And the router's own retained publish stays with the broker for a
    /// subscriber that only comes after the router has gone.
    @Test func retainedMessagesInBothDirections() async throws {
        let broker = try Mosquitto()
        try broker.publish(topic: "config/x", message: "mode eco", qos: 1, retain: true)
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 50ms, count: 1 } }
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                subscriptions: [ { topic: "config/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: inbound
                from: broker.messages
                to: out.write
              - name: announce
                from: clock.tick
                map: { topic: "state/router", payload: "router up", qos: 1, retain: true }
                type: mqtt.Publish
                to: broker.publish
            """
        )
        let router = try MQTTRouter.run(sandbox)
        try #require(broker.waitForLog("Sending SUBACK to \(Self.clientID)"), "\(router.standardError)")
        await router.waitUntil("the retained message in out.jsonl") { sandbox.lines(of: "out.jsonl").contains { $0.contains("mode eco") } }
        try broker.publish(topic: "config/y", message: "mode live", qos: 1)
        await router.waitUntil("the live message in out.jsonl") { sandbox.lines(of: "out.jsonl").contains { $0.contains("mode live") } }
        // The router's publish reached the broker with the retain flag.
        #expect(broker.waitForLog("Received PUBLISH from \(Self.clientID) (d0, q1, r1, "), "\(router.standardError)")
        #expect(router.stop() == 0, "\(router.standardError)")

        let lines = try Self.envelopes(sandbox, "out.jsonl")
        #expect(lines.count == 2, "\(sandbox.lines(of: "out.jsonl"))")
        #expect(lines.compactMap { $0["subject"] as? String } == ["config/x", "config/y"])
        #expect(lines.compactMap { $0["body"] as? String } == ["mode eco", "mode live"])
        #expect(lines.map { Self.headers($0)["mqtt.retain"] } == ["true", "false"], "\(lines)")
        #expect(lines.map { Self.headers($0)["mqtt.qos"] } == ["1", "1"], "\(lines)")
        let announce = try #require(RouteTotals.parse(route: "announce", in: router.standardError), "\(router.standardError)")
        #expect(announce.received == 1 && announce.delivered == 1, "\(announce)")
        #expect(MQTTTests.failedDeliveries(router.standardError).isEmpty, "\(router.standardError)")

        // The router is gone: only a retained message can reach a subscriber that starts now.
        broker.waitForLog("Client \(Self.clientID) disconnected")
        let late = try MosquittoSubscriber(broker, topic: "state/#", qos: 1, format: "%t %r %p")
        #expect(late.waitForLines(1) == ["state/router 1 router up"], "\(broker.logText)")
    }

    // MARK: - Ordering

    /// 300 QoS 1 publishes to one topic through an inflight window of 4: a subscriber sees
    /// every one, once, in the order the timer made them.
    @Test func qos1PublishesToOneTopicStayInOrderThroughASmallInflightWindow() throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        let count = 300
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1ms, count: \(count) } }
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                inflight: 4
            routes:
              - name: sequence
                from: clock.tick
                map: { topic: "seq/a", payload: "n {{body.count}}", qos: 1 }
                type: mqtt.Publish
                to: broker.publish
            """
        )
        let subscriber = try MosquittoSubscriber(broker, topic: "seq/a", qos: 1, format: "%q %p")
        let router = try MQTTRouter.run(sandbox)
        let lines = subscriber.waitForLines(count, timeout: .seconds(40))
        #expect(lines.count == count, "\(router.standardError)")
        let numbers = lines.compactMap { line in line.hasPrefix("1 n ") ? Int(line.dropFirst("1 n ".count)) : nil }
        #expect(numbers.count == lines.count, "\(lines)")
        let outOfOrder = zip(numbers, numbers.dropFirst()).filter { $0.1 != $0.0 + 1 }
        #expect(outOfOrder.isEmpty, "not consecutive: \(outOfOrder.prefix(10))")
        #expect(numbers == Array(1...count))
        #expect(router.stop() == 0, "\(router.standardError)")

        let log = router.standardError
        let totals = try #require(RouteTotals.parse(route: "sequence", in: log), "\(log)")
        #expect(totals.received == count && totals.delivered == count, "\(totals)")
        #expect(MQTTTests.failedDeliveries(log).isEmpty, "\(log)")
        // Each publish went to the broker once, never resent. (The broker's log is read from its
        // pipe, which may lag behind.)
        _ = broker.waitForLog("Received PUBLISH from \(Self.clientID) (d0, q1, r0, ", count: count)
        _ = broker.waitForLog("Sending PUBACK to \(Self.clientID)", count: count)
        #expect(broker.occurrences(of: "Received PUBLISH from \(Self.clientID) (d0, q1, r0, ") == count, "\(broker.logText.suffix(3000))")
        #expect(broker.occurrences(of: "Received PUBLISH from \(Self.clientID) (d1") == 0)
        #expect(broker.occurrences(of: "Sending PUBACK to \(Self.clientID)") == count)
        // Nothing more arrives afterwards.
        #expect(subscriber.lines.count == count)
    }
}
