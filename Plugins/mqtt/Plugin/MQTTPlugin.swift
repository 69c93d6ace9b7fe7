import MQTTCodec
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// The exported entry point of `libmqtt.so`.
@_cdecl("switchyard_plugin_entry")
public func switchyardPluginEntry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(MQTTPlugin.self, offer: offer, table: table, capacity: capacity)
}

/// An MQTT broker link: one instance per broker connection. `messages` emits what the
/// subscriptions receive; `publish` sends to the broker and acknowledges the router only when
/// the broker has confirmed (PUBACK for QoS 1, PUBCOMP for QoS 2).
final class MQTTPlugin: SwitchyardPlugin {
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
        config: [
            "type": "object",
            "additionalProperties": false,
            "required": ["url"],
            "properties": [
                "url": ["type": "string", "pattern": "^mqtts?://", "description": "mqtt://host:port or mqtts://host:port"],
                "version": ["enum": [5, "5", "3.1.1"]],
                "client_id": ["type": "string", "maxLength": 65535],
                "username": ["type": "string"],
                "password": ["type": "string", "secret": true],
                "clean_start": ["type": "boolean"],
                "session_expiry": ["type": "integer", "minimum": 0],
                "keep_alive": ["type": "integer", "minimum": 0, "maximum": 65535],
                "subscriptions": [
                    "type": "array",
                    "items": [
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["topic"],
                        "properties": [
                            "topic": ["type": "string", "minLength": 1],
                            "qos": ["type": "integer", "minimum": 0, "maximum": 2],
                            "no_local": ["type": "boolean"],
                        ],
                    ],
                ],
                "publish": [
                    "type": "object",
                    "additionalProperties": false,
                    "properties": [
                        "topic": ["type": "string", "minLength": 1],
                        "qos": ["type": "integer", "minimum": 0, "maximum": 2],
                        "retain": ["type": "boolean"],
                    ],
                ],
                "will": [
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["topic"],
                    "properties": [
                        "topic": ["type": "string", "minLength": 1],
                        "payload": ["type": "string"],
                        "qos": ["type": "integer", "minimum": 0, "maximum": 2],
                        "retain": ["type": "boolean"],
                    ],
                ],
                "tls": [
                    "type": "object",
                    "additionalProperties": false,
                    "properties": [
                        "ca_file": ["type": "string"],
                        "cert_file": ["type": "string"],
                        "key_file": ["type": "string"],
                        "server_name": ["type": "string"],
                        "verify": ["type": "boolean"],
                    ],
                ],
                "reconnect": [
                    "type": "object",
                    "additionalProperties": false,
                    "properties": ["initial_delay": ["type": ["string", "integer"]], "max_delay": ["type": ["string", "integer"]]],
                ],
                "inflight": ["type": "integer", "minimum": 1, "maximum": 65534],
                "max_pending": ["type": "integer", "minimum": 1],
                "echo_suppression": [
                    "type": "boolean",
                    "description": "MQTT 3.1.1: drop the broker's echo of this link's own publishes (MQTT 5 uses no-local)",
                ],
                "maximum_packet_size": ["type": "integer", "minimum": 1024],
                // MQTT Connect hook.
                "mqtt_connect": [
                    "type": "boolean",
                    "default": false,
                    "description": "MQTT Connect (iOS app): type phone payloads, keep each phone's SessionObject, attach it when sending",
                ],
                "mqtt_connect_memory": [
                    "type": ["string", "integer"],
                    "description":
                        "bytes of SessionObjects kept for MQTT Connect phones (default 16MiB; least recently used forgotten first)",
                ],
            ],
        ]
    )

    let context: PluginContext
    let link: MQTTLink
    /// MQTT Connect messages refused as invalid (for the log; the metric is the counter).
    private let invalidConnectMessages = Atomic<Int>(0)

    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        link = MQTTLink(configuration: try MQTTLinkConfiguration(instance: name, config: config), context: context, instance: name)
    }

    func start() throws { link.start() }

    func quiesce() { link.quiesce() }

    func stop() { link.stop() }

    func resume(port: String) { link.resume() }

    func settled(token: UInt64, outcome: DeliveryOutcome) { link.settled(token: token, outcome: outcome) }

    func canAccept(on port: String) -> Bool { link.hasRoom }

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
        } catch {
            delivery.ack(.reject, reason: "\(error)")
        }
    }
}
