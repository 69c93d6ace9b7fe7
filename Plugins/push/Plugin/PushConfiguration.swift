import Foundation
import PushMessage
import SwitchyardCore
import SwitchyardPluginKit

/// One push instance's settings, read from its YAML configuration (already checked against
/// the manifest's schema; the checks here are those a schema cannot express).
struct PushConfiguration: Sendable {
    /// The webhook: where it listens and whom it lets in.
    struct Webhook: Sendable {
        var host: String
        var port: Int
        var certificateFile: String?
        var keyFile: String?
        var bearerToken: String?
        var signature: WebhookSignature?
        /// Project ids the FCM-shaped endpoint accepts; empty accepts any.
        var projects: Set<String>
        var maximumBodySize: Int
        /// How long a request waits for the router to take its message before answering 503.
        var acknowledgeTimeout: Duration
    }

    /// The FCM HTTP v1 sender.
    struct Sender: Sendable {
        var serviceAccountFile: String
        var project: String?
        var baseURL: String
        var tokenURL: String?
        var audience: String
        var requestTimeout: Duration
        var maximumInFlight: Int
        var attempts: Int
        var initialBackoff: Duration
        var maximumBackoff: Duration
        var validateOnly: Bool
    }

    var webhook: Webhook?
    var sender: Sender?
    var registryPath: String?

    init(config: JSONValue) throws {
        registryPath = config["registry"]?.stringValue
        if let listen = config["listen"]?.stringValue {
            let (host, port) = try Self.hostAndPort(listen)
            let auth = config["auth"]
            let tolerance = try PluginError.duration(auth?["tolerance"], "auth.tolerance", default: .seconds(300))
            var signature: WebhookSignature?
            if let secret = auth?["signing_secret"]?.stringValue {
                do {
                    signature = try WebhookSignature(secret: secret, tolerance: tolerance)
                } catch {
                    throw PluginError("auth.signing_secret: \(error)")
                }
            }
            let bearer = auth?["bearer_token"]?.stringValue
            if bearer?.isEmpty == true { throw PluginError("auth.bearer_token is empty (an unset ${VAR}?)") }
            let tls = try config["tls"].map(TLSSettings.init)
            let certificate = tls?.certificateFile
            let key = tls?.keyFile
            let bodyLimit = config["max_body"].map { ByteSizeText.bytes($0) } ?? 65536
            guard let bodyLimit, bodyLimit >= 4096 else { throw PluginError("max_body must be a size of at least 4KiB, like 64KiB") }
            webhook = Webhook(
                host: host, port: port, certificateFile: certificate, keyFile: key, bearerToken: bearer, signature: signature,
                projects: Set((config["projects"]?.arrayValue ?? []).compactMap(\.stringValue)),
                maximumBodySize: bodyLimit,
                acknowledgeTimeout: try PluginError.duration(config["ack_timeout"], "ack_timeout", default: .seconds(30)))
        }
        if let fcm = config["fcm"] {
            guard let account = fcm["service_account"]?.stringValue else { throw PluginError("fcm.service_account is required") }
            let retry = fcm["retry"]
            sender = Sender(
                serviceAccountFile: account,
                project: fcm["project"]?.stringValue,
                baseURL: String((fcm["base_url"]?.stringValue ?? "https://fcm.googleapis.com").trimmingSuffix("/")),
                tokenURL: fcm["token_url"]?.stringValue,
                audience: fcm["audience"]?.stringValue ?? ServiceAccount.googleTokenAudience,
                requestTimeout: try PluginError.duration(fcm["timeout"], "fcm.timeout", default: .seconds(10)),
                maximumInFlight: fcm["max_in_flight"]?.intValue ?? 64,
                attempts: retry?["attempts"]?.intValue ?? 5,
                initialBackoff: try PluginError.duration(retry?["backoff"], "fcm.retry.backoff", default: .milliseconds(500)),
                maximumBackoff: try PluginError.duration(retry?["max_backoff"], "fcm.retry.max_backoff", default: .seconds(30)),
                validateOnly: fcm["validate_only"]?.boolValue ?? false)
        }
        guard webhook != nil || sender != nil else {
            throw PluginError("nothing to do: set listen (the webhook), fcm (the sender), or both")
        }
    }

    static func hostAndPort(_ listen: String) throws -> (String, Int) {
        let host: Substring
        let port: Substring
        if listen.hasPrefix("["), let close = listen.firstIndex(of: "]") {
            host = listen[listen.index(after: listen.startIndex)..<close]
            port = listen[listen.index(after: close)...].dropFirst()
        } else if let colon = listen.lastIndex(of: ":") {
            host = listen[..<colon]
            port = listen[listen.index(after: colon)...]
        } else {
            throw PluginError("listen '\(listen)' is not HOST:PORT")
        }
        guard !host.isEmpty, let number = Int(port), (0...65535).contains(number) else {
            throw PluginError("listen '\(listen)' is not HOST:PORT (port 0 picks a free one)")
        }
        return (String(host), number)
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: Character) -> Substring {
        var text = self[...]
        while text.last == suffix { text = text.dropLast() }
        return text
    }
}
