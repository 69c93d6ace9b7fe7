import Foundation
import PostgresNIO
import SwitchyardStore

/// iiideas' switches in PostgreSQL (table `iiidea_switches`), announced with NOTIFY on
/// ``channel``: a switch set on one router reaches every router watching the database
/// (``IiideaSwitchWatch``) when it commits. Holds only the session it asks on.
struct PostgresIiideaSwitches: PostgresTable {
    /// The channel switches are announced on; the payload is the iiidea's id.
    static let channel = "switchyard_iiideas"

    let session: PostgresSession

    func iiideaSwitches() throws(StoreError) -> [String: Bool] {
        try session.exchange { run in
            var switches: [String: Bool] = [:]
            for row in try run("SELECT id, enabled FROM iiidea_switches") {
                let (id, enabled) = try row.decode((String, Bool).self)
                switches[id] = enabled
            }
            return switches
        }
    }

    /// One statement: the row and the notification commit together.
    func setIiideaSwitch(_ id: String, enabled: Bool) throws(StoreError) {
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        try session.exchange { run in
            _ = try run(
                """
                WITH changed AS (
                    INSERT INTO iiidea_switches(id, enabled, changed_at) VALUES(\(id), \(enabled), \(now))
                    ON CONFLICT (id) DO UPDATE SET enabled = EXCLUDED.enabled, changed_at = EXCLUDED.changed_at
                    RETURNING id
                )
                SELECT pg_notify(\(Self.channel), id) FROM changed
                """)
        }
    }
}
