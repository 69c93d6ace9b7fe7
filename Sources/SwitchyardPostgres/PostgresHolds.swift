import Logging
import NIOCore
import PostgresNIO
import SwitchyardStore

/// Holds on listeners as PostgreSQL session advisory locks: each hold has a connection of its
/// own, which asks for the lock and waits in the server (no polling) until the holder's
/// session ends. A holder killed outright loses its connection, and so the lock, at once. A
/// holder (or a waiter) cut off by the network is noticed by the server's TCP keepalives, which
/// each hold connection sets for its own session: its backend ends, and its lock is free,
/// within about 11 s.
///
/// Apart from the store's session because a hold never uses it: it owns the configuration its
/// connections are made with, which differs from the session's in what the server is told.
struct PostgresHolds {
    /// How each hold's connection is made.
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let location: String

    /// Holds on the database `session` talks to, logged to the session's logger.
    init(session: PostgresSession) {
        var configuration = session.configuration
        // Waiting for the lock is one statement that lasts until the holder lets go. The
        // server probes the client after 5 s of silence, every 2 s, 3 times (and gives up on
        // unacknowledged sends after 10 s): a dead peer's session, and lock, end in ~11 s.
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", "0"), ("application_name", "switchyard hold"), ("tcp_keepalives_idle", "5"),
            ("tcp_keepalives_interval", "2"), ("tcp_keepalives_count", "3"), ("tcp_user_timeout", "10000"),
        ]
        self.configuration = configuration
        logger = session.logger
        location = session.location
    }

    /// Claims `name`: `granted` when this router holds it, `lost` if it then loses it.
    func hold(_ name: String, granted: @escaping @Sendable () -> Void, lost: @escaping @Sendable () -> Void) -> any ListenerHold {
        let hold = PostgresListenerHold(
            name: name, key: Self.holdKey(of: name), configuration: configuration, eventLoop: PostgresSession.eventLoops.next(),
            logger: logger, location: location, granted: granted, lost: lost)
        hold.connect()
        return hold
    }

    /// The advisory lock of `name`: FNV-1a (64 bits) of `switchyard hold:NAME`, so that every
    /// build and every router computes the same key.
    static func holdKey(of name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "switchyard hold:\(name)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return Int64(bitPattern: hash)
    }
}
