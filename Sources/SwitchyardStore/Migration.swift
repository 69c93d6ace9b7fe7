/// One step of a store's schema: applied once, in version order, in its own transaction, and
/// recorded in the store's `schema_migrations` table with the time it was applied.
///
/// Versions only grow: a released migration is never edited, a change is a new one. A store
/// that records a version this build does not know was written by a newer Switchyard, and is
/// refused rather than written with an older idea of its tables.
public struct Migration: Sendable {
    /// The version, from 1, one more than the one before.
    public let version: Int
    /// What it does, in a few words (shown by `switchyard store check`).
    public let name: String
    /// The SQL of the step, in the engine's dialect: one or more statements.
    public let sql: String

    /// A step `version` named `name`.
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// What a store has applied, against what this build knows.
public struct MigrationStatus: Sendable, Equatable {
    /// Versions recorded as applied, in order.
    public let applied: [Int]
    /// Versions this build knows that are not applied yet, in order.
    public let pending: [Int]
    /// Versions applied by a newer build, which this one does not know.
    public let unknown: [Int]

    /// The status of a store that recorded `applied`, for a build that knows `known`.
    public init(applied: [Int], known: [Migration]) {
        let knownVersions = Set(known.map(\.version))
        self.applied = applied.sorted()
        pending = known.map(\.version).filter { !applied.contains($0) }.sorted()
        unknown = applied.filter { !knownVersions.contains($0) }.sorted()
    }

    /// Whether the store is exactly what this build expects.
    public var isCurrent: Bool { pending.isEmpty && unknown.isEmpty }

    /// One line for an operator.
    public func summary(location: String) -> String {
        if !unknown.isEmpty {
            return
                "\(location): written by a newer switchyard (schema versions \(unknown.map(String.init).joined(separator: ", ")) are unknown to this build); use that version or newer"
        }
        let at = applied.last.map { "schema version \($0)" } ?? "empty"
        if pending.isEmpty { return "\(location): \(at), up to date" }
        return "\(location): \(at), \(pending.count) migration(s) pending (\(pending.map(String.init).joined(separator: ", ")))"
    }
}
