import Synchronization

/// Counters of one instance, readable while it runs.
final class InstanceCounters: Sendable {
    let emitted = Atomic<Int>(0)
    let refusedFull = Atomic<Int>(0)
    let unrouted = Atomic<Int>(0)
    let invalid = Atomic<Int>(0)
    let acknowledged = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
}
