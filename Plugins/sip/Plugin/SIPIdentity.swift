import SwitchyardCore
import SwitchyardPluginKit

/// Who a sip instance is (the IMS names iDoubs uses: IMPI for authentication, IMPU as
/// address). Unlike the other sections, `identity:` is kept as it is written, so it is read
/// straight into this type.
struct SIPIdentity: Sendable, Decodable {
    /// The public identity, the address of record: `sip:alice@example.org`.
    var impu: String
    /// The private identity: the digest user name (defaults to the IMPU's user part).
    var impi: String
    /// The only digest realm answered, when set; without it any realm of the registrar or
    /// outbound proxy is.
    var realm: String?
    var password: String?
    var displayName: String?

    /// Reads `identity:`; the IMPI defaults to the IMPU's user part.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        impu = try container.decode(CheckedString<AddressRule>.self, forKey: .impu).text
        impi = try container.decodeIfPresent(String.self, forKey: .impi) ?? SIPConfiguration.userPart(of: impu)
        realm = try container.decodeIfPresent(String.self, forKey: .realm)
        password = try container.decodeIfPresent(ConfigurationSecret.self, forKey: .password)?.value
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
    }

    private enum CodingKeys: CodingKey { case impu, impi, realm, password, displayName }

    /// A SIP address of record: `sip:alice@example.org`.
    enum AddressRule: ConfigurationStringRule {
        static let placeholder = "sip:user@example.org"

        static func checked(_ text: String) throws(PluginError) -> String {
            guard text.lowercased().hasPrefix("sip:") || text.lowercased().hasPrefix("sips:"), text.contains("@") else {
                throw PluginError("'\(text)' is not a SIP address like sip:alice@example.org")
            }
            return text
        }
    }
}
