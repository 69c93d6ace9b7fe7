import Hummingbird
import NIOCore
import SwitchyardCore
import SwitchyardRuntime
import SwitchyardSpool
import SwitchyardStore

/// `GET /v1/dead-letters[?route=R]`, `GET /v1/dead-letters/{id}`,
/// `POST /v1/dead-letters/{id}/replay`, `POST /v1/dead-letters/replay` (all),
/// `POST /v1/dead-letters/{id}/drop`, `POST /v1/dead-letters/drop` (all). Changes are POSTs
/// only, so a browser cannot make them with a link or an image.
///
/// It owns the dead-letter store (nil without a spool); separate from ``AdminServer``, which
/// only registers it.
struct AdminDeadLetterAPI: AdminRouteGroup {
    /// The shared store's dead letters, or the spool's; nil when no route is at-least-once.
    let store: (any DeadLetterStore)?

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        let group = routes.group("v1/dead-letters")
        guard let store else {
            let none: @Sendable (Request, BasicRequestContext) -> Response = { _, _ -> Response in
                .json(JSONValue.object(["error": "no route is at-least-once, so there is no spool"]).serializedBytes(), status: .notFound)
            }
            group.get(use: none)
            group.get(":id", use: none)
            return
        }
        // The store may be PostgreSQL, whose calls block: each runs off the server's executor.
        group.get { request, _ -> Response in
            let route = request.uri.queryParameters.get("route")
            let letters = try await onOwnThread(named: "admin store") { () throws(StoreError) in
                try store.deadLetters(route: route, limit: Int.max)
            }
            return .json(JSONValue.array(letters.map { $0.json(withEnvelope: false) }).serializedBytes())
        }
        group.get(":id") { _, context -> Response in
            let id = try context.parameters.require("id", as: Int64.self)
            guard let letter = try await onOwnThread(named: "admin store", { () throws(StoreError) in try store.deadLetter(id: id) }) else {
                return Self.notFound(id)
            }
            return .json(letter.json(withEnvelope: true).serializedBytes())
        }
        for (verb, done) in [("replay", "replayed"), ("drop", "dropped")] {
            let change = { @Sendable (ids: [Int64]?) throws(StoreError) -> Int in
                verb == "replay" ? try store.replayDeadLetters(ids: ids) : try store.dropDeadLetters(ids: ids)
            }
            group.post(RouterPath(verb)) { _, _ -> Response in
                .json(
                    JSONValue.object([done: .int(try await onOwnThread(named: "admin store") { () throws(StoreError) in try change(nil) })])
                        .serializedBytes())
            }
            group.post(RouterPath(":id/" + verb)) { _, context -> Response in
                let id = try context.parameters.require("id", as: Int64.self)
                let moved = try await onOwnThread(named: "admin store") { () throws(StoreError) in try change([id]) }
                return moved == 0 ? Self.notFound(id) : .json(JSONValue.object([done: .int(moved)]).serializedBytes())
            }
        }
    }

    private static func notFound(_ id: Int64) -> Response {
        .json(JSONValue.object(["error": .string("no dead letter \(id)")]).serializedBytes(), status: .notFound)
    }
}
