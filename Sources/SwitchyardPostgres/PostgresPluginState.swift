import Foundation
import NIOCore
import PostgresNIO
import SwitchyardStore

/// Plugin instances' key-value state in PostgreSQL (table `plugin_state`): what every router
/// sharing the database sees. BYTEA compares bytewise, so scans page in the same order as the
/// SQLite store's. Holds only the session it asks on: the table is its whole state.
struct PostgresPluginState: PostgresTable {
    let session: PostgresSession

    func stateValue(of instance: String, key: [UInt8]) throws(StoreError) -> [UInt8]? {
        try session.exchange { run in
            try run("SELECT value FROM plugin_state WHERE instance = \(instance) AND key = \(ByteBuffer(bytes: key))")
                .first.map { Array(buffer: try $0.decode(ByteBuffer.self)) }
        }
    }

    func setState(of instance: String, key: [UInt8], value: [UInt8]) throws(StoreError) {
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        try session.exchange { run in
            _ = try run(
                """
                INSERT INTO plugin_state(instance, key, value, changed_at)
                VALUES(\(instance), \(ByteBuffer(bytes: key)), \(ByteBuffer(bytes: value)), \(now))
                ON CONFLICT (instance, key) DO UPDATE SET value = EXCLUDED.value, changed_at = EXCLUDED.changed_at
                """)
        }
    }

    func removeState(of instance: String, key: [UInt8]) throws(StoreError) {
        try session.exchange { run in
            _ = try run("DELETE FROM plugin_state WHERE instance = \(instance) AND key = \(ByteBuffer(bytes: key))")
        }
    }

    func stateEntries(
        of instance: String, prefix: [UInt8], after: [UInt8]?, limit: Int
    ) throws(StoreError) -> [(key: [UInt8], value: [UInt8])] {
        var bindings = PostgresBindings()
        var conditions = "instance = $1"
        bindings.append(instance)
        func bind(_ bytes: [UInt8]) -> String {
            bindings.append(ByteBuffer(bytes: bytes))
            return "$\(bindings.count)"
        }
        if let after { conditions += " AND key > \(bind(after))" }
        if !prefix.isEmpty {
            conditions += " AND key >= \(bind(prefix))"
            if let end = PluginStateLimits.successor(of: prefix) { conditions += " AND key < \(bind(end))" }
        }
        bindings.append(max(1, limit))
        let query = PostgresQuery(
            unsafeSQL: "SELECT key, value FROM plugin_state WHERE \(conditions) ORDER BY key LIMIT $\(bindings.count)", binds: bindings)
        return try session.exchange { run in
            try run(query).map { row in
                let (key, value) = try row.decode((ByteBuffer, ByteBuffer).self)
                return (Array(buffer: key), Array(buffer: value))
            }
        }
    }
}
