import SwitchyardPluginKit

/// `send:` of a sip instance as written: the defaults of the `send` port.
struct SIPSendSection: Decodable {
    var to: String?
    var allowEnvelopeDestination: Bool
    var contentType: String
    var maxInFlight: Int

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        to = try container.decodeIfPresent(String.self, forKey: .to)
        allowEnvelopeDestination = try container.decode(.allowEnvelopeDestination, default: false)
        contentType = try container.decode(.contentType, default: "text/plain")
        maxInFlight = try container.decode(.maxInFlight, default: 256, atLeast: 1)
    }

    private enum CodingKeys: CodingKey { case to, allowEnvelopeDestination, contentType, maxInFlight }
}
