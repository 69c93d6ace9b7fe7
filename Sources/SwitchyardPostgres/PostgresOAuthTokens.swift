import Foundation
import NIOCore
import PostgresNIO
import SwitchyardStore

/// OAuth connections' sealed tokens in PostgreSQL (table `oauth_connections`). Each change
/// commits with a NOTIFY on ``channel`` (the connection's name): the other routers read and open
/// the tokens again, so a connection made, refreshed or removed on one router is the same on
/// all. Holds only the session it asks on.
struct PostgresOAuthTokens: PostgresTable {
    /// The channel token changes are announced on; the payload is the connection's name.
    static let channel = "switchyard_oauth"

    let session: PostgresSession

    func oauthTokens(of name: String) throws(StoreError) -> [UInt8]? {
        try session.exchange { run in
            try run("SELECT sealed FROM oauth_connections WHERE name = \(name)").first.map {
                Array(buffer: try $0.decode(ByteBuffer.self))
            }
        }
    }

    func setOAuthTokens(of name: String, sealed: [UInt8]) throws(StoreError) {
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        try session.inTransaction { run in
            _ = try run(
                """
                INSERT INTO oauth_connections(name, sealed, changed_at) VALUES(\(name), \(ByteBuffer(bytes: sealed)), \(now))
                ON CONFLICT (name) DO UPDATE SET sealed = EXCLUDED.sealed, changed_at = EXCLUDED.changed_at
                """)
            _ = try run("SELECT pg_notify(\(Self.channel), \(name))")
        }
    }

    func replaceOAuthTokens(of name: String, expected: [UInt8], with sealed: [UInt8]?) throws(StoreError) -> Bool {
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        return try session.inTransaction { run in
            let changed =
                if let sealed {
                    try run(
                        """
                        UPDATE oauth_connections SET sealed = \(ByteBuffer(bytes: sealed)), changed_at = \(now)
                        WHERE name = \(name) AND sealed = \(ByteBuffer(bytes: expected)) RETURNING name
                        """)
                } else {
                    try run("DELETE FROM oauth_connections WHERE name = \(name) AND sealed = \(ByteBuffer(bytes: expected)) RETURNING name")
                }
            guard changed.count == 1 else { return false }
            _ = try run("SELECT pg_notify(\(Self.channel), \(name))")
            return true
        }
    }

    func removeOAuthTokens(of name: String) throws(StoreError) {
        try session.inTransaction { run in
            _ = try run("DELETE FROM oauth_connections WHERE name = \(name)")
            _ = try run("SELECT pg_notify(\(Self.channel), \(name))")
        }
    }
}
