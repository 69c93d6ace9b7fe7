import Hummingbird
import SwitchyardCore
import SwitchyardRuntime

/// `GET /v1/routes` and `GET /v1/instances`: the counters as JSON.
///
/// It owns the router whose counters it reads; separate from ``AdminServer``, which only
/// registers it.
struct AdminStatusAPI: AdminRouteGroup {
    let router: SwitchyardRuntime.Router

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
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
            let holds = Dictionary(router.exclusiveHolds.states.map { ($0.instance, $0.held) }) { first, _ in first }
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
