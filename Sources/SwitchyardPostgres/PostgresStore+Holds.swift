public import SwitchyardStore

/// Holds on listeners as session advisory locks, each on a connection of its own (see
/// ``PostgresHolds``).
extension PostgresStore: ListenerHolds {
    public func hold(
        _ name: String, granted: @escaping @Sendable () -> Void, lost: @escaping @Sendable () -> Void
    ) -> any ListenerHold {
        holds.hold(name, granted: granted, lost: lost)
    }
}
