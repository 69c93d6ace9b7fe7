import Foundation
internal import Logging
internal import SwitchyardCore
import Synchronization

/// Keeps the access tokens of the router's OAuth connections fresh: a timer per connected
/// connection refreshes ahead of expiry and tries again with backoff, and at most one exchange
/// with the token endpoint runs per connection at a time.
///
/// Separate from ``OAuthConnections`` because it owns the tasks (timers, refreshes under way)
/// while the connections own the tokens those tasks replace. The connections are passed to each
/// call rather than kept, so that neither keeps the other alive. Lock order: the connections may
/// detach a timer here while they hold their state (a connection's tokens and its timer go
/// together); nothing here waits for their state while holding its own.
final class OAuthRefresher: Sendable {
    private struct Tasks {
        /// The refresh timer of each connected connection.
        var timers: [String: Task<Void, Never>] = [:]
        /// The refresh under way per connection: a second caller waits for it rather than sending
        /// the same (rotating) refresh token twice, which a provider takes for a replay.
        var inFlight: [String: Task<Result<OAuthTokens, OAuthError>, Never>] = [:]
    }

    private let tasks = Mutex(Tasks())
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// Refreshes `name` once, or waits for the refresh already under way; returns the new tokens.
    func refresh(_ name: String, for connections: OAuthConnections) async throws(OAuthError) -> OAuthTokens {
        let task = tasks.withLock { tasks in
            if let running = tasks.inFlight[name] { return running }
            let task = Task { () -> Result<OAuthTokens, OAuthError> in
                defer { self.tasks.withLock { $0.inFlight[name] = nil } }
                do throws(OAuthError) {
                    return .success(try await self.refreshNow(name, for: connections))
                } catch {
                    return .failure(error)
                }
            }
            tasks.inFlight[name] = task
            return task
        }
        return try await task.value.get()
    }

    /// ``refresh(_:for:)`` for a caller that cannot wait asynchronously: blocks the calling
    /// thread for at most the token endpoint's timeout. Returns the new access token.
    func refreshBlocking(_ name: String, for connections: OAuthConnections) throws(ServiceError) -> String {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<String, ServiceError>?>(nil)
        Task {
            do throws(OAuthError) {
                let fresh = try await self.refresh(name, for: connections)
                result.withLock { $0 = .success(fresh.accessToken) }
            } catch {
                result.withLock { $0 = .failure(ServiceError(description: "oauth \(name): \(error.reason)")) }
            }
            done.signal()
        }
        // The token endpoint's own timeout bounds the refresh; the margin guards a lost answer.
        guard done.wait(timeout: .now() + .seconds(Int(OAuthTokenEndpoint.timeout.nanoseconds / 1_000_000_000) + 5)) == .success else {
            throw ServiceError(description: "oauth \(name): the refresh gave no answer")
        }
        guard let outcome = result.withLock({ $0 }) else { throw ServiceError(description: "oauth \(name): no refresh answer") }
        return try outcome.get()
    }

    /// Refreshes `name`, keeps and returns the new tokens. `invalid_grant` (revoked, or the
    /// refresh token rotated elsewhere) disconnects it, so that only a person can connect it
    /// again — unless, with a shared store, another router's newer tokens turn up within 2 s.
    private func refreshNow(_ name: String, for connections: OAuthConnections) async throws(OAuthError) -> OAuthTokens {
        guard let held = connections.held(name) else {
            throw OAuthError(connections.refusal(for: name) ?? name)
        }
        let current = { connections.isCurrent(name, generation: held.generation) }
        guard let refreshToken = held.tokens.refreshToken else {
            if current() { try? connections.disconnect(name) }
            connections.record(name, error: "the access token expired and the provider gave no refresh token: connect it again")
            throw OAuthError("\(name): expired, no refresh token; connect it again")
        }
        // Another router sharing the store may have refreshed it already: then its tokens are
        // the ones to use (the refresh token they replaced no longer works).
        if let newer = connections.newerStored(name, than: held.tokens) { return newer }
        let fresh: OAuthTokens
        do {
            fresh = try await OAuthTokenEndpoint.request(
                held.declaration, form: [("grant_type", "refresh_token"), ("refresh_token", refreshToken)], previous: held.tokens)
        } catch {
            if error.code == "invalid_grant", connections.isShared {
                // Refreshed elsewhere a moment ago? Its tokens reach the store within moments.
                for _ in 0..<8 {
                    if let newer = connections.newerStored(name, than: held.tokens) { return newer }
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
            connections.record(name, error: "refresh failed: \(error.description)")
            if error.code == "invalid_grant", current() { connections.forget(name, generation: held.generation, replacing: held.sealed) }
            throw OAuthError("\(name): refresh failed: \(error.description)")
        }
        if let adopted = try connections.keep(fresh, for: name, generation: held.generation, replacing: held.sealed) { return adopted }
        logger.info("oauth: refreshed", metadata: ["connection": .string(name)])
        return fresh
    }

    /// Refreshes `name` before its access token expires: `refresh_before` ahead, but at most
    /// half its lifetime ahead (a short-lived token is not refreshed without pause), and then up
    /// to a fifth earlier still, at random (see below). A failed
    /// refresh is tried again after 5 s, doubling to 5 min, while the token is still usable.
    func schedule(_ name: String, for connections: OAuthConnections) {
        let task = Task { [weak self, weak connections] in
            var backoff: Double = 5
            while !Task.isCancelled {
                guard let self, let connections, let held = connections.held(name), let expires = held.tokens.expiresAt,
                    held.tokens.refreshToken != nil
                else { return }
                let lifetime = max(1, expires - held.tokens.obtainedAt)
                // Up to a fifth earlier, at random: routers sharing a store seldom refresh at
                // once (the first one's tokens reach the others, which then wait anew).
                let ahead = min(Double(held.declaration.refreshBefore) / 1e9, lifetime / 2) * Double.random(in: 1...1.2)
                // At most one refresh a second, whatever the provider says of its tokens.
                let wait = min(max(1, expires - ahead - Date().timeIntervalSince1970), OAuthTokenEndpoint.maximumLifetime)
                try? await Task.sleep(for: .seconds(wait))
                guard !Task.isCancelled else { return }
                do {
                    _ = try await self.refresh(name, for: connections)
                    backoff = 5
                } catch {
                    guard connections.isConnected(name) else { return }
                    try? await Task.sleep(for: .seconds(backoff))
                    backoff = min(backoff * 2, 300)
                }
            }
        }
        let previous = tasks.withLock { tasks in
            defer { tasks.timers[name] = task }
            return tasks.timers[name]
        }
        previous?.cancel()
    }

    /// Takes `name`'s refresh timer out, for the caller to cancel (outside its locks).
    func detachTimer(_ name: String) -> Task<Void, Never>? {
        tasks.withLock { $0.timers.removeValue(forKey: name) }
    }

    /// Takes out the refresh timers of every connection but those of `names`, for the caller to
    /// cancel (outside its locks).
    func detachTimers(keeping names: Set<String>) -> [Task<Void, Never>] {
        tasks.withLock { tasks in
            defer { tasks.timers = tasks.timers.filter { names.contains($0.key) } }
            return tasks.timers.filter { !names.contains($0.key) }.map(\.value)
        }
    }

    /// Stops every refresh timer (the router stops).
    func stop() {
        let timers = tasks.withLock { tasks in
            defer { tasks.timers = [:] }
            return Array(tasks.timers.values)
        }
        for timer in timers { timer.cancel() }
    }
}
