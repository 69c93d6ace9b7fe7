import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// What one sip instance lets peers make it hold: the `limits:` section (and `max_body_bytes`).
struct SIPResourceLimits: Sendable {
    /// What the parser takes: header, body and whole-message sizes.
    var parser: SIPLimits
    /// Server transactions at once; a new request past it is answered 503 with Retry-After.
    var serverTransactions: Int
    /// Accepted TCP (and, separately, TLS) connections at once; more are closed on accept.
    var connectionsPerListener: Int
    /// An accepted connection that sends nothing for this long is closed.
    var idleTimeout: Duration
    /// An accepted TLS connection that has not finished its handshake by then is closed.
    var tlsHandshakeTimeout: Duration
    /// How many answered MESSAGEs are remembered for duplicate detection (the oldest go first).
    var answeredMemory: Int { serverTransactions * 4 }

    /// The largest size setting taken (16 MiB): a sip peer has no business sending more.
    static let maximumBytes = 16 << 20

    init(config: JSONValue) throws(PluginError) {
        let section = config["limits"]
        parser = SIPLimits(
            bodyBytes: try Self.count(config["max_body_bytes"], "max_body_bytes", default: 65536, maximum: Self.maximumBytes),
            messageBytes: try Self.count(
                section?["max_message_bytes"], "limits.max_message_bytes", default: 81920, maximum: Self.maximumBytes))
        serverTransactions = try Self.count(
            section?["max_server_transactions"], "limits.max_server_transactions", default: 1024, maximum: 1 << 20)
        connectionsPerListener = try Self.count(section?["max_connections"], "limits.max_connections", default: 256, maximum: 1 << 20)
        idleTimeout = try PluginError.duration(section?["idle_timeout"], "limits.idle_timeout", default: .seconds(120))
        tlsHandshakeTimeout = try PluginError.duration(
            section?["tls_handshake_timeout"], "limits.tls_handshake_timeout", default: .seconds(10))
        guard idleTimeout > .zero, tlsHandshakeTimeout > .zero else {
            throw PluginError("limits.idle_timeout and limits.tls_handshake_timeout must be positive")
        }
    }

    private static func count(_ value: JSONValue?, _ name: String, default fallback: Int, maximum: Int) throws(PluginError) -> Int {
        guard let value else { return fallback }
        guard let number = value.intValue, (1...maximum).contains(number) else {
            throw PluginError("\(name): '\(value.text)' is not a whole number in 1-\(maximum)")
        }
        return number
    }

    /// The schema of the `limits:` section.
    static let schema: JSONValue = [
        "type": "object", "additionalProperties": false,
        "properties": [
            "max_message_bytes": ["type": "integer", "minimum": 1, "maximum": .int(maximumBytes)],
            "max_server_transactions": ["type": "integer", "minimum": 1],
            "max_connections": ["type": "integer", "minimum": 1],
            "idle_timeout": ["type": ["string", "integer"]],
            "tls_handshake_timeout": ["type": ["string", "integer"]],
        ],
    ]
}
