import SwitchyardCore
import SwitchyardPluginKit

/// One ble instance's settings: which board, and where on it the buttons and the display are.
struct BLEConfiguration: Sendable {
    /// A characteristic that notifies presses of one button.
    struct Button: Sendable {
        var characteristic: String
        var number: Int
    }

    /// The characteristic the display text is written to.
    struct Display: Sendable {
        var characteristic: String
        /// `request` (Write Request, acknowledged by the board) or `command` (Write Command).
        var withResponse: Bool
        var maximumLength: Int
    }

    var adapter: String
    var address: String?
    var name: String?
    var service: String
    var buttons: [Button]
    /// The first byte of a notification → the kind of press it reports, when the board encodes one.
    var pressKinds: [UInt8: String]
    var display: Display?
    var scanTimeout: Duration
    var connectTimeout: Duration
    var initialDelay: Duration
    var maximumDelay: Duration

    init(config: JSONValue) throws {
        adapter = config["adapter"]?.stringValue ?? "hci0"
        let device = config["device"]
        address = device?["address"]?.stringValue?.uppercased()
        name = device?["name"]?.stringValue
        guard address != nil || name != nil else { throw PluginError("device needs an address or a name") }
        if let address, address.split(separator: ":").count != 6 || address.count != 17 {
            throw PluginError("device.address '\(address)' is not a Bluetooth address like AA:BB:CC:DD:EE:FF")
        }
        guard let service = config["service"]?.stringValue else { throw PluginError("service (the GATT service UUID) is required") }
        self.service = try Self.uuid(service, "service")
        buttons = try (config["buttons"]?.arrayValue ?? []).enumerated().map { index, entry in
            guard let characteristic = entry["characteristic"]?.stringValue else {
                throw PluginError("buttons[\(index)].characteristic is required")
            }
            return Button(
                characteristic: try Self.uuid(characteristic, "buttons[\(index)].characteristic"),
                number: entry["button"]?.intValue ?? index + 1)
        }
        var kinds: [UInt8: String] = [:]
        for (key, value) in config["press_kinds"]?.objectValue ?? [:] {
            guard let byte = UInt8(key), let kind = value.stringValue else {
                throw PluginError("press_kinds: keys are byte values 0-255 and values names, like { \"1\": short, \"2\": long }")
            }
            kinds[byte] = kind
        }
        pressKinds = kinds
        if let display = config["display"] {
            guard let characteristic = display["characteristic"]?.stringValue else {
                throw PluginError("display.characteristic is required")
            }
            self.display = Display(
                characteristic: try Self.uuid(characteristic, "display.characteristic"),
                withResponse: (display["write"]?.stringValue ?? "request") == "request",
                maximumLength: display["max_length"]?.intValue ?? 20)
        }
        guard !buttons.isEmpty || display != nil else { throw PluginError("nothing to do: give buttons, a display, or both") }
        scanTimeout = try PluginError.duration(config["scan_timeout"], "scan_timeout", default: .seconds(20))
        connectTimeout = try PluginError.duration(config["connect_timeout"], "connect_timeout", default: .seconds(20))
        initialDelay = try PluginError.duration(config["reconnect"]?["initial_delay"], "reconnect.initial_delay", default: .seconds(1))
        maximumDelay = try PluginError.duration(config["reconnect"]?["max_delay"], "reconnect.max_delay", default: .seconds(30))
        // A zero wait would retry a missing bus or board in a tight loop.
        for (name, value) in [
            ("scan_timeout", scanTimeout), ("connect_timeout", connectTimeout), ("reconnect.initial_delay", initialDelay),
        ] where value < .milliseconds(10) {
            throw PluginError("\(name): at least 10ms")
        }
        guard maximumDelay >= initialDelay else { throw PluginError("reconnect.max_delay: not less than reconnect.initial_delay") }
    }

    /// A 128-bit UUID in BlueZ's form (lower case); 16-bit ones (`180f`) are expanded with the
    /// Bluetooth base UUID.
    static func uuid(_ text: String, _ name: String) throws -> String {
        let lower = text.lowercased()
        if lower.count == 4, lower.allSatisfy(\.isHexDigit) { return "0000\(lower)-0000-1000-8000-00805f9b34fb" }
        let groups = lower.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
        guard groups == [8, 4, 4, 4, 12], lower.filter({ $0 != "-" }).allSatisfy(\.isHexDigit) else {
            throw PluginError("\(name): '\(text)' is not a UUID like 0000180f-0000-1000-8000-00805f9b34fb or 180f")
        }
        return lower
    }

    /// How the device is named in messages.
    var deviceDescription: String { [address, name.map { "\"\($0)\"" }].compactMap { $0 }.joined(separator: " ") }
}
