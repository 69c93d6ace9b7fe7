/// Holds that several routers sharing a store take turns on: one router at a time holds a
/// name (an instance that cannot be shared, such as a SIP registration or a BLE adapter), and
/// when it dies or loses the store, another takes the hold within seconds.
public protocol ListenerHolds: AnyObject, Sendable {
    /// Waits in the background for the hold on `name`. `granted` is called when this router
    /// has it; `lost` when it had it and may no longer (its connection to the store broke:
    /// another router may take it from then on). After `lost`, nothing more is called: the
    /// holder must stop what it ran. Until ``ListenerHold/release()``.
    func hold(
        _ name: String, granted: @escaping @Sendable () -> Void, lost: @escaping @Sendable () -> Void
    ) -> any ListenerHold
}

/// One router's claim on a name of ``ListenerHolds``.
public protocol ListenerHold: AnyObject, Sendable {
    /// Gives the hold up (or stops waiting for it); another router may take it at once.
    func release()
}
