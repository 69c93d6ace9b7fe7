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
        /// Connections open at once; more are answered 503 and closed.
        var maximumConnections: Int
        /// How long a client may take to send a request's head, and then its body.
        var headerTimeout: Duration
        var bodyTimeout: Duration
        /// How long a connection may sit without a byte either way.
        var idleTimeout: Duration
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
                acknowledgeTimeout: try PluginError.duration(config["ack_timeout"], "ack_timeout", default: .seconds(30)),
                maximumConnections: config["max_connections"]?.intValue ?? 256,
                headerTimeout: try Self.timeout(config["header_timeout"], "header_timeout", default: .seconds(10)),
                bodyTimeout: try Self.timeout(config["body_timeout"], "body_timeout", default: .seconds(30)),
                idleTimeout: try Self.timeout(config["idle_timeout"], "idle_timeout", default: .seconds(60)))
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

    /// A timeout setting: more than zero (a zero timeout would close every connection).
    static func timeout(_ value: JSONValue?, _ name: String, default fallback: Duration) throws -> Duration {
        let timeout = try PluginError.duration(value, name, default: fallback)
        guard timeout > .zero else { throw PluginError("\(name) must be longer than 0, like 10s") }
        return timeout
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
