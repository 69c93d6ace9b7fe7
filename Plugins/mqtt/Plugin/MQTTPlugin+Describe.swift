import SwitchyardCore
import SwitchyardPluginKit

extension MQTTPlugin {
    /// The instance as its configuration makes it (ABI `describe`). MQTT's types are static
    /// (the manifest has them, the MQTT Connect formats included); what depends on the
    /// configuration is which of them `messages` emits — the phone's formats only with
    /// `mqtt_connect: true` — and what the ports promise: a QoS 1 or 2 subscription is
    /// acknowledged to the broker only once the router has settled the publish (`messages`
    /// settles), a QoS 1 or 2 publish is acknowledged `ok` on the broker's PUBACK or PUBCOMP
    /// (`publish` confirms); QoS 0 makes either end at-most-once.
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription? {
        let connect = config["mqtt_connect"]?.boolValue == true
        let ports = manifest.ports.map { port in
            guard port.name == "messages", !connect else { return port }
            var plain = port
            plain.types = [MQTTEnvelopes.messageType]
            return plain
        }
        var description = InstanceDescription(ports: ports)
        // A publish never waits (MQTTPublisher.publish): it is handed to the link's event loop
        // through its inbox, or written at once on the loop itself (QoS 0): the router may
        // deliver on the thread that emitted.
        description.deliversInline = ["publish"]
        let subscriptions = config["subscriptions"]?.arrayValue ?? []
        if let index = subscriptions.firstIndex(where: { ($0["qos"]?.intValue ?? 0) == 0 }) {
            let topic = subscriptions[index]["topic"]?.stringValue ?? "?"
            description.atMostOnce["messages"] =
                "subscriptions/\(index) ('\(topic)') is QoS 0\(subscriptions[index]["qos"] == nil ? " (the default)" : ""): the broker lets go of a message as it sends it; subscribe with `qos: 1`"
        } else if !subscriptions.isEmpty {
            description.settles = ["messages"]
            let link = try? MQTTLinkConfiguration(instance: name, config: config)
            // Session takeover keeps its members in the instance's state.
            description.keepsState = link?.takesOverSessions ?? false
            // What a router that never comes back had spooled and not delivered goes back to
            // the broker's session, which another router takes over.
            if link?.takesOverSessions == true { description.redelivers = ["messages"] }
            if let link, link.shareGroup != nil, !link.keepsSession {
                description.cautions["messages"] =
                    "with share: and a session the broker does not keep (clean_start: true, or session_expiry: 0), what the broker had sent a router that is killed and not seen confirmed is lost (Mosquitto hands it to no other member of the group); leave clean_start and session_expiry at their defaults, and the other routers take the session over (docs/scale-out.md)"
            }
        }
        if (config["publish"]?["qos"]?.intValue ?? 0) == 0 {
            description.atMostOnce["publish"] =
                "publish.qos is 0\(config["publish"]?["qos"] == nil ? " (the default)" : ""): nothing confirms a QoS 0 PUBLISH; set `publish: { qos: 1 }`"
        } else {
            description.confirms = ["publish"]
        }
        return description
    }
}
