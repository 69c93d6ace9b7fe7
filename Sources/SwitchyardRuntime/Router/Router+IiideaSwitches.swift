import Dispatch
internal import Logging

/// The iiideas' switches: set here (stored in the switch store, so they survive restarts and,
/// with a shared store, reach the other routers), or followed from another router.
extension Router {
    /// Enables or disables iiidea `id` for good (the choice is stored and survives restarts).
    /// Enabling asks its pieces; one may refuse, leaving it enabled but inactive (see
    /// ``IiideaState/inactiveReason``).
    public func setIiidea(_ id: String, enabled: Bool) throws(RouterError) {
        try iiideaController.set(id, enabled: enabled, in: graph, store: iiideaSwitchStore)
    }

    /// ``setIiidea(_:enabled:)`` from async code, on a thread of its own: storing the switch
    /// may wait on a remote database, and async callers (the admin port's handlers) run on the
    /// few cooperative threads every other task needs.
    public func switchIiidea(_ id: String, enabled: Bool) async throws(RouterError) {
        try await onOwnThread(named: "iiidea switch") { () throws(RouterError) in try self.setIiidea(id, enabled: enabled) }
    }

    /// Follows a switch another router stored in the shared store (`id`; nil: any may have
    /// changed). Safe to call from any thread: the store is read, and the iiideas enabled or
    /// disabled, on a queue of their own.
    public func followIiideaSwitch(_ id: String?) {
        guard let sharedStore else { return }
        switchFollower.async { [self] in
            do {
                iiideaController.follow(try sharedStore.iiideaSwitches(), in: graph)
            } catch {
                logger.error("iiidea switches: cannot read them", metadata: ["error": .string("\(error)")])
            }
        }
    }

    /// Every iiidea with its switch and, when a piece refused to enable, why it is inactive.
    public var iiideas: [(iiidea: PlannedIiidea, enabled: Bool, inactiveReason: String?)] { iiideaController.list(graph) }

    /// Enables the pieces of every enabled iiidea (after start and after a reload; plugins
    /// see enable again for an iiidea they already serve and should accept it quietly).
    func activateEnabledIiideas() { iiideaController.activateEnabled(in: graph) }
}
