import Foundation
internal import Logging
internal import SwitchyardStore
import Synchronization

// Keeping tokens in the router's store, and following the other routers that share it.
extension OAuthConnections {
    /// Keeps `tokens` as connection `name`'s, unless a connect or disconnect came after the
    /// work that got them began (`generation`). A refresh passes `expected`, the sealed tokens
    /// it started from: with a shared store they are replaced only if still there; when another
    /// router (or a person) stored others meanwhile, those are taken instead and returned.
    /// Returns nil when `tokens` were kept.
    @discardableResult
    func keep(_ tokens: OAuthTokens, for name: String, generation: Int, replacing expected: [UInt8]? = nil) throws(OAuthError)
        -> OAuthTokens?
    {
        let (vault, store, shared) = state.withLock { ($0.vault, $0.store, $0.shared) }
        guard let vault, let store else { throw OAuthError("no store to keep \(name)'s tokens in") }
        let sealed: [UInt8]
        do {
            sealed = try vault.seal(tokens, name: name)
        } catch {
            throw OAuthError("\(name): cannot seal the tokens: \(error)")
        }
        // The check, the write and the update in one critical section of their own: a
        // disconnect cannot slip in between, and `state` is not held while the store answers.
        storeWrites.lock()
        defer { storeWrites.unlock() }
        guard state.withLock({ $0.generation[name, default: 0] }) == generation else {
            record(name, error: "connected or disconnected meanwhile")
            throw OAuthError("\(name): connected or disconnected meanwhile")
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
            throw OAuthError("\(name): cannot store the tokens: \(error)")
        }
        state.withLock { $0.hold(tokens, sealed: sealed, for: name) }
        return nil
    }

    /// A refresh found the stored tokens changed under it: takes what the store holds now.
    private func adoptStored(_ name: String, vault: OAuthVault, store: any OAuthTokenStore) throws(OAuthError) -> OAuthTokens {
        guard case .present(let tokens, let sealed) = vault.stored(name, in: store, logger: logger) else {
            throw OAuthError("\(name): changed on another router meanwhile")
        }
        state.withLock { $0.hold(tokens, sealed: sealed, for: name) }
        return tokens
    }

    /// After `invalid_grant`: forgets `name`'s tokens here and, unless another router stored
    /// others since the refresh began (`expected`), in the store.
    func forget(_ name: String, generation: Int, replacing expected: [UInt8]?) {
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
            return state.drop(name, timers: refresher)
        }
        task?.cancel()
        logger.notice("oauth: disconnected (the provider refused its refresh token)", metadata: ["connection": .string(name)])
    }

    /// Logs `error` and keeps it (shortened) as `name`'s last error, which ``list()`` shows.
    func record(_ name: String, error: String) {
        logger.warning("oauth: \(error)", metadata: ["connection": .string(name)])
        state.withLock { $0.lastError[name] = String(error.prefix(500)) }
    }

    // MARK: Several routers on one store

    /// Tokens of `name` in a shared store that are newer than `tokens` (another router
    /// refreshed or connected it), taken as this router's; nil when there are none.
    func newerStored(_ name: String, than tokens: OAuthTokens) -> OAuthTokens? {
        let (store, vault, shared) = state.withLock { ($0.store, $0.vault, $0.shared) }
        guard shared, let vault, case .present(let stored, let sealed) = vault.stored(name, in: store, logger: logger),
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
    package func storedTokensChanged(_ name: String?) {
        let (store, vault, names) = state.withLock { ($0.store, $0.vault, name.map { [$0] } ?? Array($0.declarations.keys)) }
        guard let vault else { return }
        for name in names {
            let found = vault.stored(name, in: store, logger: logger)
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
                    return (false, true, state.drop(name, timers: refresher))
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
            refresher.schedule(name, for: self)
            if change.connected {
                logger.notice("oauth: connected on another router", metadata: ["connection": .string(name)])
                connected.withLock { $0 }?(name)
            }
        }
    }
}
