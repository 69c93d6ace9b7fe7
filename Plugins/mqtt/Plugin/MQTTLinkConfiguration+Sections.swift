import MQTTCodec
import SwitchyardCore
import SwitchyardPluginKit

/// The sections of an mqtt instance's configuration and its checked values, as written.
extension MQTTLinkConfiguration {
    /// One entry of `subscriptions:`.
    struct SubscriptionEntry: Decodable {
        var topic: String
        var qos: QoSSetting
        var noLocal: Bool?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            topic = try container.decode(CheckedString<TopicFilter>.self, forKey: .topic).text
            qos = try container.decode(.qos, default: QoSSetting.atMostOnce)
            noLocal = try container.decodeIfPresent(Bool.self, forKey: .noLocal)
        }

        private enum CodingKeys: CodingKey { case topic, qos, noLocal }
    }

    /// `share:`, `true` (the group is derived from the instance) or a group name; `false` is off.
    struct ShareSetting: ConfigurationValue {
        /// The group; empty for one to derive; nil when off.
        var group: String?

        init(from decoder: any Decoder) throws {
            let value = try ConfigurationJSON(from: decoder).value
            if let flag = value.boolValue {
                group = flag ? "" : nil
                return
            }
            guard let name = value.stringValue, !name.isEmpty, name.utf8.count <= 128,
                !name.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" || $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true })
            else {
                throw ConfigurationError(decoder, "share must be true, false or a group name without /, + or # (at most 128 bytes)")
            }
            group = name
        }

        static let configurationSchema: JSONValue = ["type": ["boolean", "string"]]
        static var schemaPlaceholder: Self { Self(group: nil) }

        private init(group: String?) { self.group = group }
    }

    /// `publish:`: what the `publish` port uses when an envelope does not say.
    struct PublishSection: Decodable {
        var defaults: PublishDefaults

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            defaults = PublishDefaults(
                topic: try container.decodeIfPresent(CheckedString<TopicName>.self, forKey: .topic)?.text,
                qos: try container.decode(.qos, default: QoSSetting.atMostOnce).qos,
                retain: try container.decode(.retain, default: false))
        }

        private enum CodingKeys: CodingKey { case topic, qos, retain }
    }

    /// `will:`: the message the broker publishes when the link dies.
    struct WillSection: Decodable {
        var will: MQTTWill

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            will = MQTTWill(
                topic: try container.decodeNonEmpty(.topic),
                payload: Array(try container.decode(.payload, default: "").utf8),
                qos: try container.decode(.qos, default: QoSSetting.atMostOnce).qos,
                retain: try container.decode(.retain, default: false))
        }

        private enum CodingKeys: CodingKey { case topic, payload, qos, retain }
    }

    /// `reconnect:`'s defaults: the backoff between connection attempts, at most a day so the
    /// backoff arithmetic stays far from overflowing.
    enum Reconnect: BackoffPolicy {
        static let initialDelay: Duration = .milliseconds(500)
        static let maxDelay: Duration = .seconds(30)
        static let longest: Duration? = .seconds(86_400)
    }

    /// `url:`, `mqtt://host[:port]` or `mqtts://host[:port]`, without credentials.
    struct BrokerURL: ConfigurationValue {
        var host: String
        var port: Int
        var secure: Bool

        private init(host: String, port: Int, secure: Bool) { (self.host, self.port, self.secure) = (host, port, secure) }

        init(from decoder: any Decoder) throws {
            let url = try decoder.singleValueContainer().decode(String.self)
            let rest: Substring
            if url.hasPrefix("mqtts://") {
                (secure, rest) = (true, url.dropFirst("mqtts://".count))
            } else if url.hasPrefix("mqtt://") {
                (secure, rest) = (false, url.dropFirst("mqtt://".count))
            } else {
                throw ConfigurationError(decoder, "must start with mqtt:// or mqtts://")
            }
            let authority = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? rest
            // Credentials in the URL would end up in every connection error; they have their own
            // keys. The message does not repeat the URL, so it does not repeat the password.
            guard !authority.contains("@") else {
                throw ConfigurationError(decoder, "must not carry credentials (user@ or user:password@): use username and password")
            }
            let defaultPort = secure ? 8883 : 1883
            if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                host = String(authority[authority.index(after: authority.startIndex)..<close])
                let after = authority[authority.index(after: close)...]
                port = after.hasPrefix(":") ? Int(after.dropFirst()) ?? -1 : defaultPort
            } else if let colon = authority.lastIndex(of: ":") {
                host = String(authority[..<colon])
                port = Int(authority[authority.index(after: colon)...]) ?? -1
            } else {
                (host, port) = (String(authority), defaultPort)
            }
            guard !host.isEmpty, (1...65535).contains(port) else {
                throw ConfigurationError(decoder, "'\(url)' has no valid host and port")
            }
        }

        static let configurationSchema: JSONValue = ["type": "string", "pattern": "^mqtts?://"]
        static var schemaPlaceholder: Self { Self(host: "127.0.0.1", port: 1883, secure: false) }
    }

    /// `version:`, 5 (or "5") or "3.1.1".
    struct VersionSetting: ConfigurationValue {
        var version: MQTTVersion

        static let v5 = Self(version: .v5)

        private init(version: MQTTVersion) { self.version = version }

        init(from decoder: any Decoder) throws {
            switch try ConfigurationJSON(from: decoder).value {
            case .int(5), .string("5"): version = .v5
            case .string("3.1.1"): version = .v3_1_1
            default: throw ConfigurationError(decoder, "must be 5 or \"3.1.1\"")
            }
        }

        static let configurationSchema: JSONValue = ["enum": [5, "5", "3.1.1"]]
        static var schemaPlaceholder: Self { .v5 }
    }

    /// A quality of service: 0, 1 or 2.
    struct QoSSetting: ConfigurationValue {
        var qos: MQTTQoS

        static let atMostOnce = Self(qos: .atMostOnce)

        private init(qos: MQTTQoS) { self.qos = qos }

        init(from decoder: any Decoder) throws {
            let number = try decoder.singleValueContainer().decode(Int.self)
            guard (0...2).contains(number), let qos = MQTTQoS(rawValue: UInt8(number)) else {
                throw ConfigurationError(decoder, "must be 0, 1 or 2")
            }
            self.qos = qos
        }

        static let configurationSchema: JSONValue = ["type": "integer", "minimum": 0, "maximum": 2]
        static var schemaPlaceholder: Self { .atMostOnce }
    }

    /// A topic filter, as subscriptions take (wildcards allowed).
    enum TopicFilter: ConfigurationStringRule {
        static let placeholder = "switchyard/#"
        static let schema: JSONValue = ["type": "string", "minLength": 1]

        static func checked(_ text: String) throws(PluginError) -> String {
            if let problem = MQTTTopic.problem(withTopicFilter: text) { throw PluginError("'\(text)': \(problem)") }
            return text
        }
    }

    /// A topic name, as publishes take.
    enum TopicName: ConfigurationStringRule {
        static let placeholder = "switchyard"
        static let schema: JSONValue = ["type": "string", "minLength": 1]

        static func checked(_ text: String) throws(PluginError) -> String {
            if let problem = MQTTTopic.problem(withTopicName: text) { throw PluginError("'\(text)': \(problem)") }
            return text
        }
    }
}
