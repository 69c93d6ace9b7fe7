/// Where OAuth 2.0 connections keep their tokens, sealed by the router before they get here (a
/// copy of the store alone opens nothing): the router's spool by default, or a PostgreSQL
/// database several routers share, where a connection made on one router serves all of them.
/// Routers sharing a store must then share the sealing key (`SWITCHYARD_OAUTH_KEY`).
public protocol OAuthTokenStore: AnyObject, Sendable {
    /// Where the tokens live, for logs and errors.
    var location: String { get }

    /// The sealed tokens of connection `name`, or nil when it is not connected.
    func oauthTokens(of name: String) throws(StoreError) -> [UInt8]?

    /// Stores the sealed tokens of connection `name` (replacing any); committed (and announced
    /// to other routers, where the engine can) when it returns.
    func setOAuthTokens(of name: String, sealed: [UInt8]) throws(StoreError)

    /// Forgets connection `name`'s tokens.
    func removeOAuthTokens(of name: String) throws(StoreError)

    /// Replaces connection `name`'s sealed tokens with `sealed` (nil: removes them), but only
    /// while they are still exactly `expected`; returns whether it did. A refresh keeps its
    /// result this way, so it never overwrites what another router (or a person) stored since.
    func replaceOAuthTokens(of name: String, expected: [UInt8], with sealed: [UInt8]?) throws(StoreError) -> Bool
}
