import PushMessage
import SwitchyardCore
import SwitchyardPluginKit

extension String {
    fileprivate func trimmingSuffix(_ suffix: Character) -> Substring {
        var text = self[...]
        while text.last == suffix { text = text.dropLast() }
        return text
    }
}

extension PushConfiguration {
    /// The webhook's `tls:`: its certificate and key.
    struct WebhookTLS: Decodable {
        var certFile: ConfigurationPath
        var keyFile: ConfigurationPath
    }

    /// `auth:`: who may call the webhook.
    struct Auth: Decodable {
        var bearerToken: String?
        var signature: WebhookSignature?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            bearerToken = try container.decodeIfPresent(ConfigurationSecret.self, forKey: .bearerToken)?.value
            let secret = try container.decodeIfPresent(ConfigurationSecret.self, forKey: .signingSecret)?.value
            let tolerance = try container.decode(.tolerance, default: .seconds(300))
            guard !decoder.isDerivingConfigurationSchema else { return }
            if bearerToken?.isEmpty == true {
                throw ConfigurationError(codingPath: decoder.codingPath + [CodingKeys.bearerToken], "is empty (an unset ${VAR}?)")
            }
            do {
                signature = try secret.map { try WebhookSignature(secret: $0, tolerance: tolerance) }
            } catch {
                throw ConfigurationError(codingPath: decoder.codingPath + [CodingKeys.signingSecret], "\(error)")
            }
        }

        private enum CodingKeys: CodingKey { case bearerToken, signingSecret, tolerance }
    }

    /// `fcm:`: the FCM HTTP v1 sender.
    struct FCMSection: Decodable {
        var sender: Sender

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let retry = try container.decodeSection(Retry.self, forKey: .retry)
            sender = Sender(
                serviceAccountFile: try container.decode(ConfigurationPath.self, forKey: .serviceAccount).path,
                project: try container.decodeIfPresent(String.self, forKey: .project),
                baseURL: String(
                    (try container.decodeIfPresent(.baseURL, matching: "^https?://") ?? "https://fcm.googleapis.com").trimmingSuffix("/")),
                tokenURL: try container.decodeIfPresent(.tokenURL, matching: "^https?://"),
                audience: try container.decode(.audience, default: ServiceAccount.googleTokenAudience),
                requestTimeout: try container.decode(.timeout, default: .seconds(10)),
                maximumInFlight: try container.decode(.maxInFlight, default: 64, atLeast: 1),
                attempts: retry.attempts, initialBackoff: retry.backoff, maximumBackoff: retry.maxBackoff,
                validateOnly: try container.decode(.validateOnly, default: false))
        }

        private enum CodingKeys: String, CodingKey {
            case serviceAccount, project, baseURL = "base_url", tokenURL = "token_url", audience, timeout, maxInFlight, validateOnly, retry
        }
    }

    /// `fcm.retry:`: how often and how patiently a send is retried.
    struct Retry: Decodable {
        var attempts: Int
        var backoff: Duration
        var maxBackoff: Duration

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            attempts = try container.decode(.attempts, default: 5, atLeast: 1)
            backoff = try container.decode(.backoff, default: .milliseconds(500))
            maxBackoff = try container.decode(.maxBackoff, default: .seconds(30))
        }

        private enum CodingKeys: CodingKey { case attempts, backoff, maxBackoff }
    }
}
