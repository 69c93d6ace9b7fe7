import MQTTCodec
import SwitchyardCore
import SwitchyardPluginKit
import Testing

@testable import MQTTPlugin

/// A publish made in place from a lent envelope is the publish the general path makes of its
/// copy, and every envelope the in-place path cannot read whole goes the general way.
struct MQTTLentPublishTests {
    static let relayed = MQTTEnvelopes.envelope(
        for: MQTTPublish(topic: "sensors/t1", payload: Array("21.5".utf8), qos: .atLeastOnce, retain: true), version: .v5)

    /// Envelopes the in-place path takes.
    static let inPlace: [Envelope] = [
        relayed,
        MQTTEnvelopes.envelope(for: MQTTPublish(topic: "a/b", payload: [], qos: .atMostOnce), version: .v3_1_1),
        Envelope(type: "demo.Reading", subject: "plant/line-4", body: Array(#"{"t": 21.5}"#.utf8)),
        Envelope(type: "demo.Reading", subject: "plant/x", contentType: "application/json", body: Array("[1]".utf8)),
        Envelope(type: "demo.Reading", subject: "s", headers: Headers([("mqtt.qos", "2"), ("mqtt.qos", "0")]), body: [1, 2]),
        Envelope(type: "demo.Reading", subject: "s", headers: Headers([("mqtt.retain", "yes"), ("mqtt.qos", "7")]), body: [0xFF]),
        Envelope(type: "demo.Reading", subject: "s", headers: Headers([("mqtt.topic", "over/ridden")]), body: []),
    ]

    static let traceparent = "00-" + String(repeating: "a", count: 32) + "-" + String(repeating: "b", count: 16) + "-01"

    /// Envelopes it leaves to the general path.
    static let general: [Envelope] = [
        Envelope(type: "demo.Reading", subject: "s", headers: Headers([("mqtt.user.room", "4")]), body: []),
        Envelope(type: "demo.Reading", subject: "s", headers: Headers([("traceparent", traceparent)]), body: []),
        Envelope(type: "demo.Reading", subject: "s", headers: Headers([("mqtt.message_expiry", "60")]), body: []),
        Envelope(type: MQTTEnvelopes.publishType, body: Array(#"{"topic": "x", "payload": "y", "qos": 1}"#.utf8)),
        Envelope(type: MQTTConnectProfile.dialogMessageType, body: Array("{}".utf8)),
    ]

    static let defaultsList: [MQTTLinkConfiguration.PublishDefaults] = [
        .init(topic: nil, qos: .atMostOnce, retain: false), .init(topic: "fixed/topic", qos: .exactlyOnce, retain: true),
    ]

    @Test(arguments: [MQTTVersion.v3_1_1, .v5])
    func inPlaceMatchesTheGeneralPath(version: MQTTVersion) throws {
        for defaults in Self.defaultsList {
            for envelope in Self.inPlace {
                let lent = try envelope.lend { try MQTTEnvelopes.publish(lent: $0, defaults: defaults, version: version) }
                let general = try MQTTEnvelopes.publish(for: envelope, defaults: defaults, version: version)
                #expect(lent == general, "\(envelope.type) \(envelope.subject) \(envelope.headers)")
            }
        }
    }

    @Test func everythingElseTakesTheGeneralPath() throws {
        for envelope in Self.general {
            let lent = try envelope.lend { try MQTTEnvelopes.publish(lent: $0, defaults: Self.defaultsList[0], version: .v5) }
            #expect(lent == nil, "\(envelope.type) \(envelope.headers)")
        }
    }

    @Test func aTopicThatCannotBePublishedToIsRefusedInPlaceToo() {
        let envelope = Envelope(type: "demo.Reading", subject: "sensors/#", body: [])
        #expect(throws: PluginError.self) {
            try envelope.lend { try MQTTEnvelopes.publish(lent: $0, defaults: Self.defaultsList[0], version: .v5) }
        }
    }
}
