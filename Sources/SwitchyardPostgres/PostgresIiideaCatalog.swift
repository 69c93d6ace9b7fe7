import Foundation
import PostgresNIO
import SwitchyardCore
import SwitchyardStore

/// Obtained iiideas and preference overrides in PostgreSQL (tables `iiidea_obtained` and
/// `iiidea_preferences`). Each change commits with a NOTIFY on ``channel``: every router
/// watching the database (``IiideaSwitchWatch`` listens to it too) reloads, so they all run the
/// same iiideas. Holds only the session it asks on.
struct PostgresIiideaCatalog: PostgresTable {
    /// The channel catalog changes are announced on; the payload is the iiidea's id.
    static let channel = "switchyard_iiidea_catalog"

    let session: PostgresSession

    func obtainedIiideas() throws(StoreError) -> [ObtainedIiidea] {
        try session.exchange { run in
            try run(
                """
                SELECT id, template, title, service_preferences, action_preferences, owner FROM iiidea_obtained
                ORDER BY created_at, id
                """
            ).map { row in
                let (id, template, title, service, action, owner) = try row.decode(
                    (String, String, String?, String?, String?, String?).self)
                return ObtainedIiidea(
                    id: id, template: template, title: title,
                    preferences: PiecePreferences(service: Self.json(service), action: Self.json(action)), owner: owner)
            }
        }
    }

    func addObtained(_ iiidea: ObtainedIiidea) throws(StoreError) -> Bool {
        try session.inTransaction { run in
            let inserted =
                try run(
                    """
                    INSERT INTO iiidea_obtained(id, template, title, service_preferences, action_preferences, created_at, owner)
                    VALUES(\(Self.text(iiidea.id)), \(Self.text(iiidea.template)), \(Self.text(iiidea.title)),
                           \(Self.text(iiidea.preferences.service)), \(Self.text(iiidea.preferences.action)), \(Self.now), \(Self.text(iiidea.owner)))
                    ON CONFLICT (id) DO NOTHING RETURNING id
                    """
                ).count == 1
            if inserted { _ = try run(Self.announce(iiidea.id)) }
            return inserted
        }
    }

    func saveObtained(_ iiidea: ObtainedIiidea) throws(StoreError) {
        try session.inTransaction { run in
            _ = try run(
                """
                INSERT INTO iiidea_obtained(id, template, title, service_preferences, action_preferences, created_at, owner)
                VALUES(\(Self.text(iiidea.id)), \(Self.text(iiidea.template)), \(Self.text(iiidea.title)),
                       \(Self.text(iiidea.preferences.service)), \(Self.text(iiidea.preferences.action)), \(Self.now), \(Self.text(iiidea.owner)))
                ON CONFLICT (id) DO UPDATE SET template = EXCLUDED.template, title = EXCLUDED.title,
                    service_preferences = EXCLUDED.service_preferences, action_preferences = EXCLUDED.action_preferences,
                    owner = EXCLUDED.owner
                """)
            _ = try run(Self.announce(iiidea.id))
        }
    }

    @discardableResult
    func deleteObtained(_ id: String) throws(StoreError) -> Bool {
        try session.inTransaction { run in
            let existed = try run("DELETE FROM iiidea_obtained WHERE id = \(id) RETURNING id").count == 1
            _ = try run("DELETE FROM iiidea_switches WHERE id = \(id)")
            _ = try run("DELETE FROM iiidea_preferences WHERE id = \(id)")
            if existed { _ = try run(Self.announce(id)) }
            return existed
        }
    }

    func preferenceOverrides() throws(StoreError) -> [String: PiecePreferences] {
        try session.exchange { run in
            var overrides: [String: PiecePreferences] = [:]
            for row in try run("SELECT id, service_preferences, action_preferences FROM iiidea_preferences") {
                let (id, service, action) = try row.decode((String, String?, String?).self)
                overrides[id] = PiecePreferences(service: Self.json(service), action: Self.json(action))
            }
            return overrides
        }
    }

    func setPreferenceOverride(_ id: String, to preferences: PiecePreferences?) throws(StoreError) {
        try session.inTransaction { run in
            if let preferences {
                _ = try run(
                    """
                    INSERT INTO iiidea_preferences(id, service_preferences, action_preferences, changed_at)
                    VALUES(\(Self.text(id)), \(Self.text(preferences.service)), \(Self.text(preferences.action)), \(Self.now))
                    ON CONFLICT (id) DO UPDATE SET service_preferences = EXCLUDED.service_preferences,
                        action_preferences = EXCLUDED.action_preferences, changed_at = EXCLUDED.changed_at
                    """)
            } else {
                _ = try run("DELETE FROM iiidea_preferences WHERE id = \(id)")
            }
            _ = try run(Self.announce(id))
        }
    }

    /// The NOTIFY of a change to iiidea `id` (sent when its transaction commits).
    private static func announce(_ id: String) -> PostgresQuery {
        "SELECT pg_notify(\(channel), \(Self.text(id)))"
    }

    private static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1e9) }

    private static func text(_ json: JSONValue?) -> String? { json.map { $0.serialized() } }

    private static func json(_ text: String?) -> JSONValue? {
        text.flatMap { try? JSONValue(parsing: Array($0.utf8)) }
    }
}
