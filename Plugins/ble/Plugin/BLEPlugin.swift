import Dispatch
import SwitchyardCore
import SwitchyardPluginKit

/// Negotiates the plugin ABI for `libble.so` (its exported entry is in BLEPluginEntry).
public func negotiateBLEPlugin(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(BLEPlugin.self, offer: offer, table: table, capacity: capacity)
}

/// A Slate+-style BLE board through BlueZ's D-Bus API: its buttons as a source, its display as
/// a sink. One instance per board.
final class BLEPlugin: SwitchyardPlugin {
    static let buttonsPort = "buttons"
    static let displayPort = "display"
    static let pressType = "ble.ButtonPress"

    /// Decoded by `validate` before anything starts (see ``SwitchyardPlugin/configuration``).
    static let configuration: (any PluginConfiguration.Type)? = BLEConfiguration.self

    static let manifest = PluginManifest(
        name: "ble",
        version: "0.1.0",
        summary: "BLE boards (Slate+ buttons and display) through BlueZ over D-Bus",
        ports: [
            PortDeclaration(
                name: buttonsPort, direction: .source, types: [pressType], requires: "buttons",
                summary: "One envelope per button notification"),
            PortDeclaration(
                name: displayPort, direction: .sink, types: ["*"], requires: "display",
                summary: "Writes the text (a string body, or its text field) to the display characteristic; acknowledged once written"),
        ],
        types: [
            pressType: [
                "type": "object",
                "required": ["device", "button", "raw"],
                "properties": [
                    "device": ["type": "string"], "button": ["type": "integer"], "kind": ["type": "string"], "raw": ["type": "string"],
                ],
            ]
        ],
        config: BLEConfiguration.jsonSchema
    )

    private let context: PluginContext
    private let link: BusLink

    /// Reads the configuration (an error stops the start); the bus is connected in `start`.
    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        link = BusLink(configuration: try BLEConfiguration(config: config), context: context)
    }

    /// Starts not ready and connects in the background: a missing bus or BlueZ is retried,
    /// never fatal.
    func start() throws {
        context.metric(.gauge, "ready", 0)
        link.start()
    }

    func stop() {
        let done = DispatchSemaphore(value: 0)
        Task { [link] in
            await link.stop()
            done.signal()
        }
        _ = done.wait(timeout: .now() + 10)
    }

    /// Refuses an iiidea's trigger or action on this board while it is not paired or not
    /// connected; the router asks again once the instance reports itself ready (connected).
    func enablePiece(port: String, iiidea: String, preferences: JSONValue) throws {
        if let reason = link.pieceRefusal { throw PluginError(reason) }
    }

    func deliver(_ envelope: Envelope, on port: String, delivery: Delivery) {
        let text: String
        switch envelope.decodedBody() {
        case .string(let string): text = string
        case .object(let fields) where fields["text"]?.stringValue != nil: text = fields["text"]?.stringValue ?? ""
        default: text = envelope.bodyText
        }
        Task { [link] in
            let (outcome, reason) = await link.write(text)
            delivery.ack(outcome, reason: reason)
        }
    }
}
