import Foundation
import Hummingbird
import NIOCore
import SwitchyardCore
import SwitchyardRuntime
import SwitchyardSpool
import SwitchyardStore

/// The console's graph page: every instance and route with its counters, live from
/// server-sent events, and the dead letters with their replay and drop.
///
/// It owns the router whose counters it shows and the spool whose dead letters it lists;
/// separate from ``Console`` because no other page reads either.
struct ConsoleGraphPages: Sendable {
    /// Dead letters the graph page lists (the newest).
    static let deadLettersShown = 100

    let router: SwitchyardRuntime.Router
    let spool: Spool?
    let frame: ConsoleFrame

    /// Where the dead letters are: the shared store's, or the spool's.
    var deadLetterStore: (any DeadLetterStore)? { spool.map(router.deadLetters(of:)) }

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("console/graph") { request, _ -> Response in
            guard let session = frame.sessions.session(of: request) else { return frame.signIn(request) }
            // The dead letters may be in PostgreSQL, whose calls block: read off the executor.
            let store = deadLetterStore
            let letters = await onOwnThread(named: "admin store") {
                store.flatMap { try? $0.deadLetters(route: nil, limit: Self.deadLettersShown + 1) }
            }
            return graphPage(session: session, notice: Console.notice(request), letters: letters)
        }
        routes.get("console/events/graph") { request, _ -> Response in
            return graphEvents(request)
        }
        routes.get("console/dead-letters/:id") { request, context -> Response in
            guard let session = frame.sessions.session(of: request) else { return frame.signIn(request) }
            let id = try context.parameters.require("id", as: Int64.self)
            let store = deadLetterStore
            guard let letter = await onOwnThread(named: "admin store", { try? store?.deadLetter(id: id) }) else {
                return frame.notFound(session, "No dead letter \(id).")
            }
            var data = deadLetterView(letter)
            let envelope = (try? Envelope(serialized: letter.envelope))?.jsonObject().serialized()
            data["envelope"] = Redaction.redact(Console.pretty(envelope))
            return frame.page(title: "Dead letter \(id)", template: "dead_letter", data: data, session: session, nav: "graph")
        }
        for (verb, done) in [("replay", "replayed"), ("drop", "dropped")] {
            routes.post("console/dead-letters/:id/\(verb)") { request, context -> Response in
                let id = try context.parameters.require("id", as: Int64.self)
                let store = deadLetterStore
                return try await frame.change(request) { session, _ in
                    let moved = await onOwnThread(named: "admin store") {
                        (try? verb == "replay" ? store?.replayDeadLetters(ids: [id]) : store?.dropDeadLetters(ids: [id])) ?? 0
                    }
                    guard moved > 0 else { return frame.notFound(session, "No dead letter \(id).") }
                    return Console.redirect("/console/graph?done=\(done)&id=\(id)#dead-letters")
                }
            }
        }
    }

    /// `letters`: the newest dead letters (one more than shown, to say there are more), or nil
    /// without a spool.
    private func graphPage(session: ConsoleSessions.Session, notice: String?, letters: [DeadLetter]?) -> Response {
        let plan = router.plan
        let statistics = router.statistics
        var ready: [String: Bool] = [:]
        for (instance, isReady) in router.readiness { ready[instance] = isReady }
        let instances: [[String: Any]] = statistics.instances.map { instance in
            let planned = plan.instances.first { $0.name == instance.name }
            let isReady = ready[instance.name] ?? false
            var view: [String: Any] = [
                "name": instance.name, "plugin": planned?.plugin.manifest.name ?? "?", "emitted": instance.emitted,
                "acknowledged": instance.acknowledged, "failed": instance.failed, "ready_text": isReady ? "ready" : "not ready",
                "ready_class": isReady ? "on" : "warn",
                "ports": (planned?.ports ?? []).map { ["name": $0.name, "direction": $0.direction.rawValue] },
            ]
            view["reason"] = isReady ? nil : router.notReadyReason(of: instance.name).map(Redaction.redact)
            return view
        }
        let routes: [[String: Any]] = statistics.routes.map { route in
            let declaration =
                plan.routes.first { $0.name == route.name }?.declaration
                ?? plan.iiideas.first { "iiidea \($0.id)" == route.name || "iiidea \($0.id) (remote)" == route.name }?.route.declaration
            var view = Self.counters(of: route)
            view["name"] = route.name
            view["at_least_once"] = route.atLeastOnce
            view["from"] = declaration?.from.value.description ?? "?"
            view["to"] = declaration?.to.map(\.value.description).joined(separator: ", ") ?? "?"
            return view
        }
        var data: [String: Any] = ["instances": instances, "routes": routes, "has_spool": spool != nil]
        if spool != nil {
            let letters = letters ?? []
            data["dead_letters"] = letters.prefix(Self.deadLettersShown).map(deadLetterView)
            data["has_dead_letters"] = !letters.isEmpty
            data["more_dead_letters"] = letters.count > Self.deadLettersShown
            data["shown"] = Self.deadLettersShown
        }
        return frame.page(
            title: "Graph", template: "graph", data: data, session: session, nav: "graph", notice: notice,
            live: ("graph", "/console/events/graph"))
    }

    private func deadLetterView(_ letter: DeadLetter) -> [String: Any] {
        [
            "id": letter.id, "route": letter.route, "sink": letter.sink, "envelope_id": letter.envelopeID, "type": letter.type,
            "attempts": letter.attempts, "error": Redaction.redact(letter.error), "failed_at": Console.time(letter.failedAt),
            "failed_at_iso": Clock.rfc3339(unixNanos: letter.failedAt),
        ]
    }

    private static func counters(of route: RouterStatistics.Route) -> [String: Any] {
        [
            "received": route.received, "filtered": route.filtered, "delivered": route.delivered,
            "failed": route.failed, "dropped": route.droppedFull + route.droppedLoop, "queued": route.queued,
        ]
    }

    /// Server-sent events: `event: counters` once a second with every route's and instance's
    /// counters and readiness (`{"routes": {NAME: {...}}, "instances": {NAME: {...}}}`). The
    /// counters are sampled, like a Prometheus scrape: once a second is live for a person and
    /// costs the routes nothing (atomic loads).
    private func graphEvents(_ request: Request) -> Response {
        let router = self.router
        return frame.eventStream(
            for: request, tick: .seconds(1),
            onTick: {
                let statistics = router.statistics
                var ready: [String: Bool] = [:]
                for (instance, isReady) in router.readiness { ready[instance] = isReady }
                var routes: [String: JSONValue] = [:]
                for route in statistics.routes {
                    routes[route.name] = .object(Self.counters(of: route).mapValues { .int($0 as? Int ?? 0) })
                }
                var instances: [String: JSONValue] = [:]
                for instance in statistics.instances {
                    instances[instance.name] = [
                        "ready": .bool(ready[instance.name] ?? false), "emitted": .int(instance.emitted),
                        "acknowledged": .int(instance.acknowledged), "failed": .int(instance.failed),
                    ]
                }
                return
                    "event: counters\ndata: \(JSONValue.object(["routes": .object(routes), "instances": .object(instances)]).serialized())\n\n"
            })
    }
}
