import CoreMetrics
import DequeModule
internal import Logging
internal import SwitchyardABI
internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardSpool

/// Where one spooled envelope stands at one sink of its route.
enum SpooledSinkState { case done, ready, inFlight, waiting, held }

/// A spooled envelope in the window in memory, with its state at every sink of the route.
/// Touched by the route's worker thread only.
final class SpooledEntry {
    let sequence: Int64
    let envelope: Envelope
    let size: Int
    var states: [SpooledSinkState]
    var attempts: [Int]
    /// Per sink: when the next attempt is due, while waiting.
    var due: [ContinuousClock.Instant?]
    var lastError: String?
    /// When the envelope is its route's latency sample: its emit time (``LatencyProbe``),
    /// until a sink acknowledges it `ok` or it is given up on; 0 otherwise.
    var probe: UInt64 = 0
    /// The source's settlement, held until the first delivery to every sink has ended (a
    /// `redelivers` port, see SpooledDelivery.accept); nil once settled or when not held.
    var settlement: Settlement?
    /// Sinks whose first delivery has not ended yet, while `settlement` is held.
    var firstDeliveriesPending = 0
    /// The key it is shared under once done, with a shared dedupe window (RouteDedupe).
    var dedupeKey: String?

    init(sequence: Int64, envelope: Envelope, size: Int, states: [SpooledSinkState], attempts: Int) {
        self.sequence = sequence
        self.envelope = envelope
        self.size = size
        self.states = states
        self.attempts = Array(repeating: attempts, count: states.count)
        due = Array(repeating: nil, count: states.count)
    }

    var isDone: Bool { states.allSatisfy { $0 == .done } }

    /// A first delivery to one sink ended, however: the held settlement goes once all have.
    /// The spool keeps the envelope either way; holding the settlement only means that the
    /// source's peer still has it while no sink has had a chance at it. Returns the
    /// settlement once it is due.
    func firstDeliveryEnded() -> Settlement? {
        guard let settlement else { return nil }
        firstDeliveriesPending -= 1
        guard firstDeliveriesPending <= 0 else { return nil }
        self.settlement = nil
        return settlement
    }

    /// Settles the source now (the route stops, or the entry is done).
    func settleNow() {
        settlement?.complete(SY_OUTCOME_OK)
        settlement = nil
    }
}

/// The delivering side of an at-least-once route: hands spooled envelopes to the sinks,
/// takes their acknowledgements, schedules retries and moves what is given up on to the dead
/// letters, recording every change in the route's pending spool batch.
///
/// Order per sink and subject: while an envelope waits for a retry, later envelopes with the
/// same subject for that sink are held back behind it, and envelopes of one subject waiting
/// for retries are retried one at a time, oldest first. Deliveries that were already in
/// flight when a failure came back and then succeed cannot be recalled: they overtake the
/// retried one.
///
/// Everything here runs on the route's worker thread.
final class RedeliveryScheduler {
    unowned let delivery: SpooledDelivery
    /// The window: spooled envelopes in memory, by sequence number.
    var entries: [Int64: SpooledEntry] = [:]
    private var inFlight: [UInt64: (sequence: Int64, sink: Int, since: ContinuousClock.Instant)] = [:]
    private let ackLatency: CoreMetrics.Timer
    private var retries: [(due: ContinuousClock.Instant, sequence: Int64, sink: Int)] = []
    /// Per sink: subject → envelopes of that subject waiting for a retry.
    private var blocked: [[String: Set<Int64>]]
    /// Per sink: subject → envelopes held back behind a retry, in order.
    private var held: [[String: Deque<Int64>]]
    private var randomState = SystemRandomNumberGenerator()
    /// Nanoseconds between tries of a sink standing by (0.5 to 1 times this).
    static let standingByPause = 1e9

    init(delivery: SpooledDelivery, route: RouteRuntime) {
        self.delivery = delivery
        blocked = Array(repeating: [:], count: route.sinks.count)
        held = Array(repeating: [:], count: route.sinks.count)
        ackLatency = route.router.metrics.ackLatency(route: route.name)
    }

    private var route: RouteRuntime { delivery.route }
    private var declaration: RouteDeclaration { route.plan.declaration }
    private var logger: Logger { route.router.logger }

    /// When the earliest retry is due, if one waits.
    var nextRetry: ContinuousClock.Instant? { retries.lazy.map(\.due).min() }

    func offer(_ entry: SpooledEntry, to sink: Int) {
        if let waiting = blocked[sink][entry.envelope.subject], !waiting.isEmpty {
            entry.states[sink] = .held
            held[sink][entry.envelope.subject, default: []].append(entry.sequence)
            // Behind a retry, its first delivery may be long in coming: the spool has it.
            entry.firstDeliveryEnded()?.complete(SY_OUTCOME_OK)
            return
        }
        deliver(entry, to: sink)
    }

    private func deliver(_ entry: SpooledEntry, to sink: Int) {
        let deliveryID = route.router.deliveries.nextSpooledID(route: route.index)
        inFlight[deliveryID] = (entry.sequence, sink, ContinuousClock.now)
        entry.states[sink] = .inFlight
        route.counters.inFlight.add(1, ordering: .relaxed)
        let status = route.deliverWaitingForRoom(entry.envelope, to: route.sinks[sink], deliveryID: deliveryID)
        guard status != SY_OK else {
            route.counters.sent.add(1, ordering: .relaxed)
            return
        }
        inFlight.removeValue(forKey: deliveryID)
        route.counters.inFlight.subtract(1, ordering: .relaxed)
        route.counters.refused.add(1, ordering: .relaxed)
        entry.firstDeliveryEnded()?.complete(SY_OUTCOME_OK)
        // ABI section 5: invalid and an unknown port are never retried; "stopped" (the sink is
        // being replaced) waits in the spool for the next instance without using an attempt.
        failed(
            entry, sink: sink, reason: "the sink refused the delivery (status \(status))",
            permanently: status == SY_ERR_INVALID || status == SY_ERR_UNKNOWN_PORT, countsAsAttempt: status != SY_ERR_STOPPED,
            standingBy: status == SY_ERR_STOPPED && route.sinks[sink].instance.standingBy.load(ordering: .relaxed))
    }

    func acknowledged(_ ack: RouteAck) {
        guard let (sequence, sink, since) = inFlight.removeValue(forKey: ack.deliveryID) else { return }
        route.counters.inFlight.subtract(1, ordering: .relaxed)
        let latency = since.duration(to: .now).components
        ackLatency.recordNanoseconds(latency.seconds * 1_000_000_000 + latency.attoseconds / 1_000_000_000)
        guard let entry = entries[sequence] else { return }
        // With a shared dedupe window, a delivered envelope's key is shared before its source
        // is settled: a source that confirmed it never hands it to another router unrecorded.
        if let settlement = entry.firstDeliveryEnded() {
            if ack.outcome == SY_OUTCOME_OK, entry.dedupeKey != nil {
                delivery.settleAfterSharing.append(settlement)
            } else {
                settlement.complete(SY_OUTCOME_OK)
            }
        }
        // A failed attempt keeps the sample: its latency runs until a sink's ok, retries
        // included, or ends unrecorded when the envelope is given up on (finished).
        if entry.probe != 0, ack.outcome == SY_OUTCOME_OK {
            route.latency?.finish(entry.probe, ok: true)
            entry.probe = 0
        }
        if ack.outcome == SY_OUTCOME_OK {
            route.counters.delivered.add(1, ordering: .relaxed)
            finished(entry, sink: sink)
        } else {
            route.counters.failed.add(1, ordering: .relaxed)
            let reason =
                ack.reason.isEmpty ? (ack.outcome == SY_OUTCOME_REJECT ? "rejected by the sink" : "failed at the sink") : ack.reason
            failed(entry, sink: sink, reason: reason, permanently: ack.outcome == SY_OUTCOME_REJECT)
        }
    }

    /// One sink is done with `entry` (delivered, or given up on).
    private func finished(_ entry: SpooledEntry, sink: Int) {
        if entry.probe != 0 {
            route.latency?.finish(entry.probe, ok: false)
            entry.probe = 0
        }
        entry.states[sink] = .done
        unblock(entry, sink: sink)
        if entry.isDone {
            entry.settleNow()
            if let key = entry.dedupeKey { delivery.dedupe?.delivered(key) }
            delivery.batch.deletes.append(entry.sequence)
            entries.removeValue(forKey: entry.sequence)
            route.counters.spoolBytes.subtract(entry.size, ordering: .relaxed)
        } else {
            delivery.batch.updates.append(update(for: entry))
        }
    }

    private func failed(
        _ entry: SpooledEntry, sink: Int, reason: String, permanently: Bool, countsAsAttempt: Bool = true, standingBy: Bool = false
    ) {
        if countsAsAttempt { entry.attempts[sink] += 1 }
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
            delivery.batch.deadLetters.append(
                .init(
                    sink: sinkName, envelopeID: entry.envelope.id, type: entry.envelope.type, subject: entry.envelope.subject,
                    attempts: attempts, error: reason, envelope: entry.envelope.serializedBytes()))
            finished(entry, sink: sink)
            return
        }
        route.counters.retried.add(1, ordering: .relaxed)
        entry.states[sink] = .waiting
        blocked[sink][entry.envelope.subject, default: []].insert(entry.sequence)
        // A sink standing by (another router holds it) may stay so for long, or start any
        // moment: tried again every second or so, whatever the route's backoff. A refusal that
        // used no attempt changes nothing worth writing.
        let random = Double.random(in: 0...1, using: &randomState)
        let pause =
            standingBy
            ? UInt64(Self.standingByPause * (0.5 + 0.5 * random)) : declaration.retry.pause(afterFailures: attempts, random: random)
        let due = ContinuousClock.now + .nanoseconds(Int64(clamping: pause))
        entry.due[sink] = due
        retries.append((due, entry.sequence, sink))
        if countsAsAttempt { delivery.batch.updates.append(update(for: entry)) }
    }

    private func update(for entry: SpooledEntry) -> SpoolBatch.Update {
        let pending = route.sinks.indices.filter { entry.states[$0] != .done }
        return .init(
            sequence: entry.sequence, pending: pending.map { route.sinks[$0].qualifiedName },
            attempts: pending.map { entry.attempts[$0] }.max() ?? 0, lastError: entry.lastError)
    }

    /// `entry` is resolved at `sink` (delivered or given up on): the next envelope of its
    /// subject waiting for a retry goes if it is due; when none waits any more, the envelopes
    /// held behind them go, in order.
    private func unblock(_ entry: SpooledEntry, sink: Int) {
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

    func retryDue() {
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
}
