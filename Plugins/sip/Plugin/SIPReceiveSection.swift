import SwitchyardCore
import SwitchyardPluginKit

/// `receive:` of a sip instance as written: what incoming MESSAGEs are taken and how they are
/// answered.
struct SIPReceiveSection: Decodable {
    var accept: [String]
    var answer: AnswerStatus
    var duplicateWindow: Duration
    var answerTimeout: Duration

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accept = try container.decode(.accept, default: ["text/plain", "application/json"])
        answer = try container.decode(.answer, default: .ok)
        duplicateWindow = try container.decode(.duplicateWindow, default: .seconds(32))
        answerTimeout = try container.decode(.answerTimeout, default: .seconds(8))
    }

    private enum CodingKeys: CodingKey { case accept, answer, duplicateWindow, answerTimeout }

    /// `receive.answer:`: 200, or 202 for a store-and-forward endpoint.
    struct AnswerStatus: ConfigurationValue, Sendable {
        var status: Int

        static let ok = Self(status: 200)

        private init(status: Int) { self.status = status }

        init(from decoder: any Decoder) throws {
            status = try decoder.singleValueContainer().decode(Int.self)
            guard status == 200 || status == 202 else {
                throw ConfigurationError(decoder, "\(status) is neither 200 nor 202 (store-and-forward)")
            }
        }

        static let configurationSchema: JSONValue = ["enum": [200, 202]]
        static var schemaPlaceholder: Self { .ok }
    }
}
