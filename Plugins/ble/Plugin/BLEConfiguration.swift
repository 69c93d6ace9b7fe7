import SwitchyardCore
import SwitchyardPluginKit

/// One ble instance's settings: which board, and where on it the buttons and the display are.
/// The manifest's schema is derived from this type (``PluginConfiguration``).
struct BLEConfiguration: PluginConfiguration {
    /// A characteristic that notifies presses of one button.
    struct Button: Sendable {
        var characteristic: String
        var number: Int
    }

    /// The characteristic the display text is written to.
    struct Display: Decodable, Sendable {
        /// How the text is written: a Write Request (acknowledged by the board) or a Write Command.
        enum Write: String, ConfigurationEnum { case request, command }

        var characteristic: String
        /// `request` (Write Request, acknowledged by the board) or `command` (Write Command).
        var withResponse: Bool
        var maximumLength: Int

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            characteristic = try container.decode(CheckedString<GATTUUID>.self, forKey: .characteristic).text
            withResponse = try container.decode(.write, default: Write.request) == .request
            maximumLength = try container.decode(.maxLength, default: 20, in: 1...512)
        }

        private enum CodingKeys: CodingKey { case characteristic, write, maxLength }
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

    static let descriptions = [
        "/adapter": "BlueZ adapter, default hci0",
        "/service": "the GATT service UUID",
    ]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        adapter = try container.decode(.adapter, default: "hci0")
        let device = try container.nestedContainer(keyedBy: DeviceKeys.self, forKey: .device)
        address = try device.decodeIfPresent(CheckedString<BluetoothAddress>.self, forKey: .address)?.text
        name = try device.decodeIfPresent(String.self, forKey: .name)
        service = try container.decode(CheckedString<GATTUUID>.self, forKey: .service).text
        buttons = try container.decode(.buttons, default: [ButtonEntry]()).enumerated().map { index, entry in
            Button(characteristic: entry.characteristic.text, number: entry.button ?? index + 1)
        }
        var kinds: [UInt8: String] = [:]
        for (key, kind) in try container.decode(.pressKinds, default: [String: String]()) {
            guard let byte = UInt8(key) else {
                throw ConfigurationError(
                    codingPath: container.codingPath + [CodingKeys.pressKinds],
                    "keys are byte values 0-255 and values names, like { \"1\": short, \"2\": long }")
            }
            kinds[byte] = kind
        }
        pressKinds = kinds
        display = try container.decodeIfPresent(Display.self, forKey: .display)
        // A zero wait would retry a missing bus or board in a tight loop.
        scanTimeout = try container.decode(.scanTimeout, default: .seconds(20), atLeast: .milliseconds(10))
        connectTimeout = try container.decode(.connectTimeout, default: .seconds(20), atLeast: .milliseconds(10))
        let reconnect = try container.decode(.reconnect, default: BackoffSettings<Reconnect>())
        initialDelay = reconnect.initialDelay
        maximumDelay = reconnect.maxDelay
    }

    func validate() throws {
        guard address != nil || name != nil else { throw ConfigurationError(at: "/device", "needs an address or a name") }
        guard !buttons.isEmpty || display != nil else {
            throw ConfigurationError(at: "", "nothing to do: give buttons, a display, or both")
        }
        guard maximumDelay >= initialDelay else {
            throw ConfigurationError(at: "/reconnect/max_delay", "not less than reconnect.initial_delay")
        }
    }

    /// How the device is named in messages.
    var deviceDescription: String { [address, name.map { "\"\($0)\"" }].compactMap { $0 }.joined(separator: " ") }

    private enum CodingKeys: CodingKey {
        case adapter, device, service, buttons, pressKinds, display, scanTimeout, connectTimeout, reconnect
    }
    private enum DeviceKeys: CodingKey { case address, name }

    /// One entry of `buttons:`; the button number defaults to its place in the list.
    private struct ButtonEntry: Decodable {
        var characteristic: CheckedString<GATTUUID>
        var button: Int?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            characteristic = try container.decode(CheckedString<GATTUUID>.self, forKey: .characteristic)
            button = try container.decodeIfPresent(.button, in: 1...Int(Int32.max))
        }

        private enum CodingKeys: CodingKey { case characteristic, button }
    }

    /// The `reconnect:` section's defaults; a zero first wait would retry a missing bus or
    /// board in a tight loop.
    private enum Reconnect: BackoffPolicy {
        static let initialDelay: Duration = .seconds(1)
        static let maxDelay: Duration = .seconds(30)
        static let shortest: Duration = .milliseconds(10)
    }
}

/// A GATT UUID in BlueZ's form (lower case); 16-bit ones (`180f`) are expanded with the
/// Bluetooth base UUID.
enum GATTUUID: ConfigurationStringRule {
    static let placeholder = "0000180f-0000-1000-8000-00805f9b34fb"

    static func checked(_ text: String) throws(PluginError) -> String {
        let lower = text.lowercased()
        if lower.count == 4, lower.allSatisfy(\.isHexDigit) { return "0000\(lower)-0000-1000-8000-00805f9b34fb" }
        let groups = lower.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
        guard groups == [8, 4, 4, 4, 12], lower.filter({ $0 != "-" }).allSatisfy(\.isHexDigit) else {
            throw PluginError("'\(text)' is not a UUID like 0000180f-0000-1000-8000-00805f9b34fb or 180f")
        }
        return lower
    }
}

/// A Bluetooth device address (`AA:BB:CC:DD:EE:FF`), upper case.
enum BluetoothAddress: ConfigurationStringRule {
    static let placeholder = "00:00:00:00:00:00"

    static func checked(_ text: String) throws(PluginError) -> String {
        let upper = text.uppercased()
        guard upper.split(separator: ":").count == 6, upper.count == 17 else {
            throw PluginError("'\(upper)' is not a Bluetooth address like AA:BB:CC:DD:EE:FF")
        }
        return upper
    }
}
