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

    /// Keeps `waiter` until ``takeWaiter(ifAllDone:)`` hands it out.
    func wait(_ waiter: @escaping @Sendable () -> Void) { state.withLock { $0.waiter = waiter } }

    /// The waiter, once every port of `ports` is done — once: whoever takes it calls it.
    func takeWaiter(ifAllDone ports: Set<String>) -> (@Sendable () -> Void)? {
        state.withLock { state in
            guard ports.isSubset(of: state.done) else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
    }
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
            (plan.routes + plan.iiideas.map(\.route)).map(\.declaration.from.value.description))
    }

    private func checkFiniteSources() {
        guard let finished = finiteSources.takeWaiter(ifAllDone: readSources) else { return }
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
