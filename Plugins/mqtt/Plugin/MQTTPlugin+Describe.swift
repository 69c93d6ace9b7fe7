import SwitchyardCore
import SwitchyardPluginKit

extension MQTTPlugin {
    /// The instance as its configuration makes it (ABI `describe`). MQTT's types are static
    /// (the manifest has them, the MQTT Connect formats included); what depends on the
    /// configuration is which of them `messages` emits — the phone's formats only with
    /// `mqtt_connect: true` — and whether `messages` settles: a QoS 1 or 2 subscription is
    /// acknowledged to the broker only once the router has settled the publish.
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription? {
        let connect = config["mqtt_connect"]?.boolValue == true
        let ports = manifest.ports.map { port in
            guard port.name == "messages", !connect else { return port }
            var plain = port
            plain.types = [MQTTEnvelopes.messageType]
            return plain
        }
        let confirmed = (config["subscriptions"]?.arrayValue ?? []).contains { ($0["qos"]?.intValue ?? 0) > 0 }
        return InstanceDescription(ports: ports, settles: confirmed ? ["messages"] : [])
    }
}
