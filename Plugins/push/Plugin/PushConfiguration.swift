import Foundation
import PushMessage
import SwitchyardCore
import SwitchyardPluginKit

/// One push instance's settings. The manifest's schema is derived from this type; the webhook's
/// and the sender's sections are read in PushConfiguration+Sections.swift.
struct PushConfiguration: PluginConfiguration {
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
        /// Connections open at once from one address (default an eighth of `maximumConnections`).
        var maximumPerPeer: Int?
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

    static let descriptions = [
        "/listen": "HOST:PORT of the webhook (port 0 picks a free one)",
        "/max_connections": "open webhook connections (default 256); at the cap a connection still waiting for its request head makes room",
        "/max_connections_per_peer": "open webhook connections from one address (default an eighth of max_connections)",
        "/header_timeout": "time to send a request head (default 10s)",
        "/body_timeout": "time to send a request body (default 30s)",
        "/idle_timeout": "a connection with no traffic closes (default 60s)",
        "/registry": "SQLite file of the FCM tokens apps registered",
        "/fcm/service_account": "a service-account key file (JSON)",
    ]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        registryPath = try container.decodeIfPresent(ConfigurationPath.self, forKey: .registry)?.path
        if let listen = try container.decodeIfPresent(HostPort.self, forKey: .listen) {
            let tls = try container.decodeIfPresent(WebhookTLS.self, forKey: .tls)
            let auth = try container.decodeSection(Auth.self, forKey: .auth)
            // A zero timeout would close every connection.
            let positive = Duration.nanoseconds(1)
            webhook = Webhook(
                host: listen.host, port: listen.port, certificateFile: tls?.certFile.path, keyFile: tls?.keyFile.path,
                bearerToken: auth.bearerToken, signature: auth.signature,
                projects: Set(try container.decode(.projects, default: [String]())),
                maximumBodySize: try container.decode(.maxBody, defaultBytes: 65536, atLeastBytes: 4096),
                acknowledgeTimeout: try container.decode(.ackTimeout, default: .seconds(30)),
                maximumConnections: try container.decode(.maxConnections, default: 256, atLeast: 1),
                maximumPerPeer: try container.decodeIfPresent(.maxConnectionsPerPeer, in: 1...Int.max),
                headerTimeout: try container.decode(.headerTimeout, default: .seconds(10), atLeast: positive),
                bodyTimeout: try container.decode(.bodyTimeout, default: .seconds(30), atLeast: positive),
                idleTimeout: try container.decode(.idleTimeout, default: .seconds(60), atLeast: positive))
        }
        sender = try container.decodeIfPresent(FCMSection.self, forKey: .fcm)?.sender
    }

    func validate() throws {
        guard webhook != nil || sender != nil else {
            throw ConfigurationError(at: "", "nothing to do: set listen (the webhook), fcm (the sender), or both")
        }
    }

    private enum CodingKeys: CodingKey {
        case registry, listen, tls, auth, projects, maxBody, ackTimeout, maxConnections, maxConnectionsPerPeer, headerTimeout, bodyTimeout
        case idleTimeout, fcm
    }
}
