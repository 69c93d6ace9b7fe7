import Foundation
internal import Logging
internal import SwitchyardCore
internal import SwitchyardStore
import Synchronization

/// Exclusive instances (`exclusive: true`): with a shared store, one router at a time runs
/// each. The others create it (its configuration checked) and stand by: its sources emit
/// nothing and deliveries to it wait, as for a full sink (at-least-once routes keep them in
/// the spool). Each router waits for the instance's hold (``ListenerHolds``); the one that gets
/// it starts the instance. When the holder stops, dies or loses the store, another takes over.
///
/// It owns the requests for holds and what this router has of them; the router it serves is
/// handed to each call, so a grant that arrives after the router is gone finds nothing to start.
/// Every change to the holds and every start or stop they cause happens under the router's
/// reload lock, so a grant never races a reload or a shutdown.
public final class ExclusiveHolds: Sendable {
    /// One request for an instance's hold: its grant counts only while it is the instance's
    /// current request (a released one may still be granted on its way out).
    final class HoldRequest: Sendable {
        let hold: any ListenerHold
        init(_ hold: any ListenerHold) { self.hold = hold }
    }

    /// Where holds are asked for: the shared store (without one there is one router, and
    /// `exclusive` changes nothing).
    private let store: (any ListenerHolds)?
    private let logger: Logger
    /// The holds on exclusive instances, by instance name, and whether this router has each.
    private let requests = Mutex<[String: (request: HoldRequest, held: Bool)]>([:])
    /// What to do when this router loses a hold it had (see ``whenLost(_:)``).
    private let lostAction = Mutex<(@Sendable (String) -> Void)?>(nil)

    init(store: (any ListenerHolds)?, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Tells `action`, with the instance's name, that this router lost a hold it had: another
    /// router may now run that instance. The instance is already stopped when it is called;
    /// `switchyard run` then shuts the router down (its service manager starts it again,
    /// standing by).
    public func whenLost(_ action: @escaping @Sendable (String) -> Void) {
        lostAction.withLock { $0 = action }
    }

    /// The instances this router runs under a hold, and those it stands by for.
    public var states: [(instance: String, held: Bool)] {
        requests.withLock { $0.map { ($0.key, $0.value.held) } }.sorted { $0.instance < $1.instance }
    }

    /// Whether `instance` must wait for its hold before it starts. (Without a shared store
    /// there is one router, and `exclusive` changes nothing.)
    func mustStandBy(_ instance: InstanceRuntime) -> Bool {
        guard instance.exclusive, store != nil else { return false }
        return !(requests.withLock { $0[instance.name]?.held } ?? false)
    }

    /// Asks for the hold of every exclusive instance of `router` standing by that has not
    /// asked yet. The caller holds the router's reload lock.
    func askForHolds(of router: Router) {
        guard let store else { return }
        for instance in router.graph.instances where instance.standingBy.load(ordering: .relaxed) {
            let name = instance.name
            guard requests.withLock({ $0[name] == nil }) else { continue }
            // The grant needs the request it answers, which exists only once hold() returns:
            // it waits for the reload lock, which the caller holds until the entry is in.
            let box = RequestBox(nil)
            let hold = store.hold(
                name,
                granted: { [weak self, weak router] in
                    guard let holds = self, let router else { return }
                    // Control work (a plugin's start) under the reload lock: off the store's event loop.
                    Thread.detachNewThread { holds.takeOver(name, box, in: router) }
                },
                lost: { [weak self, weak router] in
                    guard let holds = self, let router else { return }
                    Thread.detachNewThread { holds.lost(name, box, in: router) }
                })
            let request = HoldRequest(hold)
            box.withLock { $0 = request }
            requests.withLock { $0[name] = (request, false) }
            logger.info("exclusive instance standing by for its hold", metadata: ["instance": .string(name)])
        }
    }

    /// Releases the holds whose instance names satisfy `leaving`.
    func release(where leaving: (String) -> Bool) {
        release { name, _ in leaving(name) }
    }

    /// After a reload: releases the holds of instances no longer exclusive (or gone), and the
    /// place of a hold given up because its instance did not start (the reload made a new one).
    func release(keeping exclusive: Set<String>) {
        release { name, request in !exclusive.contains(name) || request.hold is RefusedHold }
    }

    private func release(where leaving: (String, HoldRequest) -> Bool) {
        let released = requests.withLock { holds in
            let names = holds.filter { leaving($0.key, $0.value.request) }.map(\.key)
            return names.compactMap { holds.removeValue(forKey: $0)?.request.hold }
        }
        for hold in released { hold.release() }
    }

    /// `router` got the hold of `name`: it starts the instance.
    private func takeOver(_ name: String, _ box: RequestBox, in router: Router) {
        router.reloadLock.withLock {
            let request = box.withLock { $0 }
            guard let request, requests.withLock({ $0[name]?.request === request }), !router.isDraining else {
                request?.hold.release()  // a stale grant: let another router have it
                return
            }
            requests.withLock { $0[name]?.held = true }
            guard let instance = router.graph.instances.first(where: { $0.name == name && $0.standingBy.load(ordering: .relaxed) }) else {
                return
            }
            do {
                try router.supervisor.start(instance)
                instance.standingBy.store(false, ordering: .relaxed)
                logger.notice("exclusive instance held: it runs on this router", metadata: ["instance": .string(name)])
                // The iiideas whose pieces it refused while standing by are asked again.
                router.iiideaEngine?.askAgain(becauseOf: "instance \(name) held") { $0.contains("\(name) stands by") }
            } catch {
                // Another router may do better; this one does not ask again until a reload
                // brings a new instance (asking at once would fail the same way, in a loop).
                logger.error(
                    "exclusive instance held but it did not start; giving the hold up",
                    metadata: ["instance": .string(name), "error": .string("\(error)")])
                release { $0 == name }
                requests.withLock { $0[name] = (HoldRequest(RefusedHold()), false) }
            }
        }
    }

    /// `router` lost the hold of `name`: the instance stops at once (another router may
    /// start it any moment), then whoever asked (``whenLost(_:)``) is told.
    private func lost(_ name: String, _ box: RequestBox, in router: Router) {
        let current = router.reloadLock.withLock { () -> Bool in
            guard let request = box.withLock({ $0 }), requests.withLock({ $0[name]?.request === request }) else { return false }
            requests.withLock { _ = $0.removeValue(forKey: name) }
            for instance in router.graph.instances where instance.name == name && !instance.standingBy.load(ordering: .relaxed) {
                instance.stopPlugin()
            }
            return true
        }
        guard current else { return }
        logger.critical(
            "exclusive instance: this router lost its hold and stopped it; another router may run it now",
            metadata: ["instance": .string(name)])
        lostAction.withLock { $0 }?(name)
    }
}

/// Where a hold's callbacks find the request they answer, set once `hold()` returned (the
/// callbacks take the router's reload lock first, which the asker holds until it is set).
typealias RequestBox = Locked<ExclusiveHolds.HoldRequest?>

/// The place of a hold this router gave up after its instance failed to start: it keeps the
/// instance from asking again until a reload replaces it.
final class RefusedHold: ListenerHold {
    func release() {}
}
