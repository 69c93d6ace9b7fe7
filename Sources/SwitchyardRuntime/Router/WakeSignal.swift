internal import SwitchyardCore
import Synchronization

/// Wakes threads waiting for a condition on counts kept elsewhere (atomics): a reload waiting
/// for an instance's deliveries to end, a shutdown waiting for the router to drain (the
/// router's `drainProgress`), a route thread waiting for a full sink's word (``SinkRoom``).
/// Every place that changes what a waiter reads calls ``signal()`` after the change, which
/// only takes the lock while someone waits.
final class WakeSignal: Sendable {
    // The lock guards the sleep and wake-up, and counts the wake-ups (a sized value: an empty
    // one confuses ThreadSanitizer's access tracking); `waiters` is atomic. The waiter counts
    // itself before it checks the condition and the signalling thread changes what the condition
    // reads before it reads `waiters` (both sequentially consistent), so one of them sees the other.
    private let wakeUps = Locked<UInt64>(0)
    private let waiters = Atomic<Int>(0)

    /// Wakes the waiters, if any.
    func signal() {
        guard waiters.load(ordering: .sequentiallyConsistent) > 0 else { return }
        wakeUps.withLock { wakeUps in
            wakeUps &+= 1
            self.wakeUps.broadcast()
        }
    }

    /// Waits while `busy()` holds, at most until `deadline`; true when it stopped holding.
    func wait(until deadline: ContinuousClock.Instant, while busy: () -> Bool) -> Bool {
        waiters.add(1, ordering: .sequentiallyConsistent)
        defer { waiters.subtract(1, ordering: .sequentiallyConsistent) }
        return wakeUps.withLock(waitingUntil: { _ in !busy() }, deadline: deadline) { _, stopped in stopped }
    }
}
