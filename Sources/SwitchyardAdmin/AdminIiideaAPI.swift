import Foundation
import Hummingbird
import NIOCore
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardRuntime
import SwitchyardSpool
import SwitchyardStore

/// The iiidea API:
/// - `GET /v1/iiideas`, `GET /v1/iiideas/{id}` (with preferences and their schemas);
/// - `POST /v1/iiideas/{id}/enable|disable`, `POST /v1/iiideas/{id}/run` (`{"input": {...}}`);
/// - `GET /v1/iiideas/{id}/runs` and `GET /v1/runs` (`?limit=N&offset=N&outcome=succeeded|failed|running`, newest first);
/// - `GET /v1/iiidea-templates?q=WORDS`; `POST /v1/iiideas` (`{"template", "id"?, "title"?,
///   "preferences": {"service"?, "action"?}}`) obtains one; `DELETE /v1/iiideas/{id}` deletes an obtained one;
/// - `PUT /v1/iiideas/{id}/preferences` (`{"service"?, "action"?}`), `DELETE /v1/iiideas/{id}/preferences`
///   (a route-file iiidea back to its file's preferences).
///
/// It owns the catalog (and through it the router) every handler reads and changes; separate
/// from ``AdminServer``, which only registers it, and sharing the catalog with the console.
struct AdminIiideaAPI: AdminRouteGroup {
    let catalog: IiideaCatalog

    var router: SwitchyardRuntime.Router { catalog.router }
    var iiideas: RouterIiideas { catalog.iiideas }

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("v1/iiideas") { request, _ -> Response in
            // `?owner=ID`: that owner's iiideas only.
            let owner = request.uri.queryParameters.get("owner")
            let summaries = await catalog.summaries().filter { owner == nil || $0.declaration.owner == owner }
            return .json(JSONValue.array(summaries.map(\.json)).serializedBytes())
        }
        routes.get("v1/iiideas/:id") { _, context -> Response in
            let id = try context.decodedParameter("id")
            guard let summary = await catalog.summaries().first(where: { $0.id == id }) else {
                return .refusal(.notFound, "no iiidea '\(id)'")
            }
            let schemas = iiideas.preferenceSchemas(of: summary.declaration)
            guard case .object(var object) = summary.json else { return .refusal(.internalServerError, "unexpected") }
            let preferences = summary.declaration.shownPreferences
            let locked = summary.declaration.lockedPieces
            object["locked"] = .object(["service": .bool(locked.service), "action": .bool(locked.action)])
            object["preferences"] = .object(["service": preferences.service ?? .null, "action": preferences.action ?? .null])
            object["schemas"] = .object(["service": schemas.service ?? .null, "action": schemas.action ?? .null])
            return .json(JSONValue.object(object).serializedBytes())
        }
        for (verb, enabled) in [("enable", true), ("disable", false)] {
            routes.post("v1/iiideas/:id/\(verb)") { _, context -> Response in
                let id = try context.decodedParameter("id")
                do {
                    try await iiideas.setOnOwnThread(id, enabled: enabled)
                } catch {
                    return .refusal(.notFound, "\(error)")
                }
                let reason = iiideas.list.first { $0.iiidea.id == id }?.inactiveReason
                var answer: [String: JSONValue] = ["id": .string(id), "enabled": .bool(enabled), "active": .bool(enabled && reason == nil)]
                if let reason { answer["inactive_reason"] = .string(reason) }
                return .json(JSONValue.object(answer).serializedBytes())
            }
        }
        routes.post("v1/iiideas/:id/run") { request, context -> Response in
            let id = try context.decodedParameter("id")
            let body = try await request.jsonBody()
            do throws(RouterError) {
                let envelope = try iiideas.run(id, input: body["input"] ?? .object([:]))
                return .json(
                    JSONValue.object(["id": .string(id), "trigger_envelope_id": .string(envelope)]).serializedBytes(), status: .accepted)
            } catch {
                return .refusal(iiideas.list.contains { $0.iiidea.id == id } ? .conflict : .notFound, error.description)
            }
        }
        routes.get("v1/iiideas/:id/runs") { request, context -> Response in
            let id = try context.decodedParameter("id")
            guard iiideas.list.contains(where: { $0.iiidea.id == id }) else { return .refusal(.notFound, "no iiidea '\(id)'") }
            return .json(
                JSONValue.array(try await Self.runs(request, iiidea: id, in: iiideas.runStore).map(\.json)).serializedBytes())
        }
        routes.get("v1/runs") { request, _ -> Response in
            .json(JSONValue.array(try await Self.runs(request, iiidea: nil, in: iiideas.runStore).map(\.json)).serializedBytes())
        }
        addStoreRoutes(to: routes)
    }

    /// The routes that change what the catalog holds: obtaining, deleting, preferences.
    private func addStoreRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("v1/iiidea-templates") { request, _ -> Response in
            let query = request.uri.queryParameters.get("q") ?? ""
            let list = catalog.templates(matching: query).map { $0.json(schemas: iiideas.preferenceSchemas(of: $0.declaration)) }
            return .json(JSONValue.array(list).serializedBytes())
        }
        routes.post("v1/iiideas") { request, _ -> Response in
            let body = try await request.jsonBody()
            guard let template = body["template"]?.stringValue else { return .refusal(.badRequest, "the body needs \"template\"") }
            do throws(IiideaCatalog.Refusal) {
                let preferences = Self.preferences(body["preferences"]?["service"], body["preferences"]?["action"])
                let id = try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in
                    try catalog.obtain(
                        template: template, id: body["id"]?.stringValue, title: body["title"]?.stringValue,
                        owner: body["owner"]?.stringValue, preferences: preferences)
                }
                let summary = await catalog.summaries().first { $0.id == id }
                return .json((summary?.json ?? ["id": .string(id)]).serializedBytes(), status: .created)
            } catch {
                return .refusal(error)
            }
        }
        routes.delete("v1/iiideas/:id") { _, context -> Response in
            let id = try context.decodedParameter("id")
            do throws(IiideaCatalog.Refusal) {
                try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in try catalog.delete(id) }
                return .json(JSONValue.object(["deleted": .string(id)]).serializedBytes())
            } catch {
                return .refusal(error)
            }
        }
        routes.put("v1/iiideas/:id/preferences") { request, context -> Response in
            let id = try context.decodedParameter("id")
            let body = try await request.jsonBody()
            do throws(IiideaCatalog.Refusal) {
                let preferences = Self.preferences(body["service"], body["action"])
                try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in
                    try catalog.setPreferences(of: id, to: preferences)
                }
                return .json(JSONValue.object(["id": .string(id), "applied": true]).serializedBytes())
            } catch {
                return .refusal(error)
            }
        }
        routes.delete("v1/iiideas/:id/preferences") { _, context -> Response in
            let id = try context.decodedParameter("id")
            do throws(IiideaCatalog.Refusal) {
                try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in
                    try catalog.setPreferences(of: id, to: PiecePreferences(), reset: true)
                }
                return .json(JSONValue.object(["id": .string(id), "reset": true]).serializedBytes())
            } catch {
                return .refusal(error)
            }
        }
    }

    /// A body's preferences per piece: a piece that is absent or null keeps its preferences
    /// (`GET /v1/iiideas/{id}` shows a piece without any as null, so its answer can be sent back).
    static func preferences(_ service: JSONValue?, _ action: JSONValue?) -> PiecePreferences {
        PiecePreferences(service: service == .null ? nil : service, action: action == .null ? nil : action)
    }

    /// The runs a request asks for (`limit`, `offset`, `outcome`); read off the server's
    /// executor (the store may be PostgreSQL).
    static func runs(_ request: Request, iiidea: String?, in store: (any IiideaRunStore)?) async throws -> [IiideaRun] {
        let query = request.uri.queryParameters
        let outcome = query.get("outcome").flatMap { IiideaRun.Outcome(rawValue: $0) }
        let limit = min(max(query.get("limit", as: Int.self) ?? 100, 0), 1000)
        let offset = max(query.get("offset", as: Int.self) ?? 0, 0)
        return try await onOwnThread(named: "admin store") { () throws(StoreError) in
            try store?.runs(iiidea: iiidea, outcome: outcome, limit: limit, offset: offset) ?? []
        }
    }
}
