/// The dedupe keys of at-least-once routes, shared by the routers of one store, so that an
/// envelope a broker redelivers to another router after a failover is recognised there too.
/// Each router first records a key in its own spool, in the transaction that spools the
/// envelope, and only then asks here: a store that is away costs duplicates, never a loss.
public protocol SharedDedupeStore: AnyObject, Sendable {
    /// Where the keys live, for logs and errors.
    var location: String { get }

    /// Records `keys` as seen on `route` at `time` (nanoseconds since the epoch) and returns
    /// those that were recorded before, by any router; committed when it returns.
    func recordSeen(route: String, keys: [String], time: Int64) throws(StoreError) -> Set<String>

    /// Forgets the keys of `route` seen before `time`.
    func forgetSeen(route: String, before time: Int64) throws(StoreError)
}
