import SwitchyardPluginKit
import Synchronization

/// Webhook requests waiting for the router to settle the envelope they emitted: the HTTP
/// answer says "accepted" only once every route has taken it (an at-least-once route: once it
/// is on disk).
final class SettlementWaiters: Sendable {
    /// How a request's envelope fared.
    enum Answer: Sendable, Equatable {
        /// The router settled it with this outcome.
        case settled(DeliveryOutcome)
        /// The router did not take it.
        case refused(EmitResult)
        /// Not settled within the timeout; it may still be delivered.
        case timedOut
    }

    private struct Waiter {
        var continuation: CheckedContinuation<Answer, Never>
        var deadline: ContinuousClock.Instant
    }

    private let waiters = Mutex<[UInt64: Waiter]>([:])
    private let nextToken = Atomic<UInt64>(0)

    /// Emits through `emit` (given the settle token to use) and waits for the answer.
    func submit(timeout: Duration, _ emit: (UInt64) -> EmitResult) async -> Answer {
        let token = nextToken.add(1, ordering: .relaxed).newValue
        return await withCheckedContinuation { continuation in
            waiters.withLock { $0[token] = Waiter(continuation: continuation, deadline: .now + timeout) }
            // The router may settle during emit (no route reads the port): the waiter is in place.
            let result = emit(token)
            if result != .ok { resolve(token, .refused(result)) }
        }
    }

    /// Answers the request waiting on `token`, if it still waits.
    func resolve(_ token: UInt64, _ answer: Answer) {
        let waiter = waiters.withLock { $0.removeValue(forKey: token) }
        waiter?.continuation.resume(returning: answer)
    }

    /// Answers every request whose deadline has passed with ``Answer/timedOut``.
    func expire(now: ContinuousClock.Instant = .now) {
        let expired = waiters.withLock { waiters in
            let tokens = waiters.filter { $0.value.deadline <= now }.map(\.key)
            return tokens.compactMap { waiters.removeValue(forKey: $0) }
        }
        for waiter in expired { waiter.continuation.resume(returning: .timedOut) }
    }

    /// Answers every waiting request with `answer` (the instance is stopping).
    func resolveAll(_ answer: Answer) {
        let all = waiters.withLock { waiters in
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for waiter in all { waiter.continuation.resume(returning: answer) }
    }
}
