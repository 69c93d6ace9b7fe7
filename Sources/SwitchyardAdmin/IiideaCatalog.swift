import Foundation
import SwitchyardConfig
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardRuntime
import SwitchyardSpool
import SwitchyardStore

/// What the store page and `/v1/iiideas` change: obtaining an iiidea from a template,
/// deleting an obtained one, choosing preferences. Every change is kept in the router's store
/// and applied by a reload of the graph (no restart). The admin API and the console share it.
struct IiideaCatalog: Sendable {
    let router: SwitchyardRuntime.Router
    /// The router's iiideas: switches, runs, pieces, OAuth connections.
    let iiideas: RouterIiideas
    let spool: Spool?
    /// Re-reads the route files and the store; `true` waits for a reload under way to end
    /// (and runs after it) rather than answering nil.
    let reload: (@Sendable (_ waiting: Bool) -> SwitchyardRuntime.Router.ReloadSummary?)?
    /// One change at a time, from writing the store to the reload that applies it (or to
    /// putting the store back): two changes cannot interleave their writes and rollbacks.
    private let changes = NSLock()

    init(
        router: SwitchyardRuntime.Router, iiideas: RouterIiideas, spool: Spool?,
        reload: (@Sendable (_ waiting: Bool) -> SwitchyardRuntime.Router.ReloadSummary?)?
    ) {
        self.router = router
        self.iiideas = iiideas
        self.spool = spool
        self.reload = reload
    }

    /// A change the catalog refused.
    struct Refusal: Error, CustomStringConvertible {
        enum Kind: Sendable {
            case notFound, conflict, invalid, unavailable
        }

        var kind: Kind
        var description: String
        /// Problems by field path (`service.text`, `action.to`), for the form.
        var fields: [String: String] = [:]

        static func invalid(_ message: String, fields: [String: String] = [:]) -> Refusal {
            Refusal(kind: .invalid, description: message, fields: fields)
        }
    }

    /// The templates, those matching every word of `query` when it is not empty.
    func templates(matching query: String = "") -> [IiideaTemplate] {
        iiideas.templates.filter { query.isEmpty || $0.matches(query) }
    }

    /// The iiidea `id` as planned, with its switch.
    func iiidea(_ id: String) -> (iiidea: PlannedIiidea, enabled: Bool, inactiveReason: String?)? {
        iiideas.list.first { $0.iiidea.id == id }
    }

    /// An id for a new iiidea from `template`: the template's id, then `-2`, `-3`…
    func freeID(for template: String) -> String {
        let taken = Set(iiideas.list.map(\.iiidea.id) + ((try? iiideas.catalogStore?.obtainedIiideas()) ?? []).map(\.id))
        if !taken.contains(template) { return template }
        var number = 2
        while taken.contains("\(template)-\(number)") { number += 1 }
        return "\(template)-\(number)"
    }

    /// Makes an iiidea from `templateID` with `preferences` (nil keeps the template's) and
    /// runs it; returns its id.
    func obtain(
        template templateID: String, id requested: String?, title: String?, owner: String? = nil, preferences: PiecePreferences
    ) throws(Refusal) -> String {
        changes.lock()
        defer { changes.unlock() }
        guard let store = iiideas.catalogStore else {
            throw Refusal(kind: .unavailable, description: "the router has no store (spool) open")
        }
        guard let template = iiideas.templates.first(where: { $0.id == templateID }) else {
            throw Refusal(kind: .notFound, description: "no iiidea template '\(templateID)'")
        }
        let id = requested.flatMap { $0.isEmpty ? nil : $0 } ?? freeID(for: templateID)
        guard id.count <= 64, !id.isEmpty, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw .invalid("the id must be 1 to 64 letters, digits, '-' and '_'", fields: ["id": "letters, digits, '-' and '_' only"])
        }
        if iiideas.list.contains(where: { $0.iiidea.id == id })
            || ((try? store.obtainedIiideas()) ?? []).contains(where: { $0.id == id })
        {
            throw Refusal(kind: .conflict, description: "an iiidea '\(id)' exists already", fields: ["id": "taken"])
        }
        if let owner, !IiideaDeclaration.isOwner(owner) {
            throw .invalid(
                "the owner must be a user or device id", fields: ["owner": "1 to 128 letters, digits, '.', '_', ':', '@' or '-'"])
        }
        try refuseLocked(preferences, of: template.declaration)
        // Checked as they will run; kept as given: a piece left out follows its template.
        try check(template.declaration.preferences.overridden(by: preferences), of: template.declaration)
        let title = title.flatMap { $0.isEmpty ? nil : String($0.prefix(200)) }
        let record = ObtainedIiidea(id: id, template: templateID, title: title, preferences: preferences, owner: owner)
        let added: Bool
        do {
            added = try store.addObtained(record)
        } catch {
            throw Refusal(kind: .unavailable, description: "cannot keep the iiidea in the store: \(error)")
        }
        guard added else { throw Refusal(kind: .conflict, description: "an iiidea '\(id)' exists already", fields: ["id": "taken"]) }
        do {
            try apply(id)
        } catch {
            _ = try? store.deleteObtained(id)
            throw error
        }
        return id
    }

    /// Deletes obtained iiidea `id` (route-file iiideas cannot be deleted here).
    func delete(_ id: String) throws(Refusal) {
        changes.lock()
        defer { changes.unlock() }
        guard let store = iiideas.catalogStore else {
            throw Refusal(kind: .unavailable, description: "the router has no store (spool) open")
        }
        guard let entry = iiidea(id) else { throw Refusal(kind: .notFound, description: "no iiidea '\(id)'") }
        guard case .obtained = entry.iiidea.declaration.origin else {
            throw Refusal(
                kind: .conflict, description: "iiidea '\(id)' is written in \(entry.iiidea.declaration.location.file); remove it there")
        }
        do {
            try store.deleteObtained(id)
        } catch {
            throw Refusal(kind: .unavailable, description: "cannot delete the iiidea from the store: \(error)")
        }
        try apply(nil)
    }

    /// Replaces the preferences of iiidea `id` (nil for a piece keeps its current ones) and
    /// re-enables its pieces with them; `reset` drops a route-file iiidea's override instead.
    func setPreferences(of id: String, to preferences: PiecePreferences, reset: Bool = false) throws(Refusal) {
        changes.lock()
        defer { changes.unlock() }
        guard let store = iiideas.catalogStore else {
            throw Refusal(kind: .unavailable, description: "the router has no store (spool) open")
        }
        guard let entry = iiidea(id) else { throw Refusal(kind: .notFound, description: "no iiidea '\(id)'") }
        let declaration = entry.iiidea.declaration
        if reset, case .obtained = declaration.origin {
            throw Refusal(
                kind: .conflict,
                description:
                    "iiidea '\(id)' was obtained from the store: its preferences are its own, there is no route file's to go back to")
        }
        if !reset {
            try refuseLocked(preferences, of: declaration)
            try check(declaration.preferences.overridden(by: preferences), of: declaration)
        }
        let previous: (obtained: ObtainedIiidea?, override: PiecePreferences?)
        do {
            // The store keeps what was chosen here, piece by piece; a piece never chosen
            // follows its route file or template.
            switch declaration.origin {
            case .obtained:
                guard var record = try store.obtainedIiideas().first(where: { $0.id == id }) else {
                    throw Refusal(kind: .notFound, description: "iiidea '\(id)' is not in the store")
                }
                previous = (record, nil)
                record.preferences = record.preferences.overridden(by: preferences)
                try store.saveObtained(record)
            case .routeFile:
                let override = try store.preferenceOverrides()[id]
                previous = (nil, override)
                try store.setPreferenceOverride(id, to: reset ? nil : (override ?? PiecePreferences()).overridden(by: preferences))
            }
        } catch let refusal as Refusal {
            throw refusal
        } catch {
            throw Refusal(kind: .unavailable, description: "cannot keep the preferences in the store: \(error)")
        }
        do {
            try apply(id)
        } catch {
            // Put the store back as it was: the running graph still has the old preferences.
            if let record = previous.obtained {
                try? store.saveObtained(record)
            } else {
                try? store.setPreferenceOverride(id, to: previous.override)
            }
            throw error
        }
    }

    /// Refuses preferences for a piece whose own hold values from the environment (secrets):
    /// those stay in the route file, never copied into the store or shown.
    private func refuseLocked(_ preferences: PiecePreferences, of declaration: IiideaDeclaration) throws(Refusal) {
        let locked = declaration.lockedPieces
        for (piece, given, isLocked) in [("service", preferences.service, locked.service), ("action", preferences.action, locked.action)]
        where given != nil && isLocked {
            throw Refusal(
                kind: .conflict,
                description: "the \(piece) preferences of this iiidea use values from the environment; change them in the route file",
                fields: [piece: "set in the route file (values from the environment)"])
        }
    }

    /// Checks `preferences` against the schemas of the pieces of `declaration`.
    func check(_ preferences: PiecePreferences, of declaration: IiideaDeclaration) throws(Refusal) {
        let schemas = iiideas.preferenceSchemas(of: declaration)
        var fields: [String: String] = [:]
        for (piece, value, schema) in [("service", preferences.service, schemas.service), ("action", preferences.action, schemas.action)] {
            guard let schema, let compiled = try? Schema(json: schema) else { continue }
            for violation in compiled.violations(of: value ?? .object([:])) {
                fields[violation.path.isEmpty ? piece : "\(piece).\(violation.path)"] = violation.reason
            }
        }
        if !fields.isEmpty {
            throw .invalid(
                "the preferences do not fit the pieces: "
                    + fields.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "; "),
                fields: fields)
        }
    }

    /// Reloads the graph with the store's iiideas; `expecting` must then run.
    private func apply(_ expecting: String?) throws(Refusal) {
        guard let reload else { throw Refusal(kind: .unavailable, description: "this router cannot reload its graph") }
        guard let summary = reload(true) else {
            throw Refusal(kind: .conflict, description: "a reload is running; try again when it is done")
        }
        guard summary.isApplied else { throw Refusal(kind: .unavailable, description: "the graph was not reloaded: \(summary)") }
        if let expecting, let reason = summary.skippedIiideas[expecting] { throw .invalid(reason) }
    }
}

/// One iiidea as the list page and `GET /v1/iiideas` show it.
struct IiideaSummary: Sendable {
    var iiidea: PlannedIiidea
    var enabled: Bool
    var inactiveReason: String?
    /// The newest run, if any.
    var lastRun: IiideaRun?
    /// Runs started in the last hour.
    var runsLastHour: Int

    var id: String { iiidea.id }
    var declaration: IiideaDeclaration { iiidea.declaration }
    var isActive: Bool { enabled && inactiveReason == nil }
    var template: String? {
        if case .obtained(let template) = declaration.origin { return template }
        return nil
    }

    var json: JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(id), "enabled": .bool(enabled), "active": .bool(isActive),
            "trigger": .string(declaration.trigger.value.description), "service": .string(declaration.piece.value),
            "action": .string(declaration.action.value.description),
            "origin": .string(template == nil ? "route_file" : "store"), "runs_last_hour": .int(runsLastHour),
        ]
        if let title = declaration.title { object["title"] = .string(title) }
        if let owner = declaration.owner { object["owner"] = .string(owner) }
        if let inactiveReason { object["inactive_reason"] = .string(inactiveReason) }
        if let remote = declaration.remote { object["remote"] = .string(remote.value.description) }
        if let template { object["template"] = .string(template) }
        if declaration.hasPreferenceOverride { object["preferences_overridden"] = true }
        if let lastRun { object["last_run"] = lastRun.json }
        return .object(object)
    }
}

extension IiideaCatalog {
    /// Every iiidea with its last run and its runs of the last hour; the runs are read off the
    /// server's executor (the store may be PostgreSQL).
    func summaries() async -> [IiideaSummary] {
        let catalog = self
        return await onOwnThread(named: "admin store") { catalog.readSummaries() }
    }

    private func readSummaries() -> [IiideaSummary] {
        let hourAgo = Clock.nowUnixNanos() - 3_600_000_000_000
        let runStore = iiideas.runStore
        let counts = (try? runStore?.runCounts(since: hourAgo)) ?? [:]
        return iiideas.list.map { entry in
            IiideaSummary(
                iiidea: entry.iiidea, enabled: entry.enabled, inactiveReason: entry.inactiveReason,
                lastRun: (try? runStore?.runs(iiidea: entry.iiidea.id, limit: 1))?.first, runsLastHour: counts[entry.iiidea.id] ?? 0)
        }
    }
}

extension IiideaTemplate {
    /// The template as `GET /v1/iiidea-templates` shows it, with its pieces' preference schemas.
    func json(schemas: (service: JSONValue?, action: JSONValue?)) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(id), "trigger": .string(declaration.trigger.value.description), "service": .string(declaration.piece.value),
            "action": .string(declaration.action.value.description), "tags": .array(tags.map { .string($0) }),
        ]
        if let title = declaration.title { object["title"] = .string(title) }
        if let description { object["description"] = .string(description) }
        var preferences: [String: JSONValue] = [:]
        if let service = declaration.servicePreferences { preferences["service"] = service.maskedJSON }
        if let action = declaration.actionPreferences { preferences["action"] = action.maskedJSON }
        object["preferences"] = .object(preferences)
        var schemaObject: [String: JSONValue] = [:]
        if let service = schemas.service { schemaObject["service"] = service }
        if let action = schemas.action { schemaObject["action"] = action }
        object["schemas"] = .object(schemaObject)
        return .object(object)
    }
}
