import Synchronization

/// The hot-path counters of one route: atomics, so emitting and dispatching threads never
/// share a lock. ``RouteMetric`` declares what is exported from them.
final class RouteCounters: Sendable {
    let received = Atomic<Int>(0)
    let filtered = Atomic<Int>(0)
    /// Envelopes its port's condition index picked this route for (and it took).
    let indexSelected = Atomic<Int>(0)
    /// Deliveries a sink took (its `deliver` returned ok); their outcome comes later.
    let sent = Atomic<Int>(0)
    let droppedFull = Atomic<Int>(0)
    let droppedLoop = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    /// Envelopes the worker has finished with (filtered or dispatched to every sink).
    let processed = Atomic<Int>(0)
    /// Times a sink answered "full" and the delivery waited.
    let sinkFull = Atomic<Int>(0)
    /// Deliveries a sink acknowledged as done: the only ones counted as delivered.
    let delivered = Atomic<Int>(0)
    /// Deliveries a sink acknowledged as failed (retry or reject), each attempt once.
    let failed = Atomic<Int>(0)
    /// Envelopes written to the spool (at-least-once routes).
    let spooled = Atomic<Int>(0)
    /// Envelopes dropped because their id was seen within the dedupe window.
    let deduplicated = Atomic<Int>(0)
    /// Failed deliveries scheduled for another attempt.
    let retried = Atomic<Int>(0)
    /// Deliveries given up on and moved to the dead letters.
    let deadLettered = Atomic<Int>(0)
    /// Envelopes read back from the spool (after a restart, a spill or a replay).
    let loadedFromSpool = Atomic<Int>(0)
    /// Batches the spool could not write (their sources were told to retry).
    let spoolFailures = Atomic<Int>(0)
    /// At-least-once deliveries waiting for their acknowledgement.
    let inFlight = Atomic<Int>(0)
    /// Bytes the route holds in the spool.
    let spoolBytes = Atomic<Int>(0)
    /// Envelopes the route's script ran on.
    let scriptCalls = Atomic<Int>(0)
    /// Script calls that failed (a Lua error, a malformed or refused envelope).
    let scriptErrors = Atomic<Int>(0)
    /// Script calls a budget stopped.
    let scriptBudgetStops = Atomic<Int>(0)
    /// Time in the script, in microseconds.
    let scriptMicroseconds = Atomic<Int>(0)
}
