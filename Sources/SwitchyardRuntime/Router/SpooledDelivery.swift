import CoreMetrics
import DequeModule
import Foundation
internal import Logging
internal import SwitchyardABI
internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardSpool

/// The worker of an at-least-once route.
///
/// Each turn it takes acknowledgements and queued envelopes, writes the new envelopes and
/// every finished, failed or given-up delivery to the spool in one transaction, settles the
/// sources of what it wrote, and then delivers. A window of at most `queue.size` spooled
/// envelopes is kept in memory; the rest of the backlog (after a restart, a spill with
/// `on_full: spool`, or a dead-letter replay) stays on disk and is read back in order as the
/// window empties.
///
/// Order per sink and subject: while an envelope waits for a retry, later envelopes with the
/// same subject for that sink are held back behind it, and envelopes of one subject waiting
/// for retries are retried one at a time, oldest first. Deliveries that were already in
/// flight when a failure came back and then succeed cannot be recalled: they overtake the
/// retried one.
///
/// Everything here runs on the route's worker thread; acknowledgements reach it through the
/// route queue's mailbox.
final class SpooledDelivery {
    private enum SinkState { case done, ready, inFlight, waiting, held }

    private final class Entry {
        let sequence: Int64
        let envelope: Envelope
        let size: Int
        var states: [SinkState]
        var attempts: [Int]
        /// Per sink: when the next attempt is due, while waiting.
        var due: [ContinuousClock.Instant?]
        var lastError: String?

        init(sequence: Int64, envelope: Envelope, size: Int, states: [SinkState], attempts: Int) {
            self.sequence = sequence
            self.envelope = envelope
            self.size = size
            self.states = states
            self.attempts = Array(repeating: attempts, count: states.count)
            due = Array(repeating: nil, count: states.count)
        }

        var isDone: Bool { states.allSatisfy { $0 == .done } }
    }

    let spool: Spool
    unowned var route: RouteRuntime!

    private var entries: [Int64: Entry] = [:]
    private var inFlight: [UInt64: (sequence: Int64, sink: Int, since: ContinuousClock.Instant)] = [:]
    private var ackLatency: CoreMetrics.Timer?
    private var retries: [(due: ContinuousClock.Instant, sequence: Int64, sink: Int)] = []
    /// Per sink: subject → envelopes of that subject waiting for a retry.
    private var blocked: [[String: Set<Int64>]] = []
    /// Per sink: subject → envelopes held back behind a retry, in order.
    private var held: [[String: Deque<Int64>]] = []
    /// Whether the spool holds envelopes of this route that are not in memory.
    private var diskBacklog = true
    /// The highest sequence number read or written by this worker.
    private var diskCursor: Int64 = 0
    private var nextReplayCheck = ContinuousClock.now
    private var nextSeenCleanup = ContinuousClock.now
    private var batch = SpoolBatch(route: "", time: 0, deduplicate: false)
    private var warnedSinks: Set<String> = []
    /// Set while the spool cannot write: the route takes nothing and its sources wait.
    private var spoolOutage: (since: ContinuousClock.Instant, nextProbe: ContinuousClock.Instant, pause: Duration)?
    private var randomState = SystemRandomNumberGenerator()

    init(spool: Spool) {
        self.spool = spool
    }

    private var declaration: RouteDeclaration { route.plan.declaration }
    private var logger: Logger { route.router.logger }
    private var windowLimit: Int { declaration.queueSize }

    // MARK: The loop

    func run() {
        blocked = Array(repeating: [:], count: route.sinks.count)
        held = Array(repeating: [:], count: route.sinks.count)
        ackLatency = CoreMetrics.Timer(label: "switchyard_ack_latency_seconds", dimensions: [("route", route.name)])
        batch = SpoolBatch(route: route.name, time: 0, deduplicate: declaration.dedupeWindow != nil)
        do {
            route.counters.spoolBytes.store(try spool.backlog(route: route.name).bytes, ordering: .relaxed)
        } catch {
            logger.error("spool unreadable", metadata: ["route": .string(route.name), "error": .string(error.description)])
        }
        var items: [QueuedEnvelope] = []
        var acks: [RouteAck] = []
        items.reserveCapacity(min(windowLimit, 4096))
        pageIn()
        while true {
            let taken = route.queue.takeWork(into: &items, limit: takeLimit, acks: &acks, until: nextDeadline)
            for waiter in taken.resume { waiter.instance.resume(port: waiter.port) }
            let draining = route.router.isDraining
            for ack in acks { acknowledged(ack) }
            acks.removeAll(keepingCapacity: true)
            accept(items, deliver: !draining)
            route.counters.processed.add(items.count, ordering: .releasing)
            items.removeAll(keepingCapacity: true)
            if taken.closed { break }
            if spoolOutage != nil { probeSpool() }
            if !draining {
                retryDue()
                pageIn()
                checkForReplays()
                forgetOldIDs()
            }
        }
        commit()
    }

    /// How many queued envelopes to take this turn: everything the window has room for.
    /// Each turn is one transaction and, with `spool.sync: full`, one fsync, so the batch
    /// grows with the load (a group commit): a busy route pays one fsync for up to a whole
    /// queue of envelopes, an idle one takes what is there at once.
    private var takeLimit: Int {
        if spoolOutage != nil { return 0 }
        if route.router.isDraining { return Self.drainBatch }
        if !diskBacklog, entries.count < windowLimit { return windowLimit - entries.count }
        let spills = declaration.onFull == .spool && route.counters.spoolBytes.load(ordering: .relaxed) < declaration.spoolLimit
        return spills ? windowLimit : 0
    }

    private static let drainBatch = 256

    private var nextDeadline: ContinuousClock.Instant? {
        var deadline = diskBacklog ? nil : nextReplayCheck
        for retry in retries where deadline.map({ retry.due < $0 }) ?? true { deadline = retry.due }
        if let probe = spoolOutage?.nextProbe, deadline.map({ probe < $0 }) ?? true { deadline = probe }
        return deadline
    }

    // MARK: Accepting

    /// Spools what the sources emitted, settles the sources once it is on disk, and (unless
    /// shutting down or behind a backlog) delivers it.
    private func accept(_ items: [QueuedEnvelope], deliver: Bool) {
        var accepted: [(item: QueuedEnvelope, envelope: Envelope, size: Int, sinks: [Int])] = []
        for item in items {
            guard let output = route.transformed(item.envelope) else {
                item.settlement?.complete(SY_OUTCOME_OK)
                continue
            }
            let sinks = route.targets(for: output)
            guard !sinks.isEmpty else {
                item.settlement?.complete(SY_OUTCOME_OK)
                continue
            }
            let bytes = output.serializedBytes()
            batch.inserts.append(.init(envelopeID: output.id, pending: sinks.map { route.sinks[$0].qualifiedName }, envelope: bytes))
            accepted.append((item, output, bytes.count, sinks))
        }
        guard let sequences = commit() else {
            for entry in accepted { entry.item.settlement?.complete(SY_OUTCOME_RETRY) }
            return
        }
        for (entry, sequence) in zip(accepted, sequences) {
            entry.item.settlement?.complete(SY_OUTCOME_OK)
            guard let sequence else {
                route.counters.deduplicated.add(1, ordering: .relaxed)
                continue
            }
            route.counters.spooled.add(1, ordering: .relaxed)
            route.counters.spoolBytes.add(entry.size, ordering: .relaxed)
            guard deliver, !diskBacklog, entries.count < windowLimit else {
                diskBacklog = true
                continue
            }
            let states = route.sinks.indices.map { entry.sinks.contains($0) ? SinkState.ready : .done }
            let spooled = Entry(sequence: sequence, envelope: entry.envelope, size: entry.size, states: states, attempts: 0)
            entries[sequence] = spooled
            diskCursor = max(diskCursor, sequence)
            for sink in entry.sinks { offer(spooled, to: sink) }
        }
    }

    /// Writes the pending batch. Returns the sequence numbers of its inserts, or `nil` when
    /// the spool failed (the inserts are dropped: their sources hear "retry"; the rest of
    /// the batch is kept for the next turn).
    @discardableResult
    private func commit() -> [Int64?]? {
        guard !batch.isEmpty else { return [] }
        batch.time = Clock.nowUnixNanos()
        do {
            let sequences = try spool.commit(batch)
            batch.inserts.removeAll(keepingCapacity: true)
            batch.updates.removeAll(keepingCapacity: true)
            batch.deadLetters.removeAll(keepingCapacity: true)
            batch.deletes.removeAll(keepingCapacity: true)
            return sequences
        } catch {
            let failures = route.counters.spoolFailures.add(1, ordering: .relaxed).newValue
            if failures <= 10 || failures.isMultiple(of: 100) {
                logger.error(
                    "spool write failed; the sources of \(batch.inserts.count) envelopes are told to retry",
                    metadata: ["route": .string(route.name), "spool": .string(spool.path), "error": .string(error.description)]
                )
            }
            batch.inserts.removeAll(keepingCapacity: true)
            pauseForSpool(error)
            return nil
        }
    }

    // MARK: Spool outages

    /// The spool could not write: nothing more is taken (sources hear "full" and wait) until
    /// a write succeeds again. Nothing is confirmed upstream that is not on disk.
    private func pauseForSpool(_ error: any Error) {
        guard spoolOutage == nil else { return }
        route.queue.pause()
        let now = ContinuousClock.now
        spoolOutage = (now, now + .milliseconds(50), .milliseconds(50))
        logger.error(
            "route paused: the spool cannot write; its sources wait until it can",
            metadata: ["route": .string(route.name), "spool": .string(spool.path), "error": .string("\(error)")])
    }

    /// Tries one small write when due (50 ms, doubling to 2 s): the file system gives no
    /// signal when space returns, so this retry is the only way to know.
    private func probeSpool() {
        guard let outage = spoolOutage, outage.nextProbe <= .now else { return }
        do {
            try spool.probeWrite()
        } catch {
            let pause = min(outage.pause * 2, .seconds(2))
            spoolOutage = (outage.since, .now + pause, pause)
            return
        }
        spoolOutage = nil
        commit()
        logger.notice(
            "route resumed: the spool writes again",
            metadata: ["route": .string(route.name), "paused_for": .string("\(outage.since.duration(to: .now))")])
        for waiter in route.queue.unpause() { waiter.instance.resume(port: waiter.port) }
    }

    // MARK: Delivering

    private func offer(_ entry: Entry, to sink: Int) {
        if let waiting = blocked[sink][entry.envelope.subject], !waiting.isEmpty {
            entry.states[sink] = .held
            held[sink][entry.envelope.subject, default: []].append(entry.sequence)
            return
        }
        deliver(entry, to: sink)
    }

    private func deliver(_ entry: Entry, to sink: Int) {
        let deliveryID = route.router.nextSpooledDeliveryID(route: route.index)
        inFlight[deliveryID] = (entry.sequence, sink, ContinuousClock.now)
        entry.states[sink] = .inFlight
        route.counters.inFlight.add(1, ordering: .relaxed)
        let status = route.deliverWaitingForRoom(entry.envelope, to: route.sinks[sink], deliveryID: deliveryID)
        guard status != SY_OK else {
            route.counters.dispatched.add(1, ordering: .relaxed)
            return
        }
        inFlight.removeValue(forKey: deliveryID)
        route.counters.inFlight.subtract(1, ordering: .relaxed)
        route.counters.refused.add(1, ordering: .relaxed)
        failed(entry, sink: sink, reason: "the sink refused the delivery (status \(status))", permanently: status == SY_ERR_INVALID)
    }

    private func acknowledged(_ ack: RouteAck) {
        guard let (sequence, sink, since) = inFlight.removeValue(forKey: ack.deliveryID) else { return }
        route.counters.inFlight.subtract(1, ordering: .relaxed)
        let latency = since.duration(to: .now).components
        ackLatency?.recordNanoseconds(latency.seconds * 1_000_000_000 + latency.attoseconds / 1_000_000_000)
        guard let entry = entries[sequence] else { return }
        if ack.outcome == SY_OUTCOME_OK {
            route.counters.acknowledged.add(1, ordering: .relaxed)
            finished(entry, sink: sink)
        } else {
            let reason =
                ack.reason.isEmpty ? (ack.outcome == SY_OUTCOME_REJECT ? "rejected by the sink" : "failed at the sink") : ack.reason
            failed(entry, sink: sink, reason: reason, permanently: ack.outcome == SY_OUTCOME_REJECT)
        }
    }

    /// One sink is done with `entry` (delivered, or given up on).
    private func finished(_ entry: Entry, sink: Int) {
        entry.states[sink] = .done
        unblock(entry, sink: sink)
        if entry.isDone {
            batch.deletes.append(entry.sequence)
            entries.removeValue(forKey: entry.sequence)
            route.counters.spoolBytes.subtract(entry.size, ordering: .relaxed)
        } else {
            batch.updates.append(update(for: entry))
        }
    }

    private func failed(_ entry: Entry, sink: Int, reason: String, permanently: Bool) {
        entry.attempts[sink] += 1
        entry.lastError = reason
        let attempts = entry.attempts[sink]
        let sinkName = route.sinks[sink].qualifiedName
        guard !permanently, attempts < declaration.retry.attempts else {
            let letters = route.counters.deadLettered.add(1, ordering: .relaxed).newValue
            if letters <= 10 || letters.isMultiple(of: 1000) {
                logger.warning(
                    "delivery given up, moved to the dead letters",
                    metadata: [
                        "route": .string(route.name), "sink": .string(sinkName), "envelope": .string(entry.envelope.id),
                        "attempts": .stringConvertible(attempts), "error": .string(reason),
                    ]
                )
            }
            batch.deadLetters.append(
                .init(
                    sink: sinkName, envelopeID: entry.envelope.id, type: entry.envelope.type, subject: entry.envelope.subject,
                    attempts: attempts, error: reason, envelope: entry.envelope.serializedBytes()))
            finished(entry, sink: sink)
            return
        }
        route.counters.retried.add(1, ordering: .relaxed)
        entry.states[sink] = .waiting
        blocked[sink][entry.envelope.subject, default: []].insert(entry.sequence)
        let pause = declaration.retry.pause(afterFailures: attempts, random: Double.random(in: 0...1, using: &randomState))
        let due = ContinuousClock.now + .nanoseconds(Int64(clamping: pause))
        entry.due[sink] = due
        retries.append((due, entry.sequence, sink))
        batch.updates.append(update(for: entry))
    }

    private func update(for entry: Entry) -> SpoolBatch.Update {
        let pending = route.sinks.indices.filter { entry.states[$0] != .done }
        return .init(
            sequence: entry.sequence, pending: pending.map { route.sinks[$0].qualifiedName },
            attempts: pending.map { entry.attempts[$0] }.max() ?? 0, lastError: entry.lastError)
    }

    /// `entry` is resolved at `sink` (delivered or given up on): the next envelope of its
    /// subject waiting for a retry goes if it is due; when none waits any more, the envelopes
    /// held behind them go, in order.
    private func unblock(_ entry: Entry, sink: Int) {
        let subject = entry.envelope.subject
        entry.due[sink] = nil
        guard var waiting = blocked[sink][subject], waiting.remove(entry.sequence) != nil else { return }
        if !waiting.isEmpty {
            blocked[sink][subject] = waiting
            retryOldest(subject: subject, sink: sink, now: ContinuousClock.now)
            return
        }
        blocked[sink][subject] = nil
        guard var heldBack = held[sink].removeValue(forKey: subject) else { return }
        while let sequence = heldBack.popFirst() {
            guard let next = entries[sequence], next.states[sink] == .held else { continue }
            deliver(next, to: sink)
            if blocked[sink][subject] != nil {
                // It failed at once and blocks the subject again: the rest stay held.
                held[sink][subject, default: []].append(contentsOf: heldBack)
                return
            }
        }
    }

    /// Delivers the oldest envelope of `subject` waiting for a retry at `sink`, if it is due
    /// and no retry of that subject is in flight.
    private func retryOldest(subject: String, sink: Int, now: ContinuousClock.Instant) {
        guard let waiting = blocked[sink][subject], let oldest = waiting.min(), let entry = entries[oldest],
            entry.states[sink] == .waiting, let due = entry.due[sink], due <= now
        else { return }
        deliver(entry, to: sink)
    }

    private func retryDue() {
        guard !retries.isEmpty else { return }
        let now = ContinuousClock.now
        let due = retries.filter { $0.due <= now }
        guard !due.isEmpty else { return }
        retries.removeAll { $0.due <= now }
        for retry in due {
            guard let entry = entries[retry.sequence] else { continue }
            retryOldest(subject: entry.envelope.subject, sink: retry.sink, now: now)
        }
    }

    // MARK: The backlog on disk

    /// Reads spooled envelopes beyond the window back into memory and offers them.
    private func pageIn(rescan: Bool = false) {
        guard diskBacklog || rescan, entries.count < windowLimit, !route.router.isDraining else { return }
        let room = windowLimit - entries.count
        let rows: [SpooledEnvelope]
        do {
            commit()
            rows = try spool.load(route: route.name, after: rescan ? 0 : diskCursor, limit: rescan ? entries.count + room : room)
        } catch {
            logger.error("spool unreadable", metadata: ["route": .string(route.name), "error": .string(error.description)])
            return
        }
        var loaded = 0
        for row in rows where entries[row.sequence] == nil && loaded < room {
            diskCursor = max(diskCursor, row.sequence)
            loaded += 1
            restore(row)
        }
        if !rescan, rows.count < room { diskBacklog = false }
        if rescan, loaded == room { diskBacklog = true }
    }

    private func restore(_ row: SpooledEnvelope) {
        route.counters.loadedFromSpool.add(1, ordering: .relaxed)
        let envelope: Envelope
        do {
            envelope = try Envelope(serialized: row.envelope)
        } catch {
            logger.error(
                "spooled envelope unreadable, moved to the dead letters",
                metadata: ["route": .string(route.name), "sequence": .stringConvertible(row.sequence), "error": .string(error.description)])
            batch.deadLetters.append(
                .init(
                    sink: row.pending.joined(separator: ","), envelopeID: "", type: "", subject: "", attempts: row.attempts,
                    error: "unreadable in the spool: \(error)", envelope: row.envelope))
            batch.deletes.append(row.sequence)
            route.counters.deadLettered.add(1, ordering: .relaxed)
            return
        }
        var states = Array(repeating: SinkState.done, count: route.sinks.count)
        for name in row.pending {
            if let index = route.sinks.firstIndex(where: { $0.qualifiedName == name }) {
                states[index] = .ready
            } else if warnedSinks.insert(name).inserted {
                logger.warning(
                    "spooled envelopes name a sink the route no longer has; they are not delivered there",
                    metadata: ["route": .string(route.name), "sink": .string(name)])
            }
        }
        let entry = Entry(sequence: row.sequence, envelope: envelope, size: row.envelope.count, states: states, attempts: row.attempts)
        guard !entry.isDone else {
            batch.deletes.append(row.sequence)
            route.counters.spoolBytes.subtract(entry.size, ordering: .relaxed)
            return
        }
        entries[row.sequence] = entry
        for sink in route.sinks.indices where states[sink] == .ready { offer(entry, to: sink) }
    }

    /// Dead letters replayed while the router runs land in the spool behind its back: once a
    /// second, when the route is idle, compare the spool's count with the window.
    private func checkForReplays() {
        let now = ContinuousClock.now
        guard !diskBacklog, now >= nextReplayCheck else { return }
        nextReplayCheck = now + .seconds(1)
        commit()
        guard let (count, bytes) = try? spool.backlog(route: route.name), count > entries.count else { return }
        route.counters.spoolBytes.store(bytes, ordering: .relaxed)
        pageIn(rescan: true)
    }

    private func forgetOldIDs() {
        guard let window = declaration.dedupeWindow else { return }
        let now = ContinuousClock.now
        guard now >= nextSeenCleanup else { return }
        nextSeenCleanup = now + .seconds(10)
        try? spool.forgetSeen(route: route.name, before: Clock.nowUnixNanos() - Int64(clamping: window))
    }
}
