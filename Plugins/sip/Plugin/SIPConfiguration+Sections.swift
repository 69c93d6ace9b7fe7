import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// The sections of a sip instance's configuration as written; ``SIPConfiguration`` turns them
/// into its settings.
extension SIPConfiguration {
    /// `identity:`; the IMPI defaults to the IMPU's user part.
    struct IdentitySection: Decodable {
        var identity: Identity

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let impu = try container.decode(CheckedString<SIPAddressRule>.self, forKey: .impu).text
            identity = Identity(
                impu: impu,
                impi: try container.decodeIfPresent(String.self, forKey: .impi) ?? SIPConfiguration.userPart(of: impu),
                realm: try container.decodeIfPresent(String.self, forKey: .realm),
                password: try container.decodeIfPresent(ConfigurationSecret.self, forKey: .password)?.value,
                displayName: try container.decodeIfPresent(String.self, forKey: .displayName))
        }

        private enum CodingKeys: CodingKey { case impu, impi, realm, password, displayName }
    }

    /// `listen:`, an object or its short form `"host:port"` (`"[::1]:5070"`).
    struct ListenSection: ConfigurationValue {
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

    /// `register:`, a section or `false` (no registration; `true` registers with the defaults).
    struct RegisterSection: SwitchableSection {
        var enabled = true
        var registrar: String?
        var expires = 600
        var onStart = true
        var retry = BackoffSettings<Retry>()

        init() {}

        init(settingsFrom decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            registrar = try container.decodeIfPresent(String.self, forKey: .registrar)
            // Registrars refuse under 10 s (most under 60 s); Expires is a 31-bit delta.
            expires = try container.decode(.expires, default: expires, in: 10...SIPDeltaSeconds.maximum)
            retry = try container.decode(.retry, default: retry)
            onStart = try container.decode(.onStart, default: true)
        }

        /// The registration, nil when off; the registrar defaults to the IMPU's domain.
        func registration(domain: String) -> Registration? {
            guard enabled else { return nil }
            return Registration(
                registrarURI: registrar ?? "sip:\(domain)", expires: expires, initialRetryDelay: retry.initialDelay,
                maximumRetryDelay: retry.maxDelay, onStart: onStart)
        }

        private enum CodingKeys: CodingKey { case registrar, expires, retry, onStart }
    }

    /// `history:`, a section or `true` (keep a history with the defaults) / `false`.
    struct HistorySection: SwitchableSection {
        var enabled = true
        var keep = 1000
        var maxAge: Duration = .seconds(30 * 86400)
        var maxBody = 4096

        init() {}

        init(settingsFrom decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            // Clearing or pruning writes one store commit per entry: bounded accordingly.
            keep = try container.decode(.keep, default: keep, in: 1...10_000)
            maxAge = try container.decode(.maxAge, default: maxAge, atLeast: .seconds(1))
            // A body is stored as JSON text (base64 when binary) in one store value.
            maxBody = try container.decode(.maxBody, default: maxBody, in: 0...65536)
        }

        /// The settings, nil when off.
        var settings: SIPHistorySettings? {
            enabled ? SIPHistorySettings(keep: keep, maximumAge: maxAge, maximumBody: maxBody) : nil
        }

        private enum CodingKeys: CodingKey { case keep, maxAge, maxBody }
    }

    /// `register.retry:`'s defaults: the backoff after a failed registration.
    enum Retry: BackoffPolicy {
        static let initialDelay: Duration = .seconds(1)
        static let maxDelay: Duration = .seconds(60)
    }

    /// `timers:`, RFC 3261's T1, T2 and T4.
    struct TimersSection: Decodable {
        var timers: SIPTimers

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let rfc3261 = SIPTimers()
            timers = SIPTimers(
                t1: try container.decode(.t1, default: rfc3261.t1), t2: try container.decode(.t2, default: rfc3261.t2),
                t4: try container.decode(.t4, default: rfc3261.t4))
        }

        private enum CodingKeys: CodingKey { case t1, t2, t4 }
    }

    /// `receive:`: what incoming MESSAGEs are taken and how they are answered.
    struct ReceiveSection: Decodable {
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
    }

    /// `send:`: the defaults of the `send` port.
    struct SendSection: Decodable {
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
}

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

/// A SIP address of record: `sip:alice@example.org`.
enum SIPAddressRule: ConfigurationStringRule {
    static let placeholder = "sip:user@example.org"

    static func checked(_ text: String) throws(PluginError) -> String {
        guard text.lowercased().hasPrefix("sip:") || text.lowercased().hasPrefix("sips:"), text.contains("@") else {
            throw PluginError("'\(text)' is not a SIP address like sip:alice@example.org")
        }
        return text
    }
}

/// A SIP URI naming where to send (`sip:proxy.example.org;transport=tcp`).
enum SIPURIRule: ConfigurationStringRule {
    static let placeholder = "sip:example.org"

    static func checked(_ text: String) throws(PluginError) -> String {
        _ = try SIPTarget(uri: text, fallback: .udp)
        return text
    }
}

/// A section that may also be written `true` (on, with its defaults) or `false` (off), as
/// `register:` and `history:` are.
protocol SwitchableSection: ConfigurationValue {
    /// Whether the section is on.
    var enabled: Bool { get set }
    /// The section on, with its defaults.
    init()
    /// Reads a section written out (on).
    init(settingsFrom decoder: any Decoder) throws
}

extension SwitchableSection {
    /// The section off.
    static var off: Self {
        var section = Self()
        section.enabled = false
        return section
    }

    init(from decoder: any Decoder) throws {
        if let flag = try ConfigurationJSON(from: decoder).value.boolValue {
            self.init()
            enabled = flag
            return
        }
        try self.init(settingsFrom: decoder)
    }

    static var configurationSchema: JSONValue { ConfigurationSchema.of(Self.self, orAlso: "boolean") }
    static var schemaPlaceholder: Self { Self() }
}
