import MQTTCodec
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// Answers the router's offer for ``MQTTPlugin``: what `libmqtt.so`'s exported entry point calls. That
/// entry point, `switchyard_plugin_entry`, is a target of its own (MQTTPluginEntry, Plugins/mqtt/Entry):
/// every test target is linked into one test bundle, where this module sits beside the other
/// plugins' and a second definition of the C symbol would clash.
package func negotiateMQTTPlugin(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(MQTTPlugin.self, offer: offer, table: table, capacity: capacity)
}

/// An MQTT broker link: one instance per broker connection. `messages` emits what the
/// subscriptions receive; `publish` sends to the broker and acknowledges the router only when
/// the broker has confirmed (PUBACK for QoS 1, PUBCOMP for QoS 2).
final class MQTTPlugin: SwitchyardPlugin {
    /// Decoded by `validate` before anything starts (see ``SwitchyardPlugin/configuration``).
    static let configuration: (any PluginConfiguration.Type)? = MQTTLinkConfiguration.self

    static let manifest = PluginManifest(
        name: "mqtt",
        version: "0.1.0",
        summary: "MQTT 3.1.1 and 5 broker link over SwiftNIO",
        ports: [
            PortDeclaration(
                name: "messages",
                direction: .source,
                // MQTT Connect hook: with `mqtt_connect: true` a phone's payloads get their own types.
                types: [MQTTEnvelopes.messageType] + MQTTConnectProfile.inboundTypes,
                requires: "subscriptions",
                summary: "Publishes received through the instance's subscriptions"
            ),
            PortDeclaration(
                name: "publish",
                direction: .sink,
                types: ["*"],
                summary: "Publishes each envelope; an mqtt.Publish body sets topic, payload, qos and retain"
            ),
        ],
        types: [
            MQTTEnvelopes.messageType: true,
            MQTTEnvelopes.publishType: [
                "type": "object",
                "additionalProperties": false,
                "required": ["topic"],
                "properties": [
                    "topic": ["type": "string", "minLength": 1],
                    "payload": [:],
                    "qos": ["type": "integer", "minimum": 0, "maximum": 2],
                    "retain": ["type": "boolean"],
                ],
            ],
        ].merging(MQTTConnectProfile.typeSchemas) { own, _ in own },  // MQTT Connect hook: the app's JSON formats
        config: MQTTLinkConfiguration.jsonSchema
    )

    let context: PluginContext
    let link: MQTTLink
    /// Session takeover with the other routers sharing the subscription (`share:` without a
    /// `client_id`); nil otherwise.
    let membership: MQTTMembership?
    /// MQTT Connect messages refused as invalid (for the log; the metric is the counter).
    private let invalidConnectMessages = Atomic<Int>(0)

    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        let configuration = try MQTTLinkConfiguration(instance: name, config: config)
        link = MQTTLink(configuration: configuration, context: context, instance: name)
        membership = configuration.takesOverSessions && context.offersHolds ? MQTTMembership(link: link, instance: name) : nil
        // Before the link starts, so no connection runs without it. Weak: the membership holds
        // the link, and a reload drops both.
        if let membership {
            link.reconnect { [weak membership] in membership?.nextClientID() ?? MQTTLinkConfiguration.freshClientID(instance: name) }
        }
    }

    func start() throws {
        if let membership { membership.start() } else { link.start() }
    }

    func quiesce() {
        link.quiesce()
        membership?.quiesce()
    }

    func stop() {
        link.stop()
        membership?.stop()
    }

    func resume(port: String) {
        link.resume()
        membership?.resume()
    }

    func settled(token: UInt64, outcome: DeliveryOutcome) {
        // The top 16 bits number the link: 0 is the instance's own, others drain a lapsed member's session.
        if token >> 48 == 0 {
            link.settled(token: token, outcome: outcome)
        } else {
            membership?.settled(token: token, outcome: outcome)
        }
    }

    func canAccept(on port: String) -> Bool { link.hasRoom }

    /// A relayed `mqtt.Message` (no MQTT Connect profile, no properties to carry) is published
    /// from the router's memory in place; every other envelope goes the general way with a copy.
    func deliver(borrowing envelope: borrowing BorrowedEnvelope, on port: String, delivery: Delivery) {
        guard link.configuration.connect == nil else { return deliver(envelope.copy(), on: port, delivery: delivery) }
        do {
            guard
                let publish = try MQTTEnvelopes.publish(
                    lent: envelope, defaults: link.configuration.publish, version: link.configuration.version)
            else { return deliver(envelope.copy(), on: port, delivery: delivery) }
            link.publish(publish, delivery: delivery)
        } catch {
            delivery.ack(.reject, reason: "\(error)")
        }
    }

    func deliver(_ envelope: Envelope, on port: String, delivery: Delivery) {
        // MQTT Connect hook: a dialog or settings message the app would not understand is
        // refused, not published; one for a phone gets the phone's session object.
        if let problem = MQTTConnectProfile.problem(with: envelope) {
            let count = invalidConnectMessages.add(1, ordering: .relaxed).newValue
            context.metric(.counter, "mqttconnect_invalid_total", 1)
            context.log(.warning, "refused to publish: \(problem) (mqttconnect_invalid_total=\(count))")
            delivery.ack(.reject, reason: problem)
            return
        }
        let envelope = link.configuration.connect?.outbound(envelope) ?? envelope
        do {
            let publish = try MQTTEnvelopes.publish(
                for: envelope, defaults: link.configuration.publish, version: link.configuration.version)
            link.publish(publish, delivery: delivery)
        } catch let expired as MQTTEnvelopes.ExpiredMessage {
            // Done with, not failed: nobody may receive it any more (counted, not dead-lettered).
            context.metric(.counter, "mqtt_expired_total", 1)
            if context.isLogging(.debug) { context.log(.debug, "\(expired); dropped") }
            delivery.ack(.ok)
        } catch {
            delivery.ack(.reject, reason: "\(error)")
        }
    }
}
