import Foundation
internal import SwitchyardConfig
internal import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An envelope waiting in a route queue, with the settlement its source asked for.
struct QueuedEnvelope: Sendable {
    var envelope: Envelope
    var settlement: Settlement?
    /// When the envelope is its route's latency sample: the emit time (``LatencyProbe``); 0 otherwise.
    var probe: UInt64 = 0
}

/// A sink's acknowledgement of an at-least-once delivery, on its way to the route worker.
struct RouteAck: Sendable {
    var deliveryID: UInt64
    var outcome: Int32
    var reason: String
}

/// A bounded FIFO between the emitting thread and a route's worker; for at-least-once routes
/// also the worker's mailbox for acknowledgements.
///
/// A plain route's worker is the ``RouteWorkerPool``: the queue decides when the route is
/// *scheduled* (on the pool's lists or running) — from the push that finds it unscheduled
/// until a slice finds it empty — and tells the pusher, who hands the route to the pool. The
/// other routes have a thread of their own that waits on the queue's condition.
///
/// `block` (and `spool`, whose worker moves the backlog to disk): a full queue refuses the
/// envelope and remembers who to resume when room frees up.
/// `drop_oldest`: a full queue drops its oldest envelope to take the new one.
final class RouteQueue: @unchecked Sendable {
    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var buffer: [QueuedEnvelope?]
    private var head = 0
    private var count = 0
    private var closed = false
    private var waiters: [(instance: InstanceRuntime, port: String)] = []
    private var acks: [RouteAck] = []
    /// While set, every emit is answered "full" (the spool cannot write): the sources wait.
    private var paused = false
    /// Pooled routes: whether the route is on the pool's lists or running a slice.
    private var scheduled = false

    let capacity: Int
    let policy: OnFull
    /// Whether the worker is the pool (a plain route) rather than a thread of its own.
    let pooled: Bool

    init(capacity: Int, policy: OnFull, pooled: Bool) {
        self.capacity = capacity
        self.policy = policy
        self.pooled = pooled
        buffer = Array(repeating: nil, count: capacity)
    }

    /// Whether a blocking push would succeed now; if not, `waiter` is resumed once it would.
    func reserveRoom(orWake waiter: (instance: InstanceRuntime, port: String)) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if hasRoom { return true }
        if !waiters.contains(where: { $0.instance === waiter.instance && $0.port == waiter.port }) { waiters.append(waiter) }
        return false
    }

    /// What a push did.
    struct PushResult {
        /// Whether the envelope was queued (a full `block` queue takes nothing).
        var queued: Bool
        /// The envelope a `drop_oldest` queue dropped to make room.
        var dropped: QueuedEnvelope?
        /// Whether the push scheduled a pooled route: the pusher hands it to the pool.
        var schedule: Bool
        /// Whether the queue was closed: it takes nothing more (its worker may have ended).
        var closed = false
    }

    private static let refusedClosed = PushResult(queued: false, dropped: nil, schedule: false, closed: true)

    /// Appends when there is room (a `block` queue) or after dropping the oldest envelope
    /// (`drop_oldest`); a full `block` queue takes nothing and remembers to wake `waiter`.
    func push(_ item: QueuedEnvelope, orWake waiter: (instance: InstanceRuntime, port: String)) -> PushResult {
        // One lock for the check and the push: the worker takes the same lock, and a second
        // acquisition per envelope doubled the contention between them (futex calls).
        condition.lock()
        defer { condition.unlock() }
        if closed { return Self.refusedClosed }
        if !hasRoom {
            if !waiters.contains(where: { $0.instance === waiter.instance && $0.port == waiter.port }) { waiters.append(waiter) }
            return PushResult(queued: false, dropped: nil, schedule: false)
        }
        return insert(item)
    }

    /// Appends, dropping the oldest to make room (`drop_oldest` only). A `block` queue may go
    /// past capacity by the few envelopes of concurrent emitters that all checked
    /// ``reserveRoom(orWake:)`` at once; that keeps a fan-out emit all-or-nothing.
    func push(_ item: QueuedEnvelope) -> PushResult {
        condition.lock()
        defer { condition.unlock() }
        if closed { return Self.refusedClosed }
        return insert(item)
    }

    /// The push itself. Called with `condition` held.
    private func insert(_ item: QueuedEnvelope) -> PushResult {
        var dropped: QueuedEnvelope?
        if count == buffer.count {
            if policy == .dropOldest {
                dropped = buffer[head]
                buffer[head] = nil
                head = (head + 1) % buffer.count
                count -= 1
            } else {
                grow()
            }
        }
        buffer[(head + count) % buffer.count] = item
        count += 1
        return PushResult(queued: true, dropped: dropped, schedule: wakeWorker())
    }

    /// After a push or a close: wakes the route's own thread, or schedules a pooled route
    /// (returns true: the caller hands it to the pool). Called with `condition` held.
    private func wakeWorker() -> Bool {
        guard pooled else {
            if count == 1 || closed { condition.broadcast() }
            return false
        }
        if scheduled { return false }
        scheduled = true
        return true
    }

    /// What a pooled route's slice found: envelopes (moved into the batch), an empty queue, or a
    /// closed and empty one (the route is finished).
    enum Take {
        case taken
        case empty
        case closed
    }

    /// A pooled route's take: moves up to `limit` envelopes into `batch`. An empty queue is
    /// watched for `spins` yields of the processor first: a busy source refills it within
    /// microseconds, and the route staying scheduled spares each envelope the hand-off to the
    /// pool. The route stays scheduled either way (see ``unscheduleIfEmpty()``). Also returns
    /// the sources to resume (room freed up).
    func take(into batch: inout [QueuedEnvelope], limit: Int, spins: Int) -> (Take, resume: [(instance: InstanceRuntime, port: String)]) {
        condition.lock()
        defer { condition.unlock() }
        for _ in 0..<spins where count == 0 && !closed {
            condition.unlock()
            sched_yield()
            condition.lock()
        }
        if count == 0 { return (closed ? .closed : .empty, closed ? [] : takeWaitersIfRoom()) }
        let taken = min(limit, count)
        for _ in 0..<taken {
            if let item = buffer[head].take() { batch.append(item) }
            head = (head + 1) % buffer.count
        }
        count -= taken
        return (.taken, takeWaitersIfRoom())
    }

    private func grow() {
        var larger: [QueuedEnvelope?] = Array(repeating: nil, count: buffer.count * 2)
        for index in 0..<count { larger[index] = buffer[(head + index) % buffer.count] }
        buffer = larger
        head = 0
    }

    /// Ends a pooled route's turn on the pool when its queue is still empty and open: from then
    /// on the next push schedules it again, and another pool thread may run it at once — so
    /// the slice calls this last, after it has put its state back. False when envelopes came
    /// in (or the queue closed) since the take: the route stays scheduled and runs again.
    func unscheduleIfEmpty() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard count == 0, !closed else { return false }
        scheduled = false
        return true
    }

    /// Hands an acknowledgement to the worker, waking it.
    func post(_ ack: RouteAck) {
        condition.lock()
        acks.append(ack)
        if acks.count == 1 { condition.signal() }
        condition.unlock()
    }

    /// The at-least-once worker's wait: returns once there are acknowledgements, or envelopes
    /// and `limit` > 0, or `deadline` passed, or the queue is closed. Moves the
    /// acknowledgements into `taken` and up to `limit` envelopes (all of them once closed, so
    /// shutdown spools everything) into `batch`.
    func takeWork(
        into batch: inout [QueuedEnvelope], limit: Int, acks taken: inout [RouteAck], until deadline: ContinuousClock.Instant?
    ) -> (closed: Bool, resume: [(instance: InstanceRuntime, port: String)]) {
        condition.lock()
        defer { condition.unlock() }
        while acks.isEmpty, count == 0 || limit == 0, !closed {
            guard let deadline else {
                condition.wait()
                continue
            }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { break }
            let (seconds, attoseconds) = left.components
            _ = condition.wait(until: Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) * 1e-18))
        }
        if !acks.isEmpty { swap(&taken, &acks) }
        let taking = closed ? count : min(limit, count)
        for _ in 0..<taking {
            if let item = buffer[head].take() { batch.append(item) }
            head = (head + 1) % buffer.count
        }
        count -= taking
        return (closed, takeWaitersIfRoom())
    }

    /// Answers every emit "full" until ``unpause()``; what is queued stays queued.
    func pause() {
        condition.lock()
        paused = true
        condition.unlock()
    }

    /// Takes emits again; returns the sources to resume.
    func unpause() -> [(instance: InstanceRuntime, port: String)] {
        condition.lock()
        defer { condition.unlock() }
        paused = false
        return takeWaitersIfRoom()
    }

    /// Whether an emit would be taken now. Called with `condition` held.
    private var hasRoom: Bool { !paused && (policy == .dropOldest || count < capacity) }

    /// The sources waiting for room, once there is room (they are resumed once each).
    /// Called with `condition` held.
    private func takeWaitersIfRoom() -> [(instance: InstanceRuntime, port: String)] {
        guard hasRoom, !waiters.isEmpty else { return [] }
        defer { waiters.removeAll() }
        return waiters
    }

    /// Number of queued envelopes.
    var depth: Int {
        condition.lock()
        defer { condition.unlock() }
        return count
    }

    /// Lets the worker finish once the queue is empty; true when that scheduled a pooled route
    /// (the caller hands it to the pool).
    func close() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        closed = true
        return wakeWorker()
    }
}
