public import SwitchyardStore

/// The routes' delivered dedupe keys (``PostgresDedupeKeys``), shared by every router.
extension PostgresStore: SharedDedupeStore {
    public func delivered(route: String, keys: [String]) throws(StoreError) -> Set<String> {
        try dedupeKeys.delivered(route: route, keys: keys)
    }

    public func recordDelivered(route: String, keys: [String], time: Int64) throws(StoreError) {
        try dedupeKeys.recordDelivered(route: route, keys: keys, time: time)
    }

    public func forgetSeen(route: String, before time: Int64) throws(StoreError) { try dedupeKeys.forgetSeen(route: route, before: time) }
}
