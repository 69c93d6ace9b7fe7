import Hummingbird
import NIOCore
import SwitchyardCore
import SwitchyardRuntime
import SwitchyardSpool
import SwitchyardStore

extension AdminServer {
    /// `GET /v1/dead-letters[?route=R]`, `GET /v1/dead-letters/{id}`,
    /// `POST /v1/dead-letters/{id}/replay`, `POST /v1/dead-letters/replay` (all),
    /// `POST /v1/dead-letters/{id}/drop`, `POST /v1/dead-letters/drop` (all). Changes are POSTs
    /// only, so a browser cannot make them with a link or an image.
    func addDeadLetterRoutes(to routes: Hummingbird.Router<BasicRequestContext>, letters store: (any DeadLetterStore)?) {
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
                return .notFound(id)
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
                return moved == 0 ? .notFound(id) : .json(JSONValue.object([done: .int(moved)]).serializedBytes())
            }
        }
    }

    /// `GET /v1/routes` and `GET /v1/instances`: the counters as JSON.
    func addStatusRoutes(to routes: Hummingbird.Router<BasicRequestContext>, router: SwitchyardRuntime.Router) {
        routes.get("v1/routes") { _, _ -> Response in
            let body = JSONValue.array(
                router.statistics.routes.map { route -> JSONValue in
                    var object: [String: JSONValue] = [
                        "name": .string(route.name), "delivery": .string(route.atLeastOnce ? "at-least-once" : "at-most-once"),
                    ]
                    for (name, value) in route.namedCounters { object[name] = .int(value) }
                    return .object(object)
                })
            return .json(body.serializedBytes())
        }
        routes.get("v1/instances") { _, _ -> Response in
            var ready: [String: Bool] = [:]
            for (instance, isReady) in router.readiness { ready[instance] = isReady }
            let holds = Dictionary(router.holdStates.map { ($0.instance, $0.held) }) { first, _ in first }
            let body = JSONValue.array(
                router.statistics.instances.map { instance -> JSONValue in
                    var object: [String: JSONValue] = [
                        "name": .string(instance.name), "ready": .bool(ready[instance.name] ?? false), "emitted": .int(instance.emitted),
                        "acknowledged": .int(instance.acknowledged), "failed": .int(instance.failed), "in_flight": .int(instance.inFlight),
                    ]
                    // Exclusive instances: run here, or stand by while another router holds them.
                    if let held = holds[instance.name] { object["hold"] = .string(held ? "held" : "standing by") }
                    if ready[instance.name] != true, let reason = router.notReadyReason(of: instance.name) {
                        object["reason"] = .string(Redaction.redact(reason))
                    }
                    return .object(object)
                })
            return .json(body.serializedBytes())
        }
    }
}

extension Response {
    fileprivate static func notFound(_ id: Int64) -> Response {
        .json(JSONValue.object(["error": .string("no dead letter \(id)")]).serializedBytes(), status: .notFound)
    }
}
