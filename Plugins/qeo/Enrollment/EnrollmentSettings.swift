public import SwitchyardPluginKit

/// A qeo instance's `enroll:` section: the realm's HTTPS endpoint, where a device exchanges a
/// one-time code for its credentials and an enrolled device renews its permissions.
public struct EnrollmentSettings: Decodable, Sendable {
    /// Where the endpoint listens.
    public var listen: HostPort
    /// The realm directory (`switchyard qeo realm init`), which holds the CA's key: only the
    /// router that runs the endpoint needs it.
    public var realm: String
    /// Names the endpoint's certificate carries besides the listen host (`DNS:…`, `IP:…` or a
    /// bare name): how devices reach it.
    public var names: [String]
    /// How long the permissions of an enrolled device stay valid; it renews them before.
    public var lease: Duration
    /// Failed attempts from one address within `window` after which it waits for the window.
    public var failures: Int
    /// See ``failures``.
    public var window: Duration
    /// Open connections at most; slow clients are cut off after these.
    public var maximumConnections: Int
    /// Connections open at once from one address (default an eighth of `maximumConnections`).
    public var maximumPerPeer: Int?
    public var headerTimeout: Duration
    public var bodyTimeout: Duration

    /// The largest request body the endpoint reads (a code and a certificate request).
    public static let maximumBody = 16 * 1024

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        listen = try container.decode(HostPort.self, forKey: .listen)
        realm = try container.decode(ConfigurationPath.self, forKey: .realm).path
        names = try container.decode(.names, default: [String]())
        lease = try container.decode(.lease, default: .seconds(3600), atLeast: .seconds(10), atMost: .seconds(3650 * 86400))
        let throttle = try container.decodeSection(Throttle.self, forKey: .throttle)
        (failures, window) = (throttle.failures, throttle.window)
        maximumConnections = try container.decode(.maxConnections, default: 64, atLeast: 1)
        maximumPerPeer = try container.decodeIfPresent(.maxConnectionsPerPeer, in: 1...Int.max)
        headerTimeout = try container.decode(.headerTimeout, default: .seconds(10), atLeast: .milliseconds(1))
        bodyTimeout = try container.decode(.bodyTimeout, default: .seconds(10), atLeast: .milliseconds(1))
    }

    private enum CodingKeys: CodingKey {
        case listen, realm, names, lease, throttle, maxConnections, maxConnectionsPerPeer, headerTimeout, bodyTimeout
    }

    /// `throttle:`: how many failures one address may have in a window.
    struct Throttle: Decodable {
        var failures: Int
        var window: Duration

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            failures = try container.decode(.failures, default: 5, atLeast: 1)
            window = try container.decode(.window, default: .seconds(60), atLeast: .seconds(1))
        }

        private enum CodingKeys: CodingKey { case failures, window }
    }

    /// The endpoint certificate's subjectAltName: the listen host, the configured names, and
    /// the loopback names when it listens on every address.
    var alternativeNames: String {
        var names = [listen.host] + self.names
        if ["0.0.0.0", "::"].contains(listen.host) { names += ["127.0.0.1", "::1", "localhost"] }
        return names.map { name in
            if name.hasPrefix("DNS:") || name.hasPrefix("IP:") { return name }
            return name.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" }) && name.contains(where: { $0 == "." || $0 == ":" })
                ? "IP:\(name)" : "DNS:\(name)"
        }.joined(separator: ",")
    }
}
