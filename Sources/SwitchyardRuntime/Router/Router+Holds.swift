import Foundation
internal import Logging
public import SwitchyardStore

/// Exclusive instances (`exclusive: true`): with a shared store, one router at a time runs
/// each. The others create it (its configuration checked) and stand by: its sources emit
/// nothing and deliveries to it wait, as for a full sink (at-least-once routes keep them in
/// the spool). Each router waits for the instance's hold (``ListenerHolds``); the one that gets
/// it starts the instance. When the holder stops, dies or loses the store, another takes over.
extension Router {
    /// Tells `action`, with the instance's name, that this router lost a hold it had: another
    /// router may now run that instance, so this one must stop running it. `switchyard run`
    /// shuts the router down (its service manager starts it again, standing by).
    public func whenHoldLost(_ action: @escaping @Sendable (String) -> Void) {
        holdLostAction.withLock { $0 = action }
    }

    /// The instances this router runs under a hold, and those it stands by for.
    public var holdStates: [(instance: String, held: Bool)] {
        holds.withLock { $0.map { ($0.key, $0.value.held) } }.sorted { $0.instance < $1.instance }
    }

    /// Whether `instance` must wait for its hold before it starts; if so it is marked standing
    /// by. (Without a shared store there is one router, and `exclusive` changes nothing.)
    func standBy(_ instance: InstanceRuntime) -> Bool {
        guard instance.exclusive, sharedStore != nil else { return false }
        let held = holds.withLock { $0[instance.name]?.held ?? false }
        instance.standingBy.store(!held, ordering: .relaxed)
        return !held
    }

    /// Asks for the hold of every exclusive instance standing by that has not asked yet.
    func askForHolds() {
        guard let sharedStore else { return }
        for instance in graph.instances where instance.standingBy.load(ordering: .relaxed) {
            let name = instance.name
            guard holds.withLock({ $0[name] == nil }) else { continue }
            let hold = sharedStore.hold(
                name,
                granted: { [weak self] in
                    guard let router = self else { return }
                    // Control work (a plugin's start) under the reload lock: off the store's event loop.
                    Thread.detachNewThread { router.takeOver(name) }
                },
                lost: { [weak self] in self?.lostHold(name) })
            holds.withLock { $0[name] = (hold, false) }
            logger.info("exclusive instance standing by for its hold", metadata: ["instance": .string(name)])
        }
    }

    /// Releases the holds whose instance names satisfy `leaving`.
    func releaseHolds(where leaving: (String) -> Bool) {
        let released = holds.withLock { holds in
            let names = holds.keys.filter(leaving)
            return names.compactMap { holds.removeValue(forKey: $0)?.hold }
        }
        for hold in released { hold.release() }
    }

    /// This router got the hold of `name`: it starts the instance.
    private func takeOver(_ name: String) {
        reloadLock.lock()
        defer { reloadLock.unlock() }
        guard holds.withLock({ $0[name] != nil }), !isDraining else { return }
        holds.withLock { $0[name]?.held = true }
        guard let instance = graph.instances.first(where: { $0.name == name && $0.standingBy.load(ordering: .relaxed) }) else { return }
        do {
            try supervisor.start(instance)
            instance.standingBy.store(false, ordering: .relaxed)
            logger.notice("exclusive instance held: it runs on this router", metadata: ["instance": .string(name)])
        } catch {
            // Let another router try: give the hold up, and wait for it again.
            logger.error("exclusive instance held but it did not start; giving the hold up", metadata: ["error": .string("\(error)")])
            releaseHolds { $0 == name }
            askForHolds()
        }
    }

    private func lostHold(_ name: String) {
        logger.critical(
            "exclusive instance: this router lost its hold and may no longer run it", metadata: ["instance": .string(name)])
        holdLostAction.withLock { $0 }?(name)
    }
}
