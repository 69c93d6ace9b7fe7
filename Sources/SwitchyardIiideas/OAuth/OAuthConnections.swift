import Foundation
package import Logging
package import SwitchyardConfig
public import SwitchyardCore
package import SwitchyardStore
import Synchronization

/// The router's OAuth 2.0 connections (`oauth:`): a person connects one through the admin API
/// (authorization code with PKCE, RFC 7636), the tokens are kept sealed in the router's store
/// (``OAuthVault``) and refreshed before they expire; the `http` piece sends the access token.
public final class OAuthConnections: Sendable {
    struct State {
        var declarations: [String: OAuthDeclaration] = [:]
        var tokens: [String: OAuthTokens] = [:]
        /// The sealed value of each connection's tokens as the store holds them (as far as this
        /// router knows): what a refresh expects to replace.
        var sealed: [String: [UInt8]] = [:]
        var lastError: [String: String] = [:]
        /// Bumped by each connect and disconnect: a refresh that began before one keeps nothing
        /// (it would bring back what a person removed, or replace what they just connected).
        var generation: [String: Int] = [:]
        var vault: OAuthVault?
        var store: (any OAuthTokenStore)?
        /// Whether the store is shared with other routers (which may refresh, connect or
        /// disconnect too).
        var shared = false

        /// `tokens` (sealed in the store as `sealed`) are connection `name`'s now.
        mutating func hold(_ tokens: OAuthTokens, sealed: [UInt8], for name: String) {
            self.tokens[name] = tokens
            self.sealed[name] = sealed
            lastError[name] = nil
        }

        /// Connection `name` has no tokens any more: what is under way keeps nothing (the
        /// generation moves on). Returns its refresh timer, taken from `refresher` at once, to
        /// cancel.
        mutating func drop(_ name: String, timers refresher: OAuthRefresher) -> Task<Void, Never>? {
            tokens[name] = nil
            sealed[name] = nil
            generation[name, default: 0] += 1
            return refresher.detachTimer(name)
        }
    }

    let state = Mutex(State())
    let logger: Logger
    /// Refreshes the tokens held here before they expire.
    let refresher: OAuthRefresher
    /// Told the name of each connection that became usable (the router then asks again the
    /// pieces refused for it).
    let connected = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// Serialises the writes to the store (keeping tokens, forgetting them) with their checks,
    /// without holding `state` while the store answers (PostgreSQL may take seconds).
    let storeWrites = NSLock()
    /// The authorizations people started and the provider has not yet sent back.
    let flows = OAuthAuthorizationFlows()

    package init(logger: Logger) {
        self.logger = logger
        refresher = OAuthRefresher(logger: logger)
    }

    /// Calls `body` with the name of each connection a person connects from now on.
    package func whenConnected(_ body: @escaping @Sendable (String) -> Void) { connected.withLock { $0 = body } }

    /// Takes the connections of a (re)loaded graph and the router's store; tokens kept in the
    /// store are opened and their refresh is scheduled. A connection no longer declared is
    /// forgotten here, not in the store (a reload that brings it back finds it connected).
    /// The sealing key is `SWITCHYARD_OAUTH_KEY`, else `oauth.key` in `keyDirectory` (beside
    /// the spool); a `shared` store needs the former, the same on every router.
    package func adopt(_ declarations: [OAuthDeclaration], store: (any OAuthTokenStore)?, keyDirectory: String?, shared: Bool) {
        var vault: OAuthVault?
        if !declarations.isEmpty, store != nil {
            let environment = ProcessInfo.processInfo.environment["SWITCHYARD_OAUTH_KEY"]
            do {
                if shared, environment?.isEmpty ?? true {
                    throw OAuthVault.KeyError(
                        description:
                            "with store.url every router needs the same SWITCHYARD_OAUTH_KEY (32 bytes, base64), to open the others' tokens"
                    )
                }
                guard let keyDirectory else { throw OAuthVault.KeyError(description: "no folder for oauth.key") }
                vault = try state.withLock({ $0.vault }) ?? OAuthVault(directory: keyDirectory, environment: environment)
            } catch {
                logger.error("oauth: no key to seal tokens with: \(error); connections cannot be kept")
            }
        }
        var opened: [String: (tokens: OAuthTokens, sealed: [UInt8])] = [:]
        for declaration in declarations {
            guard let vault, case .present(let tokens, let sealed) = vault.stored(declaration.name, in: store, logger: logger) else {
                continue
            }
            opened[declaration.name] = (tokens, sealed)
        }
        let (gone, fresh) = state.withLock { state -> ([Task<Void, Never>], [String]) in
            let names = Set(declarations.map(\.name))
            let gone = refresher.detachTimers(keeping: names)
            state.declarations = Dictionary(declarations.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            state.store = store
            state.shared = shared
            state.vault = vault
            var fresh: [String] = []
            for (name, kept) in opened where state.tokens[name] == nil {
                state.tokens[name] = kept.tokens
                state.sealed[name] = kept.sealed
                fresh.append(name)
            }
            state.tokens = state.tokens.filter { names.contains($0.key) }
            state.sealed = state.sealed.filter { names.contains($0.key) }
            return (gone, fresh)
        }
        for task in gone { task.cancel() }
        for name in fresh { refresher.schedule(name, for: self) }
    }

    /// Stops every refresh timer (the router stops).
    package func stop() { refresher.stop() }

    /// Whether connection `name` has tokens.
    func isConnected(_ name: String) -> Bool { state.withLock { $0.tokens[name] != nil } }

    /// What a refresh of a connection starts from, read at once.
    struct Held {
        var declaration: OAuthDeclaration
        var tokens: OAuthTokens
        /// The connection's generation when read: a refresh keeps nothing once it moved on.
        var generation: Int
        /// The tokens' sealed form in the store: what a refresh expects to replace.
        var sealed: [UInt8]?
    }

    /// Connection `name`'s declaration and tokens, or nil when it is not declared or not connected.
    func held(_ name: String) -> Held? {
        state.withLock { state in
            guard let declaration = state.declarations[name], let tokens = state.tokens[name] else { return nil }
            return Held(
                declaration: declaration, tokens: tokens, generation: state.generation[name, default: 0], sealed: state.sealed[name])
        }
    }

    /// Whether no connect or disconnect of `name` came after its `generation` was read.
    func isCurrent(_ name: String, generation: Int) -> Bool { state.withLock { $0.generation[name, default: 0] } == generation }

    /// Whether the store is shared with other routers (which may refresh, connect or disconnect too).
    var isShared: Bool { state.withLock { $0.shared } }

    /// Why an iiidea piece that needs connection `name` cannot work, or nil when it can.
    package func refusal(for name: String) -> String? {
        isConnected(name) ? nil : "connect \(name) first (POST /v1/oauth/\(name)/start, or the console)"
    }

    /// Starts connecting `name`: the URL to send the person's browser to. `callback` is where
    /// the provider sends it back when the declaration names no `redirect_url`; `returnTo` is
    /// where the callback sends the browser once connected (a console page).
    public func start(_ name: String, callback: String, returnTo: String? = nil) throws(OAuthError) -> String {
        guard let declaration = state.withLock({ $0.declarations[name] }) else {
            throw OAuthError("no OAuth connection named '\(name)'")
        }
        guard state.withLock({ $0.vault != nil }) else {
            throw OAuthError("the router's store has no key to keep tokens with (see the log)")
        }
        return flows.begin(name, as: declaration, callback: callback, returnTo: returnTo)
    }

    /// Finishes a flow from the provider's redirect (`state`, and `code` or `error`): exchanges
    /// the code (with the PKCE verifier) for tokens and keeps them. Returns the connection's name
    /// and where its flow asked the browser to go next.
    public func complete(state flowState: String, code: String?, error: String?) async throws(OAuthError) -> (
        name: String, returnTo: String?
    ) {
        guard let flow = flows.take(flowState), let declaration = state.withLock({ $0.declarations[flow.connection] }) else {
            throw OAuthError("unknown or expired authorization (state): start again")
        }
        if let error {
            record(flow.connection, error: "the provider refused the authorization: \(error)")
            throw OAuthError("\(flow.connection): the provider refused the authorization: \(error)")
        }
        guard let code, !code.isEmpty else { throw OAuthError("the callback has no code") }
        let tokens: OAuthTokens
        do {
            tokens = try await OAuthTokenEndpoint.request(
                declaration,
                form: [
                    ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", flow.redirect), ("code_verifier", flow.verifier),
                ])
        } catch {
            record(flow.connection, error: error.description)
            throw OAuthError("\(flow.connection): \(error.description)")
        }
        let generation = state.withLock { state in
            state.generation[flow.connection, default: 0] += 1
            return state.generation[flow.connection, default: 0]
        }
        try keep(tokens, for: flow.connection, generation: generation)
        logger.notice("oauth: connected", metadata: ["connection": .string(flow.connection)])
        refresher.schedule(flow.connection, for: self)
        connected.withLock { $0 }?(flow.connection)
        return (flow.connection, flow.returnTo)
    }

    /// The access token of `name` for a call now: refreshed first when it has expired (or is
    /// about to), which blocks the calling thread for at most the token endpoint's timeout.
    package func accessToken(_ name: String) throws(ServiceError) -> String {
        guard let tokens = state.withLock({ $0.tokens[name] }) else { throw ServiceError(description: refusal(for: name) ?? name) }
        // About to expire (within 5 s, or a quarter of a short token's lifetime): the call
        // would be refused on its way.
        if let expires = tokens.expiresAt, expires - Date().timeIntervalSince1970 < min(5, (expires - tokens.obtainedAt) / 4) {
            return try refresher.refreshBlocking(name, for: self)
        }
        return tokens.accessToken
    }

    /// The origins (`scheme://host[:port]`) of the declared authorization endpoints: where a
    /// console page may send a browser.
    public func authorizationOrigins() -> [String] {
        OAuthAuthorizationFlows.origins(of: state.withLock { $0.declarations.values.map(\.authorizeURL) })
    }

    /// Forgets connection `name`'s tokens (here and in the store).
    public func disconnect(_ name: String) throws(OAuthError) {
        storeWrites.lock()
        defer { storeWrites.unlock() }
        let (task, store) = state.withLock { state in (state.drop(name, timers: refresher), state.store) }
        task?.cancel()
        do {
            try store?.removeOAuthTokens(of: name)
        } catch {
            throw OAuthError("cannot forget \(name)'s tokens: \(error)")
        }
        logger.notice("oauth: disconnected", metadata: ["connection": .string(name)])
    }

    /// Every declared connection: `{name, connected, expires_at, scope, obtained_at, refreshable,
    /// last_error}` — never a token.
    public func list() -> [JSONValue] {
        state.withLock { state in
            state.declarations.keys.sorted().map { name in
                var object: [String: JSONValue] = ["name": .string(name), "connected": .bool(state.tokens[name] != nil)]
                if let tokens = state.tokens[name] {
                    if let expires = tokens.expiresAt { object["expires_at"] = .string(Self.time(expires)) }
                    if let scope = tokens.scope { object["scope"] = .string(scope) }
                    object["obtained_at"] = .string(Self.time(tokens.obtainedAt))
                    object["refreshable"] = .bool(tokens.refreshToken != nil)
                }
                if let error = state.lastError[name] { object["last_error"] = .string(error) }
                return .object(object)
            }
        }
    }

    static func time(_ seconds: Double) -> String {
        Date(timeIntervalSince1970: seconds).formatted(Date.ISO8601FormatStyle())
    }
}
