import SwitchyardCore
import SwitchyardPluginKit

/// `listen:` of a sip instance as written: an object or its short form `"host:port"`
/// (`"[::1]:5070"`); ``SIPConfiguration`` derives the advertised host from it.
struct SIPListenSection: ConfigurationValue {
    var host: String
    var port: Int
    var tlsPort: Int?
    var advertise: String?

    private init(host: String, port: Int) { (self.host, self.port) = (host, port) }

    init(from decoder: any Decoder) throws {
        if let text = try ConfigurationJSON(from: decoder).value.stringValue {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else {
                throw ConfigurationError(decoder, "'\(text)' is not host:port")
            }
            guard (0...65535).contains(port) else { throw ConfigurationError(decoder, "\(port) is not in 0-65535") }
            host = String(text[..<colon]).trimmingCharacters(in: "[").trimmingCharacters(in: "]")
            self.port = port
            return
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        host = try container.decode(.host, default: "0.0.0.0")
        port = try container.decode(.port, default: 5060, in: 0...65535)
        tlsPort = try container.decodeIfPresent(.tlsPort, in: 0...65535)
        advertise = try container.decodeIfPresent(String.self, forKey: .advertise)
    }

    private enum CodingKeys: CodingKey { case host, port, tlsPort, advertise }

    static var configurationSchema: JSONValue { ConfigurationSchema.of(Self.self, orAlso: "string") }
    static var schemaPlaceholder: Self { Self(host: "0.0.0.0", port: 5060) }
}
