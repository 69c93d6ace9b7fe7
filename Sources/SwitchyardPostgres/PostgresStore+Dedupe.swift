import PostgresNIO
public import SwitchyardStore

/// The routes' dedupe keys in PostgreSQL: one row per route and key, inserted unless present,
/// so the first router to record a key wins and every later one learns it was seen.
extension PostgresStore: SharedDedupeStore {
    public func recordSeen(route: String, keys: [String], time: Int64) throws(StoreError) -> Set<String> {
        guard !keys.isEmpty else { return [] }
        let inserted = try exchange { run in
            try run(
                """
                INSERT INTO dedupe_seen(route, key, seen_at) SELECT \(route), key, \(time) FROM unnest(\(keys)::text[]) AS key
                ON CONFLICT (route, key) DO NOTHING RETURNING key
                """
            ).map { try $0.decode(String.self) }
        }
        return Set(keys).subtracting(inserted)
    }

    public func forgetSeen(route: String, before time: Int64) throws(StoreError) {
        try exchange { run in _ = try run("DELETE FROM dedupe_seen WHERE route = \(route) AND seen_at < \(time)") }
    }
}
