import Hummingbird
import SwitchyardCore
import SwitchyardRuntime

/// `GET /v1/tap?route=NAME` or `?port=INSTANCE.PORT`, with `when=CONDITION`, `limit=N` and
/// `rate=N`: server-sent events, one `event: envelope` per envelope passing the route
/// (after its condition and map/template) or leaving the port, its data the envelope as
/// JSON with secrets masked; at most `rate` a second (default 200), with an
/// `event: skipped` (`{"skipped": N}`) before the next envelope when some were not taken;
/// after `limit` envelopes the stream ends; when it ends otherwise, a last `event: end`
/// (`{"reason": …}`) says why (the router stops, or a reload removed the point). 404 for an unknown route or port, 400 for a
/// condition that does not parse or a rate out of range, 503 when too many taps are open.
///
/// It owns the router whose routes and ports it taps; separate from ``AdminServer``, which
/// only registers it.
struct AdminTapAPI: AdminRouteGroup {
    let router: SwitchyardRuntime.Router

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("v1/tap") { request, _ -> Response in
            let query = request.uri.queryParameters
            let point: TapRegistry.Point
            if let route = query.get("route") {
                point = .route(route.removingPercentEncoding ?? route)
            } else if let port = query.get("port") {
                point = .port(port)
            } else {
                return .refusal(.badRequest, "name a route (?route=NAME) or a source port (?port=INSTANCE.PORT)")
            }
            let limit = query.get("limit", as: Int.self).map { max(1, $0) }
            let envelopes: TapStream
            do throws(RouterError) {
                envelopes = try router.tap(
                    point, when: query.get("when"), rate: query.get("rate", as: Int.self) ?? TapRegistry.defaultRate)
            } catch {
                let status: HTTPResponse.Status =
                    error.reason.hasPrefix("no such")
                    ? .notFound : error.reason.contains("taps are open") ? .serviceUnavailable : .badRequest
                return .refusal(status, "\(point): \(error.reason)")
            }
            return EventStream.response(
                tick: .seconds(15),
                source: { output in
                    var sent = 0
                    for await envelope in envelopes {
                        let skipped = envelopes.takeSkipped()
                        if skipped > 0 { output.yield("event: skipped\ndata: {\"skipped\": \(skipped)}\n\n") }
                        let data = Redaction.redact(envelope.jsonObject().serialized())
                        output.yield("event: envelope\ndata: \(data)\n\n")
                        sent += 1
                        if let limit, sent >= limit {
                            output.finish()
                            return
                        }
                    }
                    let reason = router.isDraining ? "the router is stopping" : "a reload removed \(point)"
                    output.yield("event: end\ndata: \(JSONValue.object(["reason": .string(reason)]).serialized())\n\n")
                    output.finish()
                })
        }
    }
}
