import SwitchyardCore

/// The `tls:` section plugins share: a CA to verify the far end with, an own certificate and
/// key (both or neither), the name to expect, and whether to verify at all.
///
/// ```yaml
/// tls: { ca_file: ca.pem, cert_file: client.pem, key_file: client.key, server_name: broker.example.org, verify: true }
/// ```
public struct TLSSettings: Decodable, Sendable, Equatable {
    /// PEM file of the CA that signs the far end's certificate; the system's roots when nil.
    public var caFile: String?
    /// PEM file of this end's certificate (a client certificate, or a listener's).
    public var certificateFile: String?
    /// PEM file of that certificate's private key.
    public var keyFile: String?
    /// The host name expected in the far end's certificate (SNI); the connection's host when nil.
    public var serverName: String?
    /// Whether the far end's certificate is checked (default true).
    public var verify: Bool

    private enum CodingKeys: String, CodingKey {
        case caFile = "ca_file", certificateFile = "cert_file", keyFile = "key_file", serverName = "server_name", verify
    }

    /// Reads a `tls:` section; `cert_file` and `key_file` must come together.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        caFile = try container.decodeIfPresent(ConfigurationPath.self, forKey: .caFile)?.path
        certificateFile = try container.decodeIfPresent(ConfigurationPath.self, forKey: .certificateFile)?.path
        keyFile = try container.decodeIfPresent(ConfigurationPath.self, forKey: .keyFile)?.path
        serverName = try container.decodeIfPresent(String.self, forKey: .serverName)
        verify = try container.decode(.verify, default: true)
        guard (certificateFile == nil) == (keyFile == nil) else {
            throw ConfigurationError(decoder, "give both cert_file and key_file, or neither")
        }
    }

    /// The settings of an absent `tls:` section: the system's roots, no certificate of this end's,
    /// verification on.
    public init() { verify = true }

    /// The name to send as SNI and check the certificate against when connecting to `host`:
    /// `server_name`, else the host itself unless it is an IP literal (SNI carries names only).
    public func serverName(connectingTo host: String) -> String? {
        serverName ?? (Self.isIPAddress(host) ? nil : host)
    }

    /// Whether `host` is an IPv4 or IPv6 literal rather than a name.
    public static func isIPAddress(_ host: String) -> Bool {
        host.contains(":") || host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil }
    }
}
