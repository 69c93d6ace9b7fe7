import CCycloneDDS
import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#endif

/// Sends what writers batched: one wake-up flushes every sample written since the last one.
///
/// Writers of a participant that has a flusher write in Cyclone's batch mode (`WriteBatch`):
/// `dds_write` puts the sample into the writer history and its packet without a `sendmsg`.
/// ``noteWritten(_:)`` wakes the flusher thread, which calls `dds_write_flush` on each writer
/// written to; samples written while it flushes go out with its next round. An idle writer's
/// sample leaves after one thread wake-up; under load one datagram carries as many samples as
/// arrived meanwhile (up to Cyclone's message size), where each sample took its own `sendmsg`
/// before. A writer blocked on reliability (a full history) sends its packet itself first
/// (Cyclone's throttling does), so batching never holds a write back.
///
/// The thread starts on the first write, so a participant that never writes has none, and
/// stops when the flusher is released (after flushing what is left).
public final class DDSFlusher: Sendable {
    private let core = Core()

    public init() {}

    /// `writer` has batched samples to send.
    func noteWritten(_ writer: dds_entity_t) { core.noteWritten(writer) }

    deinit { core.stop() }

    /// The state the thread shares with writers.
    private final class Core: Sendable {
        private struct Pending {
            /// Writers with unsent samples (a handful: one per topic written).
            var dirty: [dds_entity_t] = []
            var stopping = false
            var thread: pthread_t?
        }

        private let pending = Locked(Pending())

        func noteWritten(_ writer: dds_entity_t) {
            pending.withLock { pending in
                if !pending.dirty.contains(writer) { pending.dirty.append(writer) }
                if pending.thread == nil, !pending.stopping {
                    guard let thread = startThread() else {
                        // No thread (out of resources): send now rather than never.
                        pending.dirty.removeAll { $0 == writer }
                        dds_write_flush(writer)
                        return
                    }
                    pending.thread = thread
                }
                if pending.dirty.count == 1 { self.pending.signal() }
            }
        }

        /// Starts the thread (lock held); nil when the system has none to give.
        private func startThread() -> pthread_t? {
            var created = pthread_t()
            let argument = Unmanaged.passRetained(self).toOpaque()
            let status = pthread_create(
                &created, nil,
                { argument in
                    guard let argument else { return nil }
                    let core = Unmanaged<Core>.fromOpaque(argument).takeRetainedValue()
                    core.run()
                    return nil
                }, argument)
            guard status == 0 else {
                Unmanaged<Core>.fromOpaque(argument).release()
                return nil
            }
            qeo_name_thread(created, "qeo-flush")  // named here, so it has its name once this returns
            return created
        }

        private func run() {
            while true {
                let writers: [dds_entity_t]? = pending.withLock(waitingUntil: { !$0.dirty.isEmpty || $0.stopping }) { pending, _ in
                    if pending.dirty.isEmpty { return nil }  // stopping, and everything sent
                    defer { pending.dirty.removeAll(keepingCapacity: true) }
                    return pending.dirty
                }
                guard let writers else { return }
                // A writer deleted meanwhile fails its own lookup in Cyclone: nothing is sent.
                for writer in writers { dds_write_flush(writer) }
            }
        }

        /// Sends what is left and ends the thread.
        func stop() {
            let running = pending.withLock { pending in
                pending.stopping = true
                self.pending.signal()
                return pending.thread
            }
            if let running { pthread_join(running, nil) }
        }
    }
}
