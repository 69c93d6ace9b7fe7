import Synchronization

/// Tells whoever listens (the console's live run view) that an iiidea run started or ended.
/// Publishing with nobody listening takes one lock and allocates nothing.
public final class RunFeed: Sendable {
    /// A run that started or ended.
    public struct Event: Sendable, Equatable {
        /// The iiidea.
        public let iiidea: String
        /// The run id.
        public let run: String
    }

    private let listeners = Mutex<[UInt64: AsyncStream<Event>.Continuation]>([:])
    private let nextListener = Atomic<UInt64>(0)

    init() {}

    /// A stream of the events from now on; it keeps the newest 256 a slow reader has not
    /// taken. Ends when the reader stops iterating.
    public func subscribe() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
        let id = nextListener.add(1, ordering: .relaxed).newValue
        continuation.onTermination = { [weak self] _ in
            self?.listeners.withLock { _ = $0.removeValue(forKey: id) }
        }
        listeners.withLock { $0[id] = continuation }
        return stream
    }

    func publish(iiidea: String, run: String) {
        listeners.withLock { listeners in
            guard !listeners.isEmpty else { return }
            let event = Event(iiidea: iiidea, run: run)
            for continuation in listeners.values { continuation.yield(event) }
        }
    }
}
