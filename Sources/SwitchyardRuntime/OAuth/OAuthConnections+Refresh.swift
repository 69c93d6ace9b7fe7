import Foundation
internal import Logging
internal import SwitchyardStore
import Synchronization

extension OAuthConnections {
    // MARK: Refreshing

    /// Refreshes `name` once, or waits for the refresh already under way; returns the new tokens.
    func refresh(_ name: String) async throws(RouterError) -> OAuthTokens {
        let task = state.withLock { state in
            if let running = state.inFlight[name] { return running }
            let task = Task { () -> Result<OAuthTokens, RouterError> in
                defer { self.state.withLock { $0.inFlight[name] = nil } }
                do throws(RouterError) {
                    return .success(try await self.refreshNow(name))
                } catch {
                    return .failure(error)
                }
            }
            state.inFlight[name] = task
            return task
        }
        return try await task.value.get()
    }

    /// Refreshes `name`, keeps and returns the new tokens. `invalid_grant` (revoked, or the
    /// refresh token rotated elsewhere) disconnects it, so that only a person can connect it
    /// again — unless, with a shared store, another router's newer tokens turn up within 2 s.
    private func refreshNow(_ name: String) async throws(RouterError) -> OAuthTokens {
        let (declaration, tokens, generation, expected) = state.withLock {
            ($0.declarations[name], $0.tokens[name], $0.generation[name, default: 0], $0.sealed[name])
        }
        guard let declaration, let tokens else { throw RouterError(instance: "oauth", reason: refusal(for: name) ?? name) }
        let current = { self.state.withLock { $0.generation[name, default: 0] } == generation }
        guard let refreshToken = tokens.refreshToken else {
            if current() { try? disconnect(name) }
            record(name, error: "the access token expired and the provider gave no refresh token: connect it again")
            throw RouterError(instance: "oauth", reason: "\(name): expired, no refresh token; connect it again")
        }
        // Another router sharing the store may have refreshed it already: then its tokens are
        // the ones to use (the refresh token they replaced no longer works).
        if let newer = newerStored(name, than: tokens) { return newer }
        let fresh: OAuthTokens
        do {
            fresh = try await OAuthTokenEndpoint.request(
                declaration, form: [("grant_type", "refresh_token"), ("refresh_token", refreshToken)], previous: tokens)
        } catch {
            if error.code == "invalid_grant", state.withLock({ $0.shared }) {
                // Refreshed elsewhere a moment ago? Its tokens reach the store within moments.
                for _ in 0..<8 {
                    if let newer = newerStored(name, than: tokens) { return newer }
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
            record(name, error: "refresh failed: \(error.description)")
            if error.code == "invalid_grant", current() { forget(name, generation: generation, replacing: expected) }
            throw RouterError(instance: "oauth", reason: "\(name): refresh failed: \(error.description)")
        }
        if let adopted = try keep(fresh, for: name, generation: generation, replacing: expected) { return adopted }
        logger.info("oauth: refreshed", metadata: ["connection": .string(name)])
        return fresh
    }

    /// Refreshes `name` before its access token expires: `refresh_before` ahead, but at most
    /// half its lifetime ahead (a short-lived token is not refreshed without pause), and then up
    /// to a fifth earlier still, at random (see below). A failed
    /// refresh is tried again after 5 s, doubling to 5 min, while the token is still usable.
    func scheduleRefresh(_ name: String) {
        let task = Task { [weak self] in
            var backoff: Double = 5
            while !Task.isCancelled {
                guard let self,
                    let (declaration, tokens) = self.state.withLock({ state in
                        state.declarations[name].flatMap { declaration in state.tokens[name].map { (declaration, $0) } }
                    }), let expires = tokens.expiresAt, tokens.refreshToken != nil
                else { return }
                let lifetime = max(1, expires - tokens.obtainedAt)
                // Up to a fifth earlier, at random: routers sharing a store seldom refresh at
                // once (the first one's tokens reach the others, which then wait anew).
                let ahead = min(Double(declaration.refreshBefore) / 1e9, lifetime / 2) * Double.random(in: 1...1.2)
                // At most one refresh a second, whatever the provider says of its tokens.
                let wait = min(max(1, expires - ahead - Date().timeIntervalSince1970), OAuthTokenEndpoint.maximumLifetime)
                try? await Task.sleep(for: .seconds(wait))
                guard !Task.isCancelled else { return }
                do {
                    _ = try await self.refresh(name)
                    backoff = 5
                } catch {
                    guard self.isConnected(name) else { return }
                    try? await Task.sleep(for: .seconds(backoff))
                    backoff = min(backoff * 2, 300)
                }
            }
        }
        let previous = state.withLock { state in
            defer { state.refreshes[name] = task }
            return state.refreshes[name]
        }
        previous?.cancel()
    }

    /// Keeps `tokens` as connection `name`'s, unless a connect or disconnect came after the
    /// work that got them began (`generation`). A refresh passes `expected`, the sealed tokens
    /// it started from: with a shared store they are replaced only if still there; when another
    /// router (or a person) stored others meanwhile, those are taken instead and returned.
    /// Returns nil when `tokens` were kept.
    @discardableResult
    func keep(_ tokens: OAuthTokens, for name: String, generation: Int, replacing expected: [UInt8]? = nil) throws(RouterError)
        -> OAuthTokens?
    {
        let (vault, store, shared) = state.withLock { ($0.vault, $0.store, $0.shared) }
        guard let vault, let store else { throw RouterError(instance: "oauth", reason: "no store to keep \(name)'s tokens in") }
        let sealed: [UInt8]
        do {
            sealed = try vault.seal(tokens, name: name)
        } catch {
            throw RouterError(instance: "oauth", reason: "\(name): cannot seal the tokens: \(error)")
        }
        // The check, the write and the update in one critical section of their own: a
        // disconnect cannot slip in between, and `state` is not held while the store answers.
        storeWrites.lock()
        defer { storeWrites.unlock() }
        guard state.withLock({ $0.generation[name, default: 0] }) == generation else {
            record(name, error: "connected or disconnected meanwhile")
            throw RouterError(instance: "oauth", reason: "\(name): connected or disconnected meanwhile")
        }
        do {
            if shared, let expected {
                guard try store.replaceOAuthTokens(of: name, expected: expected, with: sealed) else {
                    return try adoptStored(name, vault: vault, store: store)
                }
            } else {
                try store.setOAuthTokens(of: name, sealed: sealed)
            }
        } catch {
            record(name, error: "cannot store the tokens: \(error)")
            throw RouterError(instance: "oauth", reason: "\(name): cannot store the tokens: \(error)")
        }
        state.withLock { $0.hold(tokens, sealed: sealed, for: name) }
        return nil
    }

    /// A refresh found the stored tokens changed under it: takes what the store holds now.
    private func adoptStored(_ name: String, vault: OAuthVault, store: any OAuthTokenStore) throws(RouterError) -> OAuthTokens {
        guard case .present(let tokens, let sealed) = stored(name, store: store, vault: vault) else {
            throw RouterError(instance: "oauth", reason: "\(name): changed on another router meanwhile")
        }
        state.withLock { $0.hold(tokens, sealed: sealed, for: name) }
        return tokens
    }

    /// After `invalid_grant`: forgets `name`'s tokens here and, unless another router stored
    /// others since the refresh began (`expected`), in the store.
    private func forget(_ name: String, generation: Int, replacing expected: [UInt8]?) {
        let (store, shared) = state.withLock { ($0.store, $0.shared) }
        guard shared, let expected, let store else {
            try? disconnect(name)
            return
        }
        storeWrites.lock()
        defer { storeWrites.unlock() }
        guard (try? store.replaceOAuthTokens(of: name, expected: expected, with: nil)) == true else { return }
        let task = state.withLock { state -> Task<Void, Never>? in
            guard state.generation[name, default: 0] == generation else { return nil }
            return state.drop(name)
        }
        task?.cancel()
        logger.notice("oauth: disconnected (the provider refused its refresh token)", metadata: ["connection": .string(name)])
    }

    func record(_ name: String, error: String) {
        logger.warning("oauth: \(error)", metadata: ["connection": .string(name)])
        state.withLock { $0.lastError[name] = String(error.prefix(500)) }
    }

    // MARK: Several routers on one store

    /// Tokens of `name` in a shared store that are newer than `tokens` (another router
    /// refreshed or connected it), taken as this router's; nil when there are none.
    private func newerStored(_ name: String, than tokens: OAuthTokens) -> OAuthTokens? {
        let (store, vault, shared) = state.withLock { ($0.store, $0.vault, $0.shared) }
        guard shared, let vault, case .present(let stored, let sealed) = stored(name, store: store, vault: vault),
            stored.obtainedAt > tokens.obtainedAt
        else { return nil }
        return state.withLock { state -> OAuthTokens? in
            // Only over what is older still: this router may have kept newer ones meanwhile.
            guard let held = state.tokens[name], held.obtainedAt < stored.obtainedAt else { return state.tokens[name] }
            state.hold(stored, sealed: sealed, for: name)
            return stored
        }
    }

    /// Another router sharing the store connected, refreshed or removed connection `name` (nil:
    /// any of them, after notices may have been missed): this router reads the store again and
    /// follows. Blocks on the store: call it off the store's event loop.
    func storedTokensChanged(_ name: String?) {
        let (store, vault, names) = state.withLock { ($0.store, $0.vault, name.map { [$0] } ?? Array($0.declarations.keys)) }
        guard let vault else { return }
        for name in names {
            let found = stored(name, store: store, vault: vault)
            if case .unknown = found { continue }  // nothing is known: keep what is held
            let change = state.withLock { state -> (connected: Bool, removed: Bool, task: Task<Void, Never>?)? in
                guard state.declarations[name] != nil else { return nil }
                let had = state.tokens[name] != nil
                switch found {
                case .present(let tokens, let sealed):
                    // Not over newer tokens this router kept meanwhile.
                    if let held = state.tokens[name], held == tokens || held.obtainedAt > tokens.obtainedAt { return nil }
                    state.hold(tokens, sealed: sealed, for: name)
                    return (!had, false, nil)
                case .absent:
                    guard had else { return nil }
                    // Disconnected elsewhere: what is under way here keeps nothing.
                    return (false, true, state.drop(name))
                case .unknown:
                    return nil
                }
            }
            guard let change else { continue }
            change.task?.cancel()
            if change.removed {
                logger.notice("oauth: disconnected on another router", metadata: ["connection": .string(name)])
                continue
            }
            scheduleRefresh(name)
            if change.connected {
                logger.notice("oauth: connected on another router", metadata: ["connection": .string(name)])
                connected.withLock { $0 }?(name)
            }
        }
    }
}
