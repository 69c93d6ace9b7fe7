import MQTTCodec
import NIOCore
import NIOEmbedded
import SwitchyardCore
import Testing

@testable import MQTTPlugin

/// Connecting, being refused, losing the connection and reconnecting, and a broker that breaks
/// the protocol, on `EmbeddedChannel`s (``LinkHarness``): no broker, no sockets, no sleeping.
struct MQTTLinkConnectionTests {
    @Test func theConnectCarriesTheConfiguredClientIDKeepAliveAndCleanStart() throws {
        let harness = try LinkHarness([
            "url": "mqtt://broker.test:1883", "client_id": "bridge-7", "keep_alive": 17, "clean_start": true, "receive_maximum": 20,
        ])
        defer { harness.finish() }
        #expect(harness.channels.isEmpty)
        harness.start()
        let connection = try #require(harness.channels.first)
        let sent = try harness.sent(on: connection)
        #expect(sent.count == 1)
        guard case .connect(let connect) = sent.first else { throw HarnessError("the link sent \(sent), not CONNECT") }
        #expect(connect.clientID == "bridge-7")
        #expect(connect.keepAlive == 17)
        #expect(connect.cleanStart)
        #expect(connect.properties.receiveMaximum == 20)
        #expect(connect.properties.sessionExpiryInterval == 0)
        // Not ready for the router until the broker has accepted.
        #expect(harness.host.gauge("ready") == 0)
    }

    @Test func aDurableSubscriptionKeepsItsSessionAndSubscribesOnceAccepted() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test", "subscriptions": [["topic": "sensors/#", "qos": 1]]])
        defer { harness.finish() }
        harness.start()
        let connection = try #require(harness.channels.first)
        guard case .connect(let connect) = try harness.sent(on: connection).first else { throw HarnessError("no CONNECT") }
        // QoS 1 is a promise the broker keeps only with the session: kept, under the instance's name.
        #expect(connect.clientID == "switchyard-bridge")
        #expect(!connect.cleanStart)
        #expect(connect.properties.sessionExpiryInterval == MQTTLinkConfiguration.keptSessionExpiry)

        try harness.receive(.connack(MQTTConnAck()), on: connection)
        let sent = try harness.sent(on: connection)
        guard case .subscribe(let subscribe) = sent.first else { throw HarnessError("the link sent \(sent), not SUBSCRIBE") }
        #expect(subscribe.subscriptions.map(\.topicFilter) == ["sensors/#"])
        #expect(subscribe.subscriptions.map(\.qos) == [.atLeastOnce])
        #expect(harness.host.gauge("ready") == 1)
        #expect(harness.host.gauge("mqtt_connected") == 1)
    }

    @Test(arguments: [
        ("5", UInt8(0x86), "broker refused the connection: bad user name or password (0x86): account locked"),
        ("3.1.1", UInt8(5), "broker refused the connection: not authorized (5)"),
    ])
    func aRefusedConnectionIsLoggedWithTheBrokersReasonAndClosed(version: String, code: UInt8, logged: String) throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test", "version": .string(version)])
        defer { harness.finish() }
        harness.start()
        let connection = try #require(harness.channels.first)
        _ = try harness.sent(on: connection)
        var properties = MQTTProperties()
        properties.reasonString = "account locked"  // MQTT 5 only: 3.1.1 has no properties to carry it
        try harness.receive(.connack(MQTTConnAck(reasonCode: code, properties: properties)), on: connection)
        #expect(harness.host.logged(.error) == [logged])
        #expect(harness.host.counter("mqtt_connect_refused_total") == 1)
        #expect(!connection.isActive)
        #expect(harness.host.gauge("ready") == 0)
    }

    @Test func aLostConnectionIsDialledAgainAfterTheBackoff() throws {
        let harness = try LinkHarness([
            "url": "mqtt://broker.test:1883", "client_id": "bridge-7", "reconnect": ["initial_delay": "2s", "max_delay": "30s"],
        ])
        defer { harness.finish() }
        let first = try harness.connect()
        first.close(promise: nil)
        #expect(harness.host.logged(.warning) == ["connection to broker.test:1883 lost"])
        #expect(harness.host.gauge("mqtt_connected") == 0)
        #expect(harness.host.gauge("ready") == 0)

        // The first wait is drawn from [initial_delay / 2, initial_delay] (jitter).
        harness.loop.advanceTime(by: .milliseconds(999))
        #expect(harness.channels.count == 1)
        harness.loop.advanceTime(by: .milliseconds(1001))
        #expect(harness.channels.count == 2)
        let second = try #require(harness.channels.last)
        guard case .connect(let connect) = try harness.sent(on: second).first else { throw HarnessError("no CONNECT on reconnect") }
        #expect(connect.clientID == "bridge-7")
    }

    @Test func aBrokerThatIsDownIsTriedAgainWithADoublingBackoffAndLoggedOnce() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test:1883", "reconnect": ["initial_delay": "2s", "max_delay": "30s"]])
        defer { harness.finish() }
        harness.broker.refusing.store(true, ordering: .relaxed)
        harness.start()
        #expect(harness.broker.attempts == 1)
        // Attempt 2 comes 1-2 s after the first, attempt 3 2-4 s after that: never before 3 s,
        // always by 6 s. Without the doubling it could come at 2 s.
        harness.loop.advanceTime(by: .milliseconds(999))
        #expect(harness.broker.attempts == 1)
        harness.loop.advanceTime(to: .uptimeNanoseconds(0) + .seconds(2))
        #expect(harness.broker.attempts == 2)
        harness.loop.advanceTime(to: .uptimeNanoseconds(0) + .milliseconds(2999))
        #expect(harness.broker.attempts == 2)
        harness.loop.advanceTime(to: .uptimeNanoseconds(0) + .seconds(6))
        #expect(harness.broker.attempts == 3)
        #expect(
            harness.host.logged(.warning) == ["cannot connect to broker.test:1883: no answer within 10 s; trying again with backoff"])

        harness.broker.refusing.store(false, ordering: .relaxed)
        harness.loop.advanceTime(to: .uptimeNanoseconds(0) + .seconds(14))
        #expect(harness.broker.attempts == 4)
        let connection = try #require(harness.channels.first)
        guard case .connect = try harness.sent(on: connection).first else { throw HarnessError("no CONNECT once the broker is up") }
    }

    @Test func aMalformedPacketClosesTheConnectionWithAMalformedPacketDisconnect() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test:1883"])
        defer { harness.finish() }
        let connection = try harness.connect()
        // Packet type 0 is reserved.
        try connection.writeInbound(ByteBuffer(bytes: [0x00, 0x00]))
        #expect(try harness.sent(on: connection) == [.disconnect(MQTTDisconnect(reasonCode: 0x81))])
        #expect(!connection.isActive)
        #expect(harness.host.counter("mqtt_bad_packets_total") == 1)
        #expect(
            harness.host.logged(.error) == [
                "closing the connection to broker.test:1883: malformed unknown(0x00) packet: packet type 0 is reserved"
            ])
        // A connection closed for a protocol error is dialled again like any lost one.
        harness.loop.advanceTime(by: .seconds(1))
        #expect(harness.channels.count == 2)
    }

    @Test func anAcknowledgementForNothingSentIsAProtocolError() throws {
        let harness = try LinkHarness(["url": "mqtt://broker.test:1883"])
        defer { harness.finish() }
        let connection = try harness.connect()
        try harness.receive(.pubrec(MQTTAck(packetID: 42)), on: connection)
        #expect(try harness.sent(on: connection) == [.disconnect(MQTTDisconnect(reasonCode: 0x82))])
        #expect(!connection.isActive)
        #expect(harness.host.counter("mqtt_bad_packets_total") == 1)
        #expect(
            harness.host.logged(.error) == [
                "closing the connection to broker.test:1883: protocol violation: PUBREC for unknown packet id 42"
            ])
    }
}
