/// The dedupe keys of at-least-once routes, shared by the routers of one store, so that an
/// envelope a broker redelivers to another router after a failover is recognised there too.
/// A key is recorded here once its envelope was delivered, never before: a router that dies
/// between spooling and delivering must not make the others drop the only copy that will
/// still be delivered. Each router also keeps its keys in its own spool; a store that is away
/// costs duplicates, never a loss.
public protocol SharedDedupeStore: AnyObject, Sendable {
    /// Where the keys live, for logs and errors.
    var location: String { get }

    /// Of `keys`, those any router recorded as delivered on `route`.
    func delivered(route: String, keys: [String]) throws(StoreError) -> Set<String>

    /// Records `keys` as delivered on `route` at `time` (nanoseconds since the epoch);
    /// committed when it returns.
    func recordDelivered(route: String, keys: [String], time: Int64) throws(StoreError)

    /// Forgets the keys of `route` seen before `time`.
    func forgetSeen(route: String, before time: Int64) throws(StoreError)
}
