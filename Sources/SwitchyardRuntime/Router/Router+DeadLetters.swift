import Dispatch
internal import Logging
public import SwitchyardSpool
public import SwitchyardStore
import Synchronization

extension Router {
    /// Where people list, show, replay and drop dead letters: with a shared store, the dead
    /// letters of every router sharing it (a replay comes back through `spool`, this router's);
    /// else `spool` itself.
    public func deadLetters(of spool: Spool) -> any DeadLetterStore {
        guard let sharedStore else { return spool }
        return SharedDeadLetters(shared: sharedStore, spool: spool)
    }

    /// A route committed dead letters to the spool: with a shared store, they are handed on.
    func deadLettersWritten() {
        guard let deadLetterCourier, let spool else { return }
        deadLetterCourier.handOver(from: spool)
    }
}
