import Foundation
internal import Logging
internal import SwitchyardABI
internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardScript
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
/// Delivering, acknowledgements, retries and their order are the ``RedeliveryScheduler``'s.
///
/// The route's worker thread makes it and is the only one to touch it (it is not `Sendable`);
/// acknowledgements reach it through the route queue's mailbox.
final class SpooledDelivery {
    let spool: Spool
    unowned let route: RouteRuntime

    /// Made when the worker starts (it needs the route).
    private var scheduler: RedeliveryScheduler!
    /// Whether the spool holds envelopes of this route that are not in memory.
    private var diskBacklog = true
    /// The highest sequence number read or written by this worker.
    private var diskCursor: Int64 = 0
    private var nextReplayCheck = ContinuousClock.now
    /// The route's `dedupe:` (made when the worker starts); nil without one.
    private(set) var dedupe: RouteDedupe?
    /// Sources of envelopes delivered this turn whose keys are shared first (RedeliveryScheduler).
    var settleAfterSharing: [Settlement] = []
    /// The next transaction: what was accepted, and every delivery change the scheduler made.
    var batch = SpoolBatch(route: "", time: 0, deduplicate: false)
    private var warnedSinks: Set<String> = []
    /// Set while the spool cannot write: the route takes nothing and its sources wait.
    private var spoolOutage: (since: ContinuousClock.Instant, nextProbe: ContinuousClock.Instant, pause: Duration)?

    init(spool: Spool, route: RouteRuntime) {
        self.spool = spool
        self.route = route
    }

    private var declaration: RouteDeclaration { route.plan.declaration }
    private var logger: Logger { route.router.logger }
    private var windowLimit: Int { declaration.queueSize }

    // MARK: The loop

    func run() {
        scheduler = RedeliveryScheduler(delivery: self, route: route)
        batch = SpoolBatch(route: route.name, time: 0, deduplicate: declaration.dedupeWindow != nil)
        dedupe = RouteDedupe(route: route.plan, shared: route.router.sharedStore, logger: logger)
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
            for ack in acks { scheduler.acknowledged(ack) }
            acks.removeAll(keepingCapacity: true)
            accept(items, deliver: !draining)
            shareDeliveredKeys()
            route.counters.processed.add(items.count, ordering: .sequentiallyConsistent)
            route.router.drainProgress.signal()
            items.removeAll(keepingCapacity: true)
            if taken.closed { break }
            if spoolOutage != nil { probeSpool() }
            if !draining {
                scheduler.retryDue()
                pageIn()
                checkForReplays()
                dedupe?.forgetOld(in: spool)
            }
        }
        commit()
        shareDeliveredKeys()
        // Nothing more is delivered here: a settlement still held goes now (spooled, the
        // envelope is this router's to deliver after a restart).
        for entry in scheduler.entries.values { entry.settleNow() }
    }

    /// Shares the keys of what was delivered this turn, then settles the sources that waited
    /// for it (settled even when the store failed: the spool keeps the envelope, and a
    /// redelivery elsewhere is then a duplicate, not a loss).
    private func shareDeliveredKeys() {
        dedupe?.shareDelivered()
        for settlement in settleAfterSharing { settlement.complete(SY_OUTCOME_OK) }
        settleAfterSharing.removeAll(keepingCapacity: true)
    }

    /// How many queued envelopes to take this turn: everything the window has room for.
    /// Each turn is one transaction and, with `spool.sync: full`, one fsync, so the batch
    /// grows with the load (a group commit): a busy route pays one fsync for up to a whole
    /// queue of envelopes, an idle one takes what is there at once.
    private var takeLimit: Int {
        if spoolOutage != nil { return 0 }
        if route.router.isDraining { return Self.drainBatch }
        if !diskBacklog, scheduler.entries.count < windowLimit { return windowLimit - scheduler.entries.count }
        let spills = declaration.onFull == .spool && route.counters.spoolBytes.load(ordering: .relaxed) < declaration.spoolLimit
        return spills ? windowLimit : 0
    }

    private static let drainBatch = 256

    private var nextDeadline: ContinuousClock.Instant? {
        var deadline = diskBacklog ? nil : nextReplayCheck
        if let retry = scheduler.nextRetry, deadline.map({ retry < $0 }) ?? true { deadline = retry }
        if let probe = spoolOutage?.nextProbe, deadline.map({ probe < $0 }) ?? true { deadline = probe }
        return deadline
    }

    // MARK: Accepting

    /// Spools what the sources emitted, settles the sources once it is on disk, and (unless
    /// shutting down or behind a backlog) delivers it.
    private func accept(_ items: [QueuedEnvelope], deliver: Bool) {
        // One row per envelope the route sends; `settles` on the last of an item's, whose
        // source is answered once all of them are on disk (they commit in one transaction).
        var accepted: [(item: QueuedEnvelope, envelope: Envelope, size: Int, sinks: [Int], first: Bool, settles: Bool)] = []
        var settledByCommit: [QueuedEnvelope] = []
        for item in items {
            var rows = 0
            let key = dedupe?.key(of: item.envelope)
            /// Spools one envelope the route sends for `item`, unless no sink may take it.
            func spool(_ output: Envelope) {
                let sinks = route.targets(for: output)
                guard !sinks.isEmpty else { return }
                let bytes = output.serializedBytes()
                // The later outputs of one arrival are told apart as derived ids are (ID.2, …).
                let seenAs = key.map { rows == 0 ? $0 : "\($0).\(rows + 1)" } ?? output.id
                batch.inserts.append(.init(envelopeID: seenAs, pending: sinks.map { route.sinks[$0].qualifiedName }, envelope: bytes))
                accepted.append((item, output, bytes.count, sinks, rows == 0, false))
                rows += 1
            }
            // The common case, one envelope, spools without an array in between.
            switch route.outcome(for: item.envelope) {
            case .filtered: break
            case .one(let output): spool(output)
            case .many(let outputs): for output in outputs { spool(output) }
            case .failed(let failure):
                // The envelope as it came, kept with the script's error: a replay runs the
                // script on it again (see restore).
                abandonProbe(of: item)
                deadLetterScriptFailure(item.envelope, failure)
                settledByCommit.append(item)
                continue
            }
            if rows == 0 {
                abandonProbe(of: item)
                item.settlement?.complete(SY_OUTCOME_OK)
            } else {
                accepted[accepted.count - 1].settles = true
            }
        }
        let seenAs = dedupe?.isShared == true ? batch.inserts.map(\.envelopeID) : []
        guard let sequences = commit() else {
            for entry in accepted {
                if entry.first { abandonProbe(of: entry.item) }
                if entry.settles { entry.item.settlement?.complete(SY_OUTCOME_RETRY) }
            }
            for item in settledByCommit { item.settlement?.complete(SY_OUTCOME_RETRY) }
            return
        }
        for item in settledByCommit { item.settlement?.complete(SY_OUTCOME_OK) }
        let elsewhere = sharedDuplicates(seenAs, sequences)
        for (index, (entry, sequence)) in zip(accepted, sequences).enumerated() {
            // A `redelivers` source is settled once the first deliveries have ended, when the
            // envelope goes out now; otherwise, as every other, once it is on disk.
            let holdsSettlement = entry.settles && entry.item.settlement?.afterDelivery == true
            if entry.settles, !holdsSettlement { entry.item.settlement?.complete(SY_OUTCOME_OK) }
            guard let sequence, !elsewhere.contains(index) else {
                if holdsSettlement { entry.item.settlement?.complete(SY_OUTCOME_OK) }
                if entry.first { abandonProbe(of: entry.item) }
                route.counters.deduplicated.add(1, ordering: .relaxed)
                // Another router delivered it already: spooled here, it goes with the next commit.
                if let sequence { batch.deletes.append(sequence) }
                continue
            }
            route.counters.spooled.add(1, ordering: .relaxed)
            route.counters.spoolBytes.add(entry.size, ordering: .relaxed)
            guard deliver, !diskBacklog, scheduler.entries.count < windowLimit else {
                if holdsSettlement { entry.item.settlement?.complete(SY_OUTCOME_OK) }
                if entry.first { abandonProbe(of: entry.item) }
                diskBacklog = true
                continue
            }
            let states = route.sinks.indices.map { entry.sinks.contains($0) ? SpooledSinkState.ready : .done }
            let spooled = SpooledEntry(sequence: sequence, envelope: entry.envelope, size: entry.size, states: states, attempts: 0)
            if holdsSettlement {
                spooled.settlement = entry.item.settlement
                spooled.firstDeliveriesPending = entry.sinks.count
            }
            if !seenAs.isEmpty { spooled.dedupeKey = seenAs[index] }
            // The latency sample rides on the item's first row only.
            if entry.first { spooled.probe = entry.item.probe }
            scheduler.entries[sequence] = spooled
            diskCursor = max(diskCursor, sequence)
            for sink in entry.sinks { scheduler.offer(spooled, to: sink) }
        }
    }

    /// The pending name of a dead letter whose envelope the script failed on: not a sink, so
    /// a replay runs the script again instead of delivering it as it is.
    static let scriptStage = "(script)"

    /// Keeps `envelope` as a dead letter with the script's error (written with the batch).
    private func deadLetterScriptFailure(_ envelope: Envelope, _ failure: ScriptFailure) {
        route.counters.deadLettered.add(1, ordering: .relaxed)
        batch.deadLetters.append(
            .init(
                sink: Self.scriptStage, envelopeID: envelope.id, type: envelope.type, subject: envelope.subject, attempts: 1,
                error: "script: " + failure.message, envelope: envelope.serializedBytes()))
    }

    /// An envelope that will not be delivered now gives its latency sample back.
    private func abandonProbe(of item: QueuedEnvelope) {
        if item.probe != 0 { route.latency?.finish(item.probe, ok: false) }
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
            if !batch.deadLetters.isEmpty { route.router.deadLettersWritten() }
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

    /// The positions of the rows just spooled whose key a router sharing the store has
    /// delivered already (`seenAs`: each row's key, in order; `sequences`: nil for a row the
    /// spool already knew).
    private func sharedDuplicates(_ seenAs: [String], _ sequences: [Int64?]) -> Set<Int> {
        guard let dedupe, !seenAs.isEmpty, seenAs.count == sequences.count else { return [] }
        let fresh = zip(seenAs, sequences).compactMap { key, sequence in sequence == nil ? nil : key }
        let seen = dedupe.seenElsewhere(fresh)
        guard !seen.isEmpty else { return [] }
        return Set(seenAs.indices.filter { sequences[$0] != nil && seen.contains(seenAs[$0]) })
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

    // MARK: The backlog on disk

    /// Reads spooled envelopes beyond the window back into memory and offers them.
    private func pageIn(rescan: Bool = false) {
        guard diskBacklog || rescan, scheduler.entries.count < windowLimit, !route.router.isDraining else { return }
        let room = windowLimit - scheduler.entries.count
        let rows: [SpooledEnvelope]
        // Acknowledged envelopes whose delete could not be committed yet (a full disk) are still
        // on disk: read now, they would be delivered a second time.
        guard commit() != nil, batch.deletes.isEmpty else { return }
        do {
            rows = try spool.load(route: route.name, after: rescan ? 0 : diskCursor, limit: rescan ? scheduler.entries.count + room : room)
        } catch {
            logger.error("spool unreadable", metadata: ["route": .string(route.name), "error": .string(error.description)])
            return
        }
        var loaded = 0
        var reruns: [QueuedEnvelope] = []
        for row in rows where scheduler.entries[row.sequence] == nil && loaded < room {
            diskCursor = max(diskCursor, row.sequence)
            loaded += 1
            if let envelope = restore(row) { reruns.append(QueuedEnvelope(envelope: envelope, settlement: nil)) }
        }
        if !rescan, rows.count < room { diskBacklog = false }
        if rescan, loaded == room { diskBacklog = true }
        // Replayed envelopes the script had failed on: the script runs on them again and what
        // it sends is spooled (their old rows deleted in the same commit) and delivered when the
        // window has room and nothing older waits on disk (accept checks both).
        if !reruns.isEmpty { accept(reruns, deliver: !route.router.isDraining) }
    }

    /// Puts a row read from the spool back in the delivery window; returns the envelope when
    /// the row waits for the script (a replayed script failure) instead of a sink.
    private func restore(_ row: SpooledEnvelope) -> Envelope? {
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
            return nil
        }
        if row.pending.contains(Self.scriptStage), route.plan.script != nil {
            batch.deletes.append(row.sequence)
            route.counters.spoolBytes.subtract(row.envelope.count, ordering: .relaxed)
            return envelope
        }
        var states = Array(repeating: SpooledSinkState.done, count: route.sinks.count)
        for name in row.pending {
            if let index = route.sinks.firstIndex(where: { $0.qualifiedName == name }) {
                states[index] = .ready
            } else if warnedSinks.insert(name).inserted {
                logger.warning(
                    "spooled envelopes name a sink the route no longer has; they are not delivered there",
                    metadata: ["route": .string(route.name), "sink": .string(name)])
            }
        }
        let entry = SpooledEntry(
            sequence: row.sequence, envelope: envelope, size: row.envelope.count, states: states, attempts: row.attempts)
        guard !entry.isDone else {
            batch.deletes.append(row.sequence)
            route.counters.spoolBytes.subtract(entry.size, ordering: .relaxed)
            return nil
        }
        scheduler.entries[row.sequence] = entry
        for sink in route.sinks.indices where states[sink] == .ready { scheduler.offer(entry, to: sink) }
        return nil
    }

    /// Dead letters replayed while the router runs land in the spool behind its back: once a
    /// second, when the route is idle, compare the spool's count with the window.
    private func checkForReplays() {
        let now = ContinuousClock.now
        guard !diskBacklog, now >= nextReplayCheck else { return }
        nextReplayCheck = now + .seconds(1)
        // Undeleted acknowledged rows would count as replays (see pageIn).
        guard commit() != nil, batch.deletes.isEmpty else { return }
        guard let (count, bytes) = try? spool.backlog(route: route.name), count > scheduler.entries.count else { return }
        route.counters.spoolBytes.store(bytes, ordering: .relaxed)
        pageIn(rescan: true)
    }

}
