import PostgresNIO
import SwitchyardStore

/// The routes' delivered dedupe keys in PostgreSQL (table `dedupe_seen`): one row per route and
/// key, inserted unless present (the first delivery's time stays). Holds only the session it
/// asks on.
struct PostgresDedupeKeys: PostgresTable {
    let session: PostgresSession

    func delivered(route: String, keys: [String]) throws(StoreError) -> Set<String> {
        guard !keys.isEmpty else { return [] }
        return try session.exchange { run in
            Set(
                try run("SELECT key FROM dedupe_seen WHERE route = \(route) AND key = ANY(\(keys)::text[])").map {
                    try $0.decode(String.self)
                })
        }
    }

    func recordDelivered(route: String, keys: [String], time: Int64) throws(StoreError) {
        guard !keys.isEmpty else { return }
        try session.exchange { run in
            _ = try run(
                """
                INSERT INTO dedupe_seen(route, key, seen_at) SELECT \(route), key, \(time) FROM unnest(\(keys)::text[]) AS key
                ON CONFLICT (route, key) DO NOTHING
                """
            )
        }
    }

    func forgetSeen(route: String, before time: Int64) throws(StoreError) {
        try session.exchange { run in _ = try run("DELETE FROM dedupe_seen WHERE route = \(route) AND seen_at < \(time)") }
    }
}
