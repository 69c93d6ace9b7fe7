internal import SwitchyardCore
internal import SwitchyardSQLite
public import SwitchyardStore

/// OAuth 2.0 connections' tokens, in the spool's database file. The tokens are stored
/// sealed (the router encrypts them before they get here, see `OAuthVault`): a copy of the
/// database alone gives nobody a provider's refresh token.
extension SQLiteStore: OAuthTokenStore {
    static let createOAuthTables = """
        CREATE TABLE IF NOT EXISTS oauth_connections(
            name TEXT PRIMARY KEY,
            sealed BLOB NOT NULL,
            changed_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        """

    public func oauthTokens(of name: String) throws(StoreError) -> [UInt8]? {
        try file.storing { database throws(SQLiteError) in
            try database.prepare("SELECT sealed FROM oauth_connections WHERE name = ?").rows([.text(name)]) { $0.blob(0) }.first
        }
    }

    public func setOAuthTokens(of name: String, sealed: [UInt8]) throws(StoreError) {
        try file.storing { database throws(SQLiteError) in
            try database.prepare("INSERT OR REPLACE INTO oauth_connections(name, sealed, changed_at) VALUES(?, ?, ?)")
                .run([.text(name), .blob(sealed), .int(Clock.nowUnixNanos())])
        }
    }

    public func replaceOAuthTokens(of name: String, expected: [UInt8], with sealed: [UInt8]?) throws(StoreError) -> Bool {
        try file.storing { database throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                let current = try database.prepare("SELECT sealed FROM oauth_connections WHERE name = ?").rows([.text(name)]) { $0.blob(0) }
                guard current.first == expected else { return false }
                if let sealed {
                    try database.prepare("UPDATE oauth_connections SET sealed = ?, changed_at = ? WHERE name = ?")
                        .run([.blob(sealed), .int(Clock.nowUnixNanos()), .text(name)])
                } else {
                    try database.prepare("DELETE FROM oauth_connections WHERE name = ?").run([.text(name)])
                }
                return true
            }
        }
    }

    public func removeOAuthTokens(of name: String) throws(StoreError) {
        try file.storing { database throws(SQLiteError) in
            try database.prepare("DELETE FROM oauth_connections WHERE name = ?").run([.text(name)])
        }
    }
}
