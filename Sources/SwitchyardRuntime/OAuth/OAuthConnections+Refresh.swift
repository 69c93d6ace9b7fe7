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
    /// refresh token rotated elsewhere) disconnects it: only a person can connect it again.
    private func refreshNow(_ name: String) async throws(RouterError) -> OAuthTokens {
        let (declaration, tokens, generation) = state.withLock { ($0.declarations[name], $0.tokens[name], $0.generation[name, default: 0]) }
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
            if error.code == "invalid_grant", current() { try? disconnect(name) }
            throw RouterError(instance: "oauth", reason: "\(name): refresh failed: \(error.description)")
        }
        try keep(fresh, for: name, generation: generation)
        logger.info("oauth: refreshed", metadata: ["connection": .string(name)])
        return fresh
    }

    /// Refreshes `name` before its access token expires: `refresh_before` ahead, but at most
    /// half its lifetime ahead (a short-lived token is not refreshed without pause). A failed
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
    /// work that got them began (`generation`).
    func keep(_ tokens: OAuthTokens, for name: String, generation: Int) throws(RouterError) {
        let (vault, store) = state.withLock { ($0.vault, $0.store) }
        guard let vault, let store else { throw RouterError(instance: "oauth", reason: "no store to keep \(name)'s tokens in") }
        let sealed: [UInt8]
        do {
            sealed = try vault.seal(tokens, name: name)
        } catch {
            throw RouterError(instance: "oauth", reason: "\(name): cannot seal the tokens: \(error)")
        }
        // The check and the write under one lock: a disconnect cannot slip in between.
        let failure = state.withLock { state -> String? in
            guard state.generation[name, default: 0] == generation else { return "connected or disconnected meanwhile" }
            do {
                try store.setOAuthTokens(of: name, sealed: sealed)
            } catch {
                return "cannot store the tokens: \(error)"
            }
            state.tokens[name] = tokens
            state.lastError[name] = nil
            return nil
        }
        if let failure {
            record(name, error: failure)
            throw RouterError(instance: "oauth", reason: "\(name): \(failure)")
        }
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
        guard shared, let vault, let stored = stored(name, store: store, vault: vault), stored.obtainedAt > tokens.obtainedAt else {
            return nil
        }
        state.withLock { state in
            state.tokens[name] = stored
            state.lastError[name] = nil
        }
        return stored
    }

    /// Another router sharing the store connected, refreshed or removed connection `name` (nil:
    /// any of them, after notices may have been missed): this router reads the store again and
    /// follows. Blocks on the store: call it off the store's event loop.
    func storedTokensChanged(_ name: String?) {
        let (store, vault, names) = state.withLock { ($0.store, $0.vault, name.map { [$0] } ?? Array($0.declarations.keys)) }
        guard let vault else { return }
        for name in names {
            let stored = stored(name, store: store, vault: vault)
            let change = state.withLock { state -> (connected: Bool, removed: Bool, task: Task<Void, Never>?)? in
                guard state.declarations[name] != nil, state.tokens[name] != stored else { return nil }
                let had = state.tokens[name] != nil
                state.tokens[name] = stored
                state.lastError[name] = nil
                guard stored == nil else { return (!had, false, nil) }
                // Disconnected elsewhere: what is under way here keeps nothing.
                state.generation[name, default: 0] += 1
                return (false, true, state.refreshes.removeValue(forKey: name))
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
