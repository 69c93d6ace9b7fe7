import Dispatch
internal import Logging
import SwitchyardSpool
import SwitchyardStore
import Synchronization

/// Moves dead letters from the router's spool to the shared store, one hand-over at a time on
/// its own queue (never on a route's thread: the store may be slow or away). While the store
/// cannot take them they stay in the spool, and the hand-over is tried again every few
/// seconds; nothing is lost meanwhile, they are only not yet visible from other routers.
final class DeadLetterCourier: Sendable {
    /// How long after a failed hand-over the next is tried.
    static let retryDelay: DispatchTimeInterval = .seconds(5)

    private let shared: any SharedDeadLetterStore
    private let logger: Logger
    private let queue = DispatchQueue(label: "switchyard.dead-letters")
    /// Set while a hand-over is queued and has not begun: more requests add nothing.
    private let queued = Atomic<Bool>(false)
    private let failures = Atomic<Int>(0)

    init(shared: any SharedDeadLetterStore, logger: Logger) {
        self.shared = shared
        self.logger = logger
    }

    /// Queues a hand-over of the dead letters in `spool`, unless one is queued already.
    func handOver(from spool: Spool) {
        guard !queued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { self.run(spool) }
    }

    private func run(_ spool: Spool) {
        queued.store(false, ordering: .releasing)
        do {
            let moved = try SharedDeadLetters(shared: shared, spool: spool).handOver()
            if moved > 0 { logger.debug("dead letters handed to the shared store", metadata: ["count": .stringConvertible(moved)]) }
            failures.store(0, ordering: .relaxed)
        } catch {
            let count = failures.add(1, ordering: .relaxed).newValue
            if count <= 3 || count.isMultiple(of: 100) {
                logger.warning(
                    "dead letters stay in the spool until the shared store takes them; trying again",
                    metadata: ["store": .string(shared.location), "error": .string(error.description)])
            }
            queue.asyncAfter(deadline: .now() + Self.retryDelay) { self.handOver(from: spool) }
        }
    }
}
