import CCycloneDDS

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

    /// The state the thread shares with writers. `@unchecked Sendable`: `mutex` guards `dirty`,
    /// `waiting`, `thread` and `stopping`; `wake` is signalled under it.
    private final class Core: @unchecked Sendable {
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        /// Writers with unsent samples (a handful: one per topic written).
        private var dirty: [dds_entity_t] = []
        private var waiting = false
        private var stopping = false
        private var thread: pthread_t?

        init() {
            pthread_mutex_init(mutex, nil)
            pthread_cond_init(wake, nil)
        }

        deinit {
            pthread_cond_destroy(wake)
            pthread_mutex_destroy(mutex)
            wake.deallocate()
            mutex.deallocate()
        }

        func noteWritten(_ writer: dds_entity_t) {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            if !dirty.contains(writer) { dirty.append(writer) }
            if thread == nil, !stopping, !startThread() {
                // No thread (out of resources): send now rather than never.
                dirty.removeAll { $0 == writer }
                dds_write_flush(writer)
                return
            }
            if waiting { pthread_cond_signal(wake) }
        }

        /// Starts the thread; called with `mutex` held.
        private func startThread() -> Bool {
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
                return false
            }
            qeo_name_thread(created, "qeo-flush")  // named here, so it has its name once this returns
            thread = created
            return true
        }

        private func run() {
            pthread_mutex_lock(mutex)
            while true {
                while dirty.isEmpty, !stopping {
                    waiting = true
                    pthread_cond_wait(wake, mutex)
                    waiting = false
                }
                if dirty.isEmpty { break }  // stopping, and everything sent
                let writers = dirty
                dirty.removeAll(keepingCapacity: true)
                pthread_mutex_unlock(mutex)
                // A writer deleted meanwhile fails its own lookup in Cyclone: nothing is sent.
                for writer in writers { dds_write_flush(writer) }
                pthread_mutex_lock(mutex)
            }
            pthread_mutex_unlock(mutex)
        }

        /// Sends what is left and ends the thread.
        func stop() {
            pthread_mutex_lock(mutex)
            stopping = true
            let running = thread
            pthread_cond_signal(wake)
            pthread_mutex_unlock(mutex)
            if let running { pthread_join(running, nil) }
        }
    }
}
