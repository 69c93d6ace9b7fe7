import Synchronization

/// Whether an instance refused a delivery as full since it last told the router it has room
/// (``PluginContext/sinkHasRoom()``), so that a plugin may say so on every confirmation without
/// a host call each time.
package final class RefusedAsFull: Sendable {
    private let refused = Atomic<Bool>(false)

    /// A delivery is about to be refused as full. The refusing thread stores this and then
    /// reads the plugin's room again; the freeing thread changes the room and then reads this
    /// (``clear()``). Each side's store must be visible before its load, whatever ordering the
    /// plugin uses for its own room (relaxed, mostly): hence a full fence on each side, so one
    /// of the two sees the other and no word of room is lost.
    package func mark() {
        refused.store(true, ordering: .relaxed)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
    }

    /// Whether a delivery was refused since the last call, clearing it.
    func clear() -> Bool {
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        guard refused.load(ordering: .relaxed) else { return false }
        return refused.exchange(false, ordering: .relaxed)
    }
}
