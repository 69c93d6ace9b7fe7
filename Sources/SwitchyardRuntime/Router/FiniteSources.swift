import Foundation
import Synchronization

/// The source ports that said they will emit nothing more (ABI `source_done`), and the one
/// waiting to hear when all of them have and the router has drained (`run --exit-when-done`).
final class FiniteSources: Sendable {
    private struct State {
        var done: Set<String> = []
        var waiter: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    /// Notes `instance.port` as done; true when it was not yet.
    func done(_ port: String) -> Bool { state.withLock { $0.done.insert(port).inserted } }

    /// Whether every port of `ports` is done.
    func allDone(_ ports: Set<String>) -> Bool { state.withLock { ports.isSubset(of: $0.done) } }

    /// Keeps `waiter` until ``takeWaiter()``.
    func wait(_ waiter: @escaping @Sendable () -> Void) { state.withLock { $0.waiter = waiter } }

    /// The waiter, once: whoever takes it calls it.
    func takeWaiter() -> (@Sendable () -> Void)? {
        state.withLock { state in
            defer { state.waiter = nil }
            return state.waiter
        }
    }

    var hasWaiter: Bool { state.withLock { $0.waiter != nil } }
}

extension Router {
    /// `instance`'s source `port` will emit nothing more (the host's `source_done`).
    func sourceDone(instance: String, port: String) {
        guard finiteSources.done("\(instance).\(port)") else { return }
        logger.info("source done: it will emit nothing more", metadata: ["instance": .string(instance), "port": .string(port)])
        checkFiniteSources()
    }

    /// Calls `finished` (once, on a thread of its own) when every source port the routes and
    /// iiideas read has said it is done and everything they accepted has been delivered: what
    /// `run --exit-when-done` stops on. A graph that reads no source is done at once.
    public func whenSourcesFinish(_ finished: @escaping @Sendable () -> Void) {
        finiteSources.wait(finished)
        checkFiniteSources()
    }

    /// The source ports the graph reads, as `instance.port`.
    var readSources: Set<String> {
        let plan = graph.plan
        return Set(
            plan.routes.map(\.declaration.from.value.description)
                + plan.iiideas.flatMap { [$0.route.declaration.from.value.description] })
    }

    private func checkFiniteSources() {
        guard finiteSources.hasWaiter, finiteSources.allDone(readSources), let finished = finiteSources.takeWaiter() else { return }
        let thread = Thread { [self] in
            // Woken by every step that lowers the outstanding count; no deadline: a sink that
            // never answers keeps the router running, as it would without the flag.
            _ = drainProgress.wait(until: .now + .seconds(10 * 365 * 86400)) { outstanding > 0 }
            logger.notice("every source is done and everything it sent was delivered: stopping (--exit-when-done)")
            finished()
        }
        thread.name = "switchyard.exit-when-done"
        thread.start()
    }
}
