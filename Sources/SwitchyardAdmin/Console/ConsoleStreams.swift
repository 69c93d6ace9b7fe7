import Synchronization

/// How many live views are open: each holds a connection and a task, so there is a ceiling.
final class ConsoleStreams: Sendable {
    /// The most live views open at once, across all browsers.
    static let limit = 32

    private let open = Atomic<Int>(0)

    /// Takes a place; false when all are taken.
    func enter() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < Self.limit {
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func leave() { open.subtract(1, ordering: .relaxed) }
}
