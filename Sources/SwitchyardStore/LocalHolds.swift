import Synchronization

/// ``ListenerHolds`` inside one process, for a router without a shared store: it is then the
/// only contender, and a hold is its own to give out in turn. A name is granted at once when
/// free, otherwise when its holder releases it (first asked, first granted). Nothing is lost
/// here: a local hold ends only when released.
public final class LocalHolds: ListenerHolds {
    private struct Queue {
        var holder: LocalHold?
        var waiting: [LocalHold] = []
    }

    private let queues = Mutex<[String: Queue]>([:])

    /// An empty set of holds.
    public init() {}

    public func hold(
        _ name: String, granted: @escaping @Sendable () -> Void, lost: @escaping @Sendable () -> Void
    ) -> any ListenerHold {
        let hold = LocalHold(name: name, holds: self, granted: granted)
        let grantedNow = queues.withLock { queues in
            if queues[name]?.holder == nil {
                queues[name, default: Queue()].holder = hold
                return true
            }
            queues[name, default: Queue()].waiting.append(hold)
            return false
        }
        // Outside the lock: the holder's callback may ask for or release other holds.
        if grantedNow { granted() }
        return hold
    }

    /// Gives `hold` up and grants the next waiter, if any.
    fileprivate func release(_ hold: LocalHold) {
        let next: LocalHold? = queues.withLock { queues in
            guard var queue = queues[hold.name] else { return nil }
            queue.waiting.removeAll { $0 === hold }
            guard queue.holder === hold else {
                queues[hold.name] = queue
                return nil
            }
            queue.holder = queue.waiting.isEmpty ? nil : queue.waiting.removeFirst()
            queues[hold.name] = queue.holder == nil ? nil : queue
            return queue.holder
        }
        next?.granted()
    }
}

/// One claim on a ``LocalHolds`` name.
final class LocalHold: ListenerHold {
    let name: String
    let granted: @Sendable () -> Void
    private let holds: LocalHolds

    init(name: String, holds: LocalHolds, granted: @escaping @Sendable () -> Void) {
        self.name = name
        self.holds = holds
        self.granted = granted
    }

    func release() { holds.release(self) }
}
