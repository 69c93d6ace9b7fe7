package import SwitchyardSpool
import Synchronization

/// What the router's collaborators read of it: the running graph, the spool and whether a
/// shutdown has begun. The router owns the changes (start, reload, attach, shutdown); its
/// iiideas read the same state without holding the router itself.
package final class RunningGraph: Sendable {
    /// The running graph, replaced whole (one assignment under the mutex) by start and reload.
    private let current: Mutex<CompiledGraph>
    /// The spool of at-least-once routes and the iiideas' state.
    private let openSpool: Mutex<Spool?>
    private let draining = Atomic<Bool>(false)

    init(plan: GraphPlan, spool: Spool?) {
        current = Mutex(.empty(plan))
        openSpool = Mutex(spool)
    }

    /// The running graph (a snapshot: its plan, instances and routes belong together).
    package var graph: CompiledGraph { current.withLock { $0 } }

    /// Makes `graph` the running one.
    func install(_ graph: CompiledGraph) { current.withLock { $0 = graph } }

    /// The spool, once one is open.
    package var spool: Spool? {
        get { openSpool.withLock { $0 } }
        set { openSpool.withLock { $0 = newValue } }
    }

    /// Whether shutdown has begun: at-least-once routes then only spool what arrives.
    package var isDraining: Bool { draining.load(ordering: .relaxed) }

    /// Marks the start of a shutdown.
    func startDraining() { draining.store(true, ordering: .relaxed) }
}
