import Foundation
internal import Logging
internal import SwitchyardCore
public import SwitchyardStore

/// Exclusive instances (`exclusive: true`): with a shared store, one router at a time runs
/// each. The others create it (its configuration checked) and stand by: its sources emit
/// nothing and deliveries to it wait, as for a full sink (at-least-once routes keep them in
/// the spool). Each router waits for the instance's hold (``ListenerHolds``); the one that gets
/// it starts the instance. When the holder stops, dies or loses the store, another takes over.
///
/// Every change to the holds and every start or stop they cause happens under the reload
/// lock, so a grant never races a reload or a shutdown.
extension Router {
    /// One request for an instance's hold: its grant counts only while it is the instance's
    /// current request (a released one may still be granted on its way out).
    final class HoldRequest: Sendable {
        let hold: any ListenerHold
        init(_ hold: any ListenerHold) { self.hold = hold }
    }

    /// Tells `action`, with the instance's name, that this router lost a hold it had: another
    /// router may now run that instance. The instance is already stopped when it is called;
    /// `switchyard run` then shuts the router down (its service manager starts it again,
    /// standing by).
    public func whenHoldLost(_ action: @escaping @Sendable (String) -> Void) {
        holdLostAction.withLock { $0 = action }
    }

    /// The instances this router runs under a hold, and those it stands by for.
    public var holdStates: [(instance: String, held: Bool)] {
        holds.withLock { $0.map { ($0.key, $0.value.held) } }.sorted { $0.instance < $1.instance }
    }

    /// Whether `instance` must wait for its hold before it starts. (Without a shared store
    /// there is one router, and `exclusive` changes nothing.)
    func mustStandBy(_ instance: InstanceRuntime) -> Bool {
        guard instance.exclusive, sharedStore != nil else { return false }
        return !(holds.withLock { $0[instance.name]?.held } ?? false)
    }

    /// Asks for the hold of every exclusive instance standing by that has not asked yet. The
    /// caller holds the reload lock.
    func askForHolds() {
        guard let sharedStore else { return }
        for instance in graph.instances where instance.standingBy.load(ordering: .relaxed) {
            let name = instance.name
            guard holds.withLock({ $0[name] == nil }) else { continue }
            // The grant needs the request it answers, which exists only once hold() returns:
            // it waits for the reload lock, which the caller holds until the entry is in.
            let box = RequestBox(nil)
            let hold = sharedStore.hold(
                name,
                granted: { [weak self] in
                    guard let router = self else { return }
                    // Control work (a plugin's start) under the reload lock: off the store's event loop.
                    Thread.detachNewThread { router.takeOver(name, box) }
                },
                lost: { [weak self] in
                    guard let router = self else { return }
                    Thread.detachNewThread { router.lostHold(name, box) }
                })
            let request = HoldRequest(hold)
            box.withLock { $0 = request }
            holds.withLock { $0[name] = (request, false) }
            logger.info("exclusive instance standing by for its hold", metadata: ["instance": .string(name)])
        }
    }

    /// Releases the holds whose instance names satisfy `leaving`.
    func releaseHolds(where leaving: (String) -> Bool) {
        releaseHolds { name, _ in leaving(name) }
    }

    /// After a reload: releases the holds of instances no longer exclusive (or gone), and the
    /// place of a hold given up because its instance did not start (the reload made a new one).
    func releaseHolds(keeping exclusive: Set<String>) {
        releaseHolds { name, request in !exclusive.contains(name) || request.hold is RefusedHold }
    }

    private func releaseHolds(where leaving: (String, HoldRequest) -> Bool) {
        let released = holds.withLock { holds in
            let names = holds.filter { leaving($0.key, $0.value.request) }.map(\.key)
            return names.compactMap { holds.removeValue(forKey: $0)?.request.hold }
        }
        for hold in released { hold.release() }
    }

    /// This router got the hold of `name`: it starts the instance.
    private func takeOver(_ name: String, _ box: RequestBox) {
        reloadLock.withLock {
            let request = box.withLock { $0 }
            guard let request, holds.withLock({ $0[name]?.request === request }), !isDraining else {
                request?.hold.release()  // a stale grant: let another router have it
                return
            }
            holds.withLock { $0[name]?.held = true }
            guard let instance = graph.instances.first(where: { $0.name == name && $0.standingBy.load(ordering: .relaxed) }) else {
                return
            }
            do {
                try supervisor.start(instance)
                instance.standingBy.store(false, ordering: .relaxed)
                logger.notice("exclusive instance held: it runs on this router", metadata: ["instance": .string(name)])
                // The iiideas whose pieces it refused while standing by are asked again.
                iiideaController.askAgain(becauseOf: "instance \(name) held", { $0.contains("\(name) stands by") }) { [weak self] in
                    self?.graph
                }
            } catch {
                // Another router may do better; this one does not ask again until a reload
                // brings a new instance (asking at once would fail the same way, in a loop).
                logger.error(
                    "exclusive instance held but it did not start; giving the hold up",
                    metadata: ["instance": .string(name), "error": .string("\(error)")])
                releaseHolds { $0 == name }
                holds.withLock { $0[name] = (HoldRequest(RefusedHold()), false) }
            }
        }
    }

    /// This router lost the hold of `name`: the instance stops at once (another router may
    /// start it any moment), then the router is told.
    private func lostHold(_ name: String, _ box: RequestBox) {
        let current = reloadLock.withLock { () -> Bool in
            guard let request = box.withLock({ $0 }), holds.withLock({ $0[name]?.request === request }) else { return false }
            holds.withLock { _ = $0.removeValue(forKey: name) }
            for instance in graph.instances where instance.name == name && !instance.standingBy.load(ordering: .relaxed) {
                instance.stopPlugin()
            }
            return true
        }
        guard current else { return }
        logger.critical(
            "exclusive instance: this router lost its hold and stopped it; another router may run it now",
            metadata: ["instance": .string(name)])
        holdLostAction.withLock { $0 }?(name)
    }
}

/// Where a hold's callbacks find the request they answer, set once `hold()` returned (the
/// callbacks take the router's reload lock first, which the asker holds until it is set).
typealias RequestBox = Locked<Router.HoldRequest?>

/// The place of a hold this router gave up after its instance failed to start: it keeps the
/// instance from asking again until a reload replaces it.
final class RefusedHold: ListenerHold {
    func release() {}
}
