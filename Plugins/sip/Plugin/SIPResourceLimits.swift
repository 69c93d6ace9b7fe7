import SIPCodec
import SwitchyardConnectionGuard
import SwitchyardCore
import SwitchyardPluginKit

/// What one sip instance lets peers make it hold: the `limits:` section (and `max_body_bytes`).
struct SIPResourceLimits: Sendable {
    /// What the parser takes: header, body and whole-message sizes.
    var parser: SIPLimits
    /// Server transactions at once; a new request past it is answered 503 with Retry-After.
    var serverTransactions: Int
    /// Accepted TCP (and, separately, TLS) connections at once: at the cap, the oldest one in
    /// the middle of a message (or that has sent none) is closed to make room, else the new one.
    var connectionsPerListener: Int
    /// Accepted connections at once from one address, per listener.
    var connectionsPerPeer: Int
    /// How long a message on an accepted connection may take from its first byte to its last.
    var messageTimeout: Duration
    /// An accepted connection that sends nothing for this long is closed.
    var idleTimeout: Duration
    /// An accepted TLS connection that has not finished its handshake by then is closed.
    var tlsHandshakeTimeout: Duration
    /// How many answered MESSAGEs are remembered for duplicate detection (the oldest go first).
    var answeredMemory: Int { serverTransactions * 4 }

    /// The largest size setting taken (16 MiB): a sip peer has no business sending more.
    static let maximumBytes = 16 << 20

    /// The `limits:` section as written.
    struct Section: Decodable {
        var maxMessageBytes: Int
        var maxServerTransactions: Int
        var maxConnections: Int
        var maxConnectionsPerPeer: Int?
        var idleTimeout: Duration
        var messageTimeout: Duration
        var tlsHandshakeTimeout: Duration

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            maxMessageBytes = try container.decode(.maxMessageBytes, default: 81920, in: 1...maximumBytes)
            maxServerTransactions = try container.decode(.maxServerTransactions, default: 1024, in: 1...(1 << 20))
            maxConnections = try container.decode(.maxConnections, default: 256, in: 1...(1 << 20))
            maxConnectionsPerPeer = try container.decodeIfPresent(.maxConnectionsPerPeer, in: 1...(1 << 20))
            // As Kamailio's tcp_msg_read_timeout: a message trickled byte by byte cannot hold a slot.
            messageTimeout = try container.decode(.messageTimeout, default: .seconds(20), atLeast: .nanoseconds(1))
            idleTimeout = try container.decode(.idleTimeout, default: .seconds(120), atLeast: .nanoseconds(1))
            tlsHandshakeTimeout = try container.decode(.tlsHandshakeTimeout, default: .seconds(10), atLeast: .nanoseconds(1))
        }

        private enum CodingKeys: CodingKey {
            case maxMessageBytes, maxServerTransactions, maxConnections, maxConnectionsPerPeer, idleTimeout, messageTimeout
            case tlsHandshakeTimeout
        }
    }

    /// The limits of `max_body_bytes` and the `limits:` section.
    init(bodyBytes: Int, section: Section) {
        parser = SIPLimits(bodyBytes: bodyBytes, messageBytes: section.maxMessageBytes)
        serverTransactions = section.maxServerTransactions
        connectionsPerListener = section.maxConnections
        connectionsPerPeer = section.maxConnectionsPerPeer ?? ConnectionSlots.defaultPerPeer(of: section.maxConnections)
        messageTimeout = section.messageTimeout
        idleTimeout = section.idleTimeout
        tlsHandshakeTimeout = section.tlsHandshakeTimeout
    }
}
