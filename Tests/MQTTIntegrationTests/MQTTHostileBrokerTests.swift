import Foundation
import Testing

@testable import IntegrationSupport

/// A broker that sends values at or past the protocol's limits: the link closes the connection
/// with the reason code MQTT 5 prescribes, counts it, names the broker in the log, emits
/// nothing it cannot stand behind, and reconnects; the router keeps running.
@Suite(.timeLimit(.minutes(2)))
struct MQTTHostileBrokerTests {
    static let clientID = "switchyard-hostile"

    /// CONNACK (MQTT 5, success, no properties), then a QoS 0 PUBLISH with an empty topic and
    /// Topic Alias 1, which this client never allowed (Topic Alias Maximum 0).
    static let connAckThenAliasedPublish: [UInt8] =
        [0x20, 0x03, 0x00, 0x00, 0x00]
        + [0x30, 0x08, 0x00, 0x00, 0x03, 0x23, 0x00, 0x01, UInt8(ascii: "h"), UInt8(ascii: "i")]

    /// A sandbox whose instance `broker` links to `fake` (`settings`: more of its keys, one
    /// per line) and whose route `inbound` writes what it receives to out.jsonl.
    static func sandbox(for fake: FakeBroker, topic: String, settings: String = "") throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("mqtt")
        let extra = settings.split(separator: "\n").map { "\n    " + $0 }.joined()
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "mqtt://127.0.0.1:\(fake.port)"
                client_id: \(clientID)
                reconnect: { initial_delay: 100ms, max_delay: 500ms }
                subscriptions: [ { topic: "\(topic)", qos: 1 } ]\(extra)
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { name: inbound, from: broker.messages, to: out.write }
            """
        )
        return sandbox
    }

    @Test func aTopicAliasThisClientNeverAllowedClosesTheConnectionWithReason0x94() async throws {
        let fake = try FakeBroker(reply: Self.connAckThenAliasedPublish)
        let sandbox = try Self.sandbox(for: fake, topic: "sensors/#")
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox)
        await router.waitUntil("a second connection after the violation") { fake.connections >= 2 }
        let log = router.standardError
        #expect(log.contains("closing the connection to 127.0.0.1:\(fake.port): protocol violation: PUBLISH with Topic Alias 1"), "\(log)")
        #expect(try MetricsExposition.pluginMetric("mqtt_bad_packets_total", instance: "broker", admin: admin) >= 1)
        // DISCONNECT with reason code 0x94 (Topic Alias invalid) went out before the close.
        let disconnect: [UInt8] = [0xE0, 0x01, 0x94]
        // The fake broker reads the old connection on a thread of its own.
        await router.waitUntil("the DISCONNECT read") { fake.received.indices.contains { fake.received[$0...].starts(with: disconnect) } }
        let received = fake.received
        #expect(
            received.indices.contains { received[$0...].starts(with: disconnect) }, "\(received.map { String($0, radix: 16) })")
        // Nothing with an empty topic reached the route.
        #expect(sandbox.lines(of: "out.jsonl").isEmpty)
        #expect(router.process.isRunning)
        #expect(router.stop() == 0, "\(router.standardError)")
        fake.stop()
    }

    /// CONNACK, then three QoS 1 PUBLISHes (ids 1–3) without waiting for a PUBACK, to a link
    /// that announced a Receive Maximum of 2.
    static let connAckThenThreeUnconfirmedPublishes: [UInt8] =
        [0x20, 0x03, 0x00, 0x00, 0x00]
        + (1...3).flatMap { id -> [UInt8] in [0x32, 0x07, 0x00, 0x01, UInt8(ascii: "t"), 0x00, UInt8(id), 0x00, UInt8(ascii: "x")] }

    @Test func aBrokerPastTheReceiveMaximumIsDisconnectedWithReason0x93() async throws {
        let fake = try FakeBroker(reply: Self.connAckThenThreeUnconfirmedPublishes)
        let sandbox = try Self.sandbox(for: fake, topic: "t", settings: "receive_maximum: 2")
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        let disconnect: [UInt8] = [0xE0, 0x01, 0x93]
        await router.waitUntil("the DISCONNECT read") { fake.received.indices.contains { fake.received[$0...].starts(with: disconnect) } }
        let log = router.standardError
        #expect(log.contains("protocol violation: more than 2 QoS 1/2 publishes unconfirmed"), "\(log)")
        // The CONNECT announced it: Receive Maximum (0x21) = 2.
        let received = fake.received
        #expect(received.indices.contains { received[$0...].starts(with: [0x21, 0x00, 0x02]) })
        #expect(router.process.isRunning)
        #expect(router.stop() == 0, "\(router.standardError)")
        fake.stop()
    }

    /// A reconnect delay so long that doubling it would overflow is refused at start, naming
    /// the setting (it used to trap on the first failed connection).
    @Test func aReconnectDelayPastADayIsRefusedNamingTheSetting() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("mqtt")
        try sandbox.writeRoutes(
            """
            instances:
              broker: { plugin: mqtt, url: "mqtt://127.0.0.1:1", reconnect: { initial_delay: 3000000h } }
            """)
        let result = try RouterProcess.runToExit(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status != 0)
        // Refused by validation before anything starts, at the setting's position.
        #expect(
            result.errors.contains("main.yaml:2:67: error: instance 'broker' (plugin mqtt): /reconnect/initial_delay: at most 24h"),
            "\(result.errors)")
    }
}

/// MQTT Connect's memory of session objects is bounded in bytes, not only in phones: phones
/// sending large session objects push the least recently used out, and one too large to keep
/// is not kept; each is counted.
@Suite(.timeLimit(.minutes(2)))
struct MQTTConnectMemoryTests {
    @Test func sessionObjectsOverTheByteLimitAreForgottenAndCounted() async throws {
        let broker = try Mosquitto()
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("mqtt")
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: switchyard-memory
                mqtt_connect: true
                mqtt_connect_memory: 2KiB
                subscriptions: [ { topic: "phones/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { name: inbound, from: broker.messages, to: out.write }
            """
        )
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox)
        broker.waitForLog("Sending SUBACK to switchyard-memory")
        // Two phones of ~900 bytes fit in 2 KiB; the third pushes the first out; a 3000-byte
        // session object is never kept.
        for (phone, size) in [("a", 900), ("b", 900), ("c", 900), ("d", 3000)] {
            let session = String(repeating: "x", count: size)
            try broker.publish(
                topic: "phones/\(phone)", message: #"{"iPhoneID": "\#(phone)", "Battery": 1, "SessionObject": {"s": "\#(session)"}}"#,
                qos: 1)
        }
        await router.waitUntil("four messages through") { sandbox.lines(of: "out.jsonl").count >= 4 }
        #expect(try MetricsExposition.pluginMetric("mqttconnect_sessions_forgotten_total", instance: "broker", admin: admin) == 2)
        #expect(router.stop() == 0, "\(router.standardError)")
    }
}
