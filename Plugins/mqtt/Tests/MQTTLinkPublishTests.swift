import MQTTCodec
import NIOCore
import NIOEmbedded
import SwitchyardCore
import Testing

@testable import MQTTPlugin

/// Publishes both ways on `EmbeddedChannel`s (``LinkHarness``): the broker's are confirmed only
/// once the router settled them, the router's acknowledged only once the broker confirmed them,
/// and the publish port holds the router back while the broker or the socket does not keep up.
struct MQTTLinkPublishTests {
    static let subscribed: JSONValue = ["url": "mqtt://broker.test:1883", "subscriptions": [["topic": "sensors/#", "qos": 2]]]

    @Test func aQoS1PublishIsConfirmedOnlyOnceTheRouterSettledIt() throws {
        let harness = try LinkHarness(Self.subscribed)
        defer { harness.finish() }
        let connection = try harness.connect()
        let publish = MQTTPublish(topic: "sensors/t1", payload: Array("21.5".utf8), qos: .atLeastOnce, packetID: 7)
        try harness.receive(.publish(publish), on: connection)

        let emitted = harness.host.emitted(on: "messages")
        #expect(emitted.count == 1)
        let message = try #require(emitted.first)
        #expect(message.envelope.type == "mqtt.Message")
        #expect(message.envelope.subject == "sensors/t1")
        #expect(message.envelope.body == Array("21.5".utf8))
        #expect(message.settleToken != 0)
        #expect(try harness.sent(on: connection).isEmpty, "PUBACK before the router settled the publish")

        harness.link.settled(token: message.settleToken, outcome: .ok)
        #expect(try harness.sent(on: connection) == [.puback(MQTTAck(packetID: 7))])
    }

    @Test func aQoS1PublishTheRouterHandsBackStaysUnconfirmedAndIsOfferedAgain() throws {
        let harness = try LinkHarness(Self.subscribed)
        defer { harness.finish() }
        let connection = try harness.connect()
        try harness.receive(.publish(MQTTPublish(topic: "sensors/t1", payload: [1], qos: .atLeastOnce, packetID: 3)), on: connection)
        let first = try #require(harness.host.emitted.first)

        harness.link.settled(token: first.settleToken, outcome: .retry)
        #expect(try harness.sent(on: connection).isEmpty)
        #expect(harness.host.counter("mqtt_handed_back_total") == 1)
        // Offered again after the first pause (at most 100 ms), not confirmed meanwhile.
        harness.loop.advanceTime(by: .milliseconds(100))
        let offers = harness.host.emitted(on: "messages")
        #expect(offers.count == 2)
        let again = try #require(offers.last)
        #expect(again.envelope.body == [1])
        #expect(harness.host.counter("mqtt_redelivered_to_router_total") == 1)

        harness.link.settled(token: again.settleToken, outcome: .ok)
        #expect(try harness.sent(on: connection) == [.puback(MQTTAck(packetID: 3))])
    }

    @Test func aQoS2PublishRunsPubrecPubrelPubcompAndIsTakenOnce() throws {
        let harness = try LinkHarness(Self.subscribed)
        defer { harness.finish() }
        let connection = try harness.connect()
        let publish = MQTTPublish(topic: "sensors/door", payload: Array("open".utf8), qos: .exactlyOnce, packetID: 9)
        try harness.receive(.publish(publish), on: connection)
        let message = try #require(harness.host.emitted.first)
        #expect(try harness.sent(on: connection).isEmpty, "PUBREC before the router settled the publish")

        harness.link.settled(token: message.settleToken, outcome: .ok)
        #expect(try harness.sent(on: connection) == [.pubrec(MQTTAck(packetID: 9))])
        // The broker sends it again before it has our PUBREC: answered, not taken twice.
        var resent = publish
        resent.dup = true
        try harness.receive(.publish(resent), on: connection)
        #expect(try harness.sent(on: connection) == [.pubrec(MQTTAck(packetID: 9))])
        try harness.receive(.pubrel(MQTTAck(packetID: 9)), on: connection)
        #expect(try harness.sent(on: connection) == [.pubcomp(MQTTAck(packetID: 9))])
        #expect(harness.host.emitted(on: "messages").count == 1)
    }

    @Test func aQoS2PublishOfTheRouterIsAcknowledgedOnlyOnPubcomp() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test:1883"])
        defer { harness.finish() }
        let connection = try harness.connect()
        harness.link.publish(
            MQTTPublish(topic: "out/door", payload: Array("shut".utf8), qos: .exactlyOnce), delivery: harness.host.delivery(1))
        let sent = try harness.sent(on: connection)
        guard case .publish(let publish) = sent.first, let id = publish.packetID else { throw HarnessError("the link sent \(sent)") }
        #expect(publish.topic == "out/door")
        #expect(publish.qos == .exactlyOnce)

        try harness.receive(.pubrec(MQTTAck(packetID: id)), on: connection)
        #expect(try harness.sent(on: connection) == [.pubrel(MQTTAck(packetID: id))])
        #expect(harness.host.acknowledgement(of: 1) == nil, "acknowledged to the router before PUBCOMP")
        try harness.receive(.pubcomp(MQTTAck(packetID: id)), on: connection)
        #expect(harness.host.acknowledgement(of: 1)?.outcome == .ok)
    }

    @Test func aPublishTheBrokerRefusesIsRejectedWithItsReasonCode() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test:1883"])
        defer { harness.finish() }
        let connection = try harness.connect()
        harness.link.publish(MQTTPublish(topic: "out/a", payload: [], qos: .atLeastOnce), delivery: harness.host.delivery(4))
        guard case .publish(let publish) = try harness.sent(on: connection).first, let id = publish.packetID else {
            throw HarnessError("no PUBLISH")
        }
        try harness.receive(.puback(MQTTAck(packetID: id, reasonCode: 0x87)), on: connection)
        let acknowledgement = try #require(harness.host.acknowledgement(of: 4))
        #expect(acknowledgement.outcome == .reject)
        #expect(acknowledgement.reason == "broker answered PUBACK with reason 0x87")
    }

    @Test func publishesWaitForTheConnectionAndForRoomInTheInflightWindow() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test:1883", "inflight": 1])
        defer { harness.finish() }
        harness.start()
        let connection = try #require(harness.channels.first)
        _ = try harness.sent(on: connection)
        for (id, topic) in [(UInt64(1), "out/1"), (2, "out/2")] {
            harness.link.publish(MQTTPublish(topic: topic, payload: [], qos: .atLeastOnce), delivery: harness.host.delivery(id))
        }
        #expect(try harness.sent(on: connection).isEmpty, "published before the broker accepted the connection")

        try harness.receive(.connack(MQTTConnAck()), on: connection)
        let first = try harness.sent(on: connection)
        guard case .publish(let one) = first.first, let id = one.packetID else { throw HarnessError("the link sent \(first)") }
        #expect(first.count == 1)
        #expect(one.topic == "out/1")

        try harness.receive(.puback(MQTTAck(packetID: id)), on: connection)
        #expect(harness.host.acknowledgement(of: 1)?.outcome == .ok)
        guard case .publish(let two) = try harness.sent(on: connection).first else { throw HarnessError("out/2 not sent") }
        #expect(two.topic == "out/2")
        #expect(harness.host.acknowledgement(of: 2) == nil)
    }

    @Test func thePublishPortHoldsTheRouterBackAtMaxPending() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test:1883", "max_pending": 1])
        defer { harness.finish() }
        let connection = try harness.connect()
        #expect(harness.link.hasRoom)
        harness.link.publish(MQTTPublish(topic: "out/a", payload: [], qos: .atLeastOnce), delivery: harness.host.delivery(1))
        #expect(!harness.link.hasRoom)
        harness.host.refuseAsFull()
        guard case .publish(let publish) = try harness.sent(on: connection).first, let id = publish.packetID else {
            throw HarnessError("no PUBLISH")
        }
        #expect(harness.host.sinkReadyCalls == 0)
        try harness.receive(.puback(MQTTAck(packetID: id)), on: connection)
        #expect(harness.link.hasRoom)
        // The router, refused once, hears of the room (once: nothing was refused since).
        #expect(harness.host.sinkReadyCalls == 1)
        harness.link.publish(MQTTPublish(topic: "out/b", payload: [], qos: .atLeastOnce), delivery: harness.host.delivery(2))
        guard case .publish(let second) = try harness.sent(on: connection).first, let secondID = second.packetID else {
            throw HarnessError("no second PUBLISH")
        }
        try harness.receive(.puback(MQTTAck(packetID: secondID)), on: connection)
        #expect(harness.host.sinkReadyCalls == 1)
    }

    @Test func aRouterHeldBackAtMaxPendingHearsOfRoomOnceAQuarterIsConfirmed() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test:1883", "max_pending": 8])
        defer { harness.finish() }
        let connection = try harness.connect()
        for id in 1...8 {
            harness.link.publish(
                MQTTPublish(topic: "out/\(id)", payload: [], qos: .atLeastOnce), delivery: harness.host.delivery(UInt64(id)))
        }
        #expect(!harness.link.hasRoom)
        harness.host.refuseAsFull()
        let ids = try harness.sent(on: connection).compactMap { packet -> UInt16? in
            guard case .publish(let publish) = packet else { return nil }
            return publish.packetID
        }
        #expect(ids.count == 8)
        // One place is room for one publish: the router is not woken for it.
        try harness.receive(.puback(MQTTAck(packetID: ids[0])), on: connection)
        #expect(harness.link.hasRoom)
        #expect(harness.host.sinkReadyCalls == 0)
        // A quarter of max_pending is: it hears of it once.
        try harness.receive(.puback(MQTTAck(packetID: ids[1])), on: connection)
        #expect(harness.host.sinkReadyCalls == 1)
        try harness.receive(.puback(MQTTAck(packetID: ids[2])), on: connection)
        #expect(harness.host.sinkReadyCalls == 1)
    }

    @Test func aSocketThatStopsTakingBytesHoldsTheRouterBackUntilItDrains() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test:1883"])
        defer { harness.finish() }
        let connection = try harness.connect()
        #expect(harness.link.hasRoom)

        connection.isWritable = false
        connection.pipeline.fireChannelWritabilityChanged()
        #expect(!harness.link.hasRoom)
        harness.host.refuseAsFull()
        #expect(harness.host.counter("mqtt_write_stalls_total") == 1)
        #expect(harness.host.logged(.notice).contains { $0.contains("publishing paused") })

        connection.isWritable = true
        connection.pipeline.fireChannelWritabilityChanged()
        #expect(harness.link.hasRoom)
        #expect(harness.host.sinkReadyCalls == 1)
        // A QoS 0 publish goes out at once again, and is done once handed to the socket.
        harness.link.publish(MQTTPublish(topic: "out/a", payload: [7]), delivery: harness.host.delivery(1))
        #expect(try harness.sent(on: connection) == [.publish(MQTTPublish(topic: "out/a", payload: [7]))])
        #expect(harness.host.acknowledgement(of: 1)?.outcome == .ok)
    }
}
