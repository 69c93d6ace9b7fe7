import PostgresNIO
public import SwitchyardStore

/// The routes' delivered dedupe keys in PostgreSQL: one row per route and key, inserted
/// unless present (the first delivery's time stays).
extension PostgresStore: SharedDedupeStore {
    public func delivered(route: String, keys: [String]) throws(StoreError) -> Set<String> {
        guard !keys.isEmpty else { return [] }
        return try exchange { run in
            Set(
                try run("SELECT key FROM dedupe_seen WHERE route = \(route) AND key = ANY(\(keys)::text[])").map {
                    try $0.decode(String.self)
                })
        }
    }

    public func recordDelivered(route: String, keys: [String], time: Int64) throws(StoreError) {
        guard !keys.isEmpty else { return }
        try exchange { run in
            _ = try run(
                """
                INSERT INTO dedupe_seen(route, key, seen_at) SELECT \(route), key, \(time) FROM unnest(\(keys)::text[]) AS key
                ON CONFLICT (route, key) DO NOTHING
                """
            )
        }
    }

    public func forgetSeen(route: String, before time: Int64) throws(StoreError) {
        try exchange { run in _ = try run("DELETE FROM dedupe_seen WHERE route = \(route) AND seen_at < \(time)") }
    }
}
