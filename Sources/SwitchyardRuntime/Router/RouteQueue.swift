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
final class RouteQueue: Sendable {
    /// What the emitting threads and the worker share: the ring and who waits on it.
    private struct Ring {
        var buffer: [QueuedEnvelope?]
        var head = 0
        var count = 0
        var closed = false
        var waiters: [(instance: InstanceRuntime, port: String)] = []
        var acks: [RouteAck] = []
        /// While set, every emit is answered "full" (the spool cannot write): the sources wait.
        var paused = false
        /// Pooled routes: whether the route is on the pool's lists or running a slice.
        var scheduled = false

        /// Whether an emit would be taken now.
        func hasRoom(_ queue: RouteQueue) -> Bool { !paused && (queue.policy == .dropOldest || count < queue.capacity) }

        /// Remembers `waiter` to resume once there is room (once each).
        mutating func remember(_ waiter: (instance: InstanceRuntime, port: String)) {
            if !waiters.contains(where: { $0.instance === waiter.instance && $0.port == waiter.port }) { waiters.append(waiter) }
        }

        /// Moves up to `limit` envelopes from the head into `batch`.
        mutating func move(_ limit: Int, into batch: inout [QueuedEnvelope]) {
            let taken = min(limit, count)
            for _ in 0..<taken {
                if let item = buffer[head].take() { batch.append(item) }
                head = (head + 1) % buffer.count
            }
            count -= taken
        }

        /// The sources waiting for room, once there is room (they are resumed once each).
        mutating func takeWaitersIfRoom(_ queue: RouteQueue) -> [(instance: InstanceRuntime, port: String)] {
            guard hasRoom(queue), !waiters.isEmpty else { return [] }
            defer { waiters.removeAll() }
            return waiters
        }

        mutating func grow() {
            var larger: [QueuedEnvelope?] = Array(repeating: nil, count: buffer.count * 2)
            for index in 0..<count { larger[index] = buffer[(head + index) % buffer.count] }
            buffer = larger
            head = 0
        }
    }

    private let ring: Locked<Ring>

    let capacity: Int
    let policy: OnFull
    /// Whether the worker is the pool (a plain route) rather than a thread of its own.
    let pooled: Bool

    init(capacity: Int, policy: OnFull, pooled: Bool) {
        self.capacity = capacity
        self.policy = policy
        self.pooled = pooled
        ring = Locked(Ring(buffer: Array(repeating: nil, count: capacity)))
    }

    /// Whether a blocking push would succeed now; if not, `waiter` is resumed once it would.
    func reserveRoom(orWake waiter: (instance: InstanceRuntime, port: String)) -> Bool {
        ring.withLock { ring in
            if ring.hasRoom(self) { return true }
            ring.remember(waiter)
            return false
        }
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
        ring.withLock { ring in
            if ring.closed { return Self.refusedClosed }
            if !ring.hasRoom(self) {
                ring.remember(waiter)
                return PushResult(queued: false, dropped: nil, schedule: false)
            }
            return insert(item, into: &ring)
        }
    }

    /// Appends, dropping the oldest to make room (`drop_oldest` only). A `block` queue may go
    /// past capacity by the few envelopes of concurrent emitters that all checked
    /// ``reserveRoom(orWake:)`` at once; that keeps a fan-out emit all-or-nothing.
    func push(_ item: QueuedEnvelope) -> PushResult {
        ring.withLock { ring in
            if ring.closed { return Self.refusedClosed }
            return insert(item, into: &ring)
        }
    }

    /// The push itself, lock held.
    private func insert(_ item: QueuedEnvelope, into ring: inout Ring) -> PushResult {
        var dropped: QueuedEnvelope?
        if ring.count == ring.buffer.count {
            if policy == .dropOldest {
                dropped = ring.buffer[ring.head]
                ring.buffer[ring.head] = nil
                ring.head = (ring.head + 1) % ring.buffer.count
                ring.count -= 1
            } else {
                ring.grow()
            }
        }
        ring.buffer[(ring.head + ring.count) % ring.buffer.count] = item
        ring.count += 1
        return PushResult(queued: true, dropped: dropped, schedule: wakeWorker(&ring))
    }

    /// After a push or a close, lock held: wakes the route's own thread, or schedules a pooled
    /// route (returns true: the caller hands it to the pool).
    private func wakeWorker(_ ring: inout Ring) -> Bool {
        guard pooled else {
            if ring.count == 1 || ring.closed { self.ring.broadcast() }
            return false
        }
        if ring.scheduled { return false }
        ring.scheduled = true
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
    /// watched for up to `spins` yields of the processor first: a busy source refills it within
    /// microseconds, and the route staying scheduled spares each envelope the hand-off to the
    /// pool. The route stays scheduled either way (see ``unscheduleIfEmpty()``). Also returns
    /// how many yields it took (`spun`: a taken batch after some says watching paid) and the
    /// sources to resume (room freed up).
    func take(
        into batch: inout [QueuedEnvelope], limit: Int, spins: Int
    ) -> (Take, spun: Int, resume: [(instance: InstanceRuntime, port: String)]) {
        var spun = 0
        while true {
            let outcome: (Take, resume: [(instance: InstanceRuntime, port: String)])? = ring.withLock { ring in
                if ring.count == 0 {
                    if !ring.closed, spun < spins { return nil }
                    return (ring.closed ? .closed : .empty, ring.closed ? [] : ring.takeWaitersIfRoom(self))
                }
                ring.move(limit, into: &batch)
                return (.taken, ring.takeWaitersIfRoom(self))
            }
            if let outcome { return (outcome.0, spun, outcome.resume) }
            spun += 1
            sched_yield()
        }
    }

    /// Takes an idle pooled route for one delivery on the calling thread, past the queue: true
    /// when the queue is open, unpaused and empty and the route is not scheduled — it is then
    /// scheduled, as a push would have made it, so no pool thread runs it meanwhile and the
    /// emits that come meanwhile queue behind it. The caller ends the turn with
    /// ``unscheduleIfEmpty()``.
    func claimIfIdle() -> Bool {
        ring.withLock { ring in
            guard !ring.scheduled, ring.count == 0, !ring.closed, !ring.paused else { return false }
            ring.scheduled = true
            return true
        }
    }

    /// Ends a pooled route's turn on the pool when its queue is still empty and open: from then
    /// on the next push schedules it again, and another pool thread may run it at once — so
    /// the slice calls this last, after it has put its state back. False when envelopes came
    /// in (or the queue closed) since the take: the route stays scheduled and runs again.
    func unscheduleIfEmpty() -> Bool {
        ring.withLock { ring in
            guard ring.count == 0, !ring.closed else { return false }
            ring.scheduled = false
            return true
        }
    }

    /// Hands an acknowledgement to the worker, waking it.
    func post(_ ack: RouteAck) {
        ring.withLock { ring in
            ring.acks.append(ack)
            if ring.acks.count == 1 { self.ring.signal() }
        }
    }

    /// The at-least-once worker's wait: returns once there are acknowledgements, or envelopes
    /// and `limit` > 0, or `deadline` passed, or the queue is closed. Moves the
    /// acknowledgements into `taken` and up to `limit` envelopes (all of them once closed, so
    /// shutdown spools everything) into `batch`.
    func takeWork(
        into batch: inout [QueuedEnvelope], limit: Int, acks taken: inout [RouteAck], until deadline: ContinuousClock.Instant?
    ) -> (closed: Bool, resume: [(instance: InstanceRuntime, port: String)]) {
        ring.withLock(waitingUntil: { !$0.acks.isEmpty || ($0.count > 0 && limit > 0) || $0.closed }, deadline: deadline) { ring, _ in
            if !ring.acks.isEmpty { swap(&taken, &ring.acks) }
            ring.move(ring.closed ? ring.count : limit, into: &batch)
            return (ring.closed, ring.takeWaitersIfRoom(self))
        }
    }

    /// Waits until the queue is closed while `ends()` holds, or `deadline` has passed, for the
    /// route's own thread (a route with a thread of its own is the only waiter on the queue's
    /// condition); whether it ended before the deadline.
    func waitForClose(until deadline: ContinuousClock.Instant, ifThen ends: () -> Bool) -> Bool {
        ring.withLock(waitingUntil: { $0.closed && ends() }, deadline: deadline) { _, ended in ended }
    }

    /// Answers every emit "full" until ``unpause()``; what is queued stays queued.
    func pause() {
        ring.withLock { $0.paused = true }
    }

    /// Takes emits again; returns the sources to resume.
    func unpause() -> [(instance: InstanceRuntime, port: String)] {
        ring.withLock { ring in
            ring.paused = false
            return ring.takeWaitersIfRoom(self)
        }
    }

    /// Number of queued envelopes.
    var depth: Int { ring.withLock { $0.count } }

    /// Lets the worker finish once the queue is empty; true when that scheduled a pooled route
    /// (the caller hands it to the pool).
    func close() -> Bool {
        ring.withLock { ring in
            ring.closed = true
            return wakeWorker(&ring)
        }
    }
}
