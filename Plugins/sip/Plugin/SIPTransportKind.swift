import SwitchyardPluginKit

/// A SIP transport.
enum SIPTransportKind: String, Sendable, CaseIterable, ConfigurationEnum {
    case udp, tcp, tls

    /// The Via transport token.
    var viaName: String { rawValue.uppercased() }
    /// Whether the transport delivers reliably (no retransmission timers, RFC 3261 §17).
    var isReliable: Bool { self != .udp }
    /// The default port of the transport (5060, or 5061 for TLS).
    var defaultPort: Int { self == .tls ? 5061 : 5060 }
}
