// Public: the lock's methods are inlinable (a queue pushes through them per envelope), so the
// pthread calls they make must be visible where they are inlined.
#if canImport(Glibc)
    public import Glibc
#elseif canImport(Musl)
    public import Musl
#elseif canImport(Darwin)
    public import Darwin
#endif

/// A value guarded by a lock that threads can also wait on: `Mutex` with a condition variable.
///
/// It is a pthread mutex (adaptive, on glibc) and condition, not a futex: ThreadSanitizer sees every acquisition,
/// where it cannot see `Synchronization.Mutex`'s slow path on Linux and reports the state it
/// guards as racing. Waits are bounded by a monotonic clock, so a wall-clock step neither
/// shortens nor stretches them.
///
/// The state is reached only inside ``withLock(_:)`` and the waits, so the compiler checks
/// what `@unchecked Sendable` on a class with a lock beside its fields took on trust.
public final class Locked<State>: @unchecked Sendable {
    // `@unchecked`: it owns a pthread mutex and condition (C pointers); `state` is read and
    // written only with `mutex` held.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let condition: UnsafeMutablePointer<pthread_cond_t>
    @usableFromInline var state: State

    /// Guards `initial`.
    public init(_ initial: State) {
        state = initial
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        var mutexAttributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&mutexAttributes)
        #if canImport(Glibc)
            // Adaptive: a lock found taken is retried for a moment before the thread sleeps.
            // Its holders keep it for a queue push or take (well under a microsecond), and a
            // sleep costs a futex call on each side; a route worker and its source took turns
            // sleeping on a queue's lock, thousands of times a second (RESULTS, "slow mode").
            pthread_mutexattr_settype(&mutexAttributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        #endif
        pthread_mutex_init(mutex, &mutexAttributes)
        pthread_mutexattr_destroy(&mutexAttributes)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if !canImport(Darwin)
            pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` on the state with the lock held.
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Runs `body` on the state if the lock is free now; nil (and `body` not run) when another
    /// thread holds it.
    @inlinable
    public func withLockIfAvailable<Result>(_ body: (inout State) -> Result) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return body(&state)
    }

    /// Waits with the lock released until `ready` holds (each check with the lock held), then
    /// runs `body` with it held. With a `deadline`, waits at most until then: `body` learns
    /// whether `ready` held (false: the deadline passed first). Wake the waiters with
    /// ``broadcast()`` or ``signal()`` after changing what `ready` reads.
    @inlinable
    public func withLock<Result>(
        waitingUntil ready: (State) -> Bool, deadline: ContinuousClock.Instant? = nil, _ body: (inout State, _ ready: Bool) -> Result
    ) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var isReady = ready(state)
        while !isReady {
            if let deadline {
                guard waitLocked(until: deadline) else { break }
            } else {
                pthread_cond_wait(condition, mutex)
            }
            isReady = ready(state)
        }
        return body(&state, isReady)
    }

    /// Waits once, lock held, for a wake-up or `deadline` (nil: no limit); false once the
    /// deadline has passed. Only the waiting ``withLock(waitingUntil:deadline:_:)`` calls it:
    /// the state is read again after it through `ready`, never through a held `inout`.
    @usableFromInline
    func waitLocked(until deadline: ContinuousClock.Instant?) -> Bool {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return true
        }
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return false }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = left.components
        var nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
        var wholeSeconds = Int(now.tv_sec) + Int(seconds)
        wholeSeconds += nanoseconds / 1_000_000_000
        nanoseconds %= 1_000_000_000
        var until = timespec(tv_sec: wholeSeconds, tv_nsec: nanoseconds)
        return pthread_cond_timedwait(condition, mutex, &until) != ETIMEDOUT || ContinuousClock.now < deadline
    }

    /// Wakes every waiter (they check their condition again).
    @inlinable
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Wakes one waiter.
    @inlinable
    public func signal() { pthread_cond_signal(condition) }
}
