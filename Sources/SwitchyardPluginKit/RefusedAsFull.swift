import Synchronization

/// Whether an instance refused a delivery as full since it last told the router it has room
/// (``PluginContext/sinkHasRoom()``), so that a plugin may say so on every confirmation without
/// a host call each time.
package final class RefusedAsFull: Sendable {
    private let refused = Atomic<Bool>(false)

    /// A delivery is about to be refused as full. Sequentially consistent, as is the load in
    /// ``clear()``: the refusing thread checks the plugin's room again after this store, the
    /// freeing thread loads this after it changed the room, so one of them sees the other.
    package func mark() { refused.store(true, ordering: .sequentiallyConsistent) }

    /// Whether a delivery was refused since the last call, clearing it.
    func clear() -> Bool {
        guard refused.load(ordering: .sequentiallyConsistent) else { return false }
        return refused.exchange(false, ordering: .sequentiallyConsistent)
    }
}
