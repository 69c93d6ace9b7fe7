import SwitchyardCore
import SwitchyardPluginKit

/// The exported entry point of `libshout.so`: the one line that makes a Swift type a plugin.
@_cdecl("switchyard_plugin_entry")
public func entry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(Shout.self, offer: offer, table: table, capacity: capacity)
}

/// The configuration, declared once: PluginKit derives the manifest's JSON Schema from this
/// type and decodes instance configurations with it, with errors like `/suffix: longer than 16
/// characters`.
struct ShoutConfiguration: PluginConfiguration {
    /// Appended to every shouted body.
    var suffix: String

    static let descriptions = ["/suffix": "appended to every shouted body"]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        suffix = try container.decode(.suffix, default: "", maxLength: 16)
    }

    private enum CodingKeys: CodingKey { case suffix }
}

/// An example plugin: re-emits every envelope it receives with the body in capitals (and an
/// optional suffix), keeping type, headers and trace.
final class Shout: SwitchyardPlugin {
    /// Decoded by `validate` before anything starts (see ``SwitchyardPlugin/configuration``).
    static let configuration: (any PluginConfiguration.Type)? = ShoutConfiguration.self

    static let manifest = PluginManifest(
        name: "shout",
        version: "1.0.0",
        summary: "Upper-cases bodies: the Swift example plugin",
        ports: [
            PortDeclaration(name: "in", direction: .sink, types: ["*"], feeds: ["out"], summary: "Envelopes to shout"),
            PortDeclaration(name: "out", direction: .source, types: ["*"], summary: "The shouted envelopes"),
        ],
        config: ShoutConfiguration.jsonSchema
    )

    let context: PluginContext
    let suffix: String

    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        suffix = try ShoutConfiguration(config: config).suffix
    }

    func start() throws {}

    func stop() {}

    func deliver(_ envelope: Envelope, on port: String, delivery: Delivery) {
        var loud = envelope
        loud.body = Array((envelope.bodyText.uppercased() + suffix).utf8)
        switch context.emit(loud, on: "out") {
        case .ok: delivery.ack(.ok)
        case .full: delivery.ack(.retry, reason: "out is full")
        case let other: delivery.ack(.reject, reason: "emit failed: \(other)")
        }
    }
}
