public import SwitchyardStore

/// OAuth connections' sealed tokens (``PostgresOAuthTokens``). Each change commits with a
/// NOTIFY: the other routers read and open the tokens again, so a connection made, refreshed or
/// removed on one router is the same on all.
extension PostgresStore: OAuthTokenStore {
    public func oauthTokens(of name: String) throws(StoreError) -> [UInt8]? { try oauth.oauthTokens(of: name) }

    public func setOAuthTokens(of name: String, sealed: [UInt8]) throws(StoreError) { try oauth.setOAuthTokens(of: name, sealed: sealed) }

    public func replaceOAuthTokens(of name: String, expected: [UInt8], with sealed: [UInt8]?) throws(StoreError) -> Bool {
        try oauth.replaceOAuthTokens(of: name, expected: expected, with: sealed)
    }

    public func removeOAuthTokens(of name: String) throws(StoreError) { try oauth.removeOAuthTokens(of: name) }
}
