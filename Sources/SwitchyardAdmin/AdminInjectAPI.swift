import Hummingbird
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardRuntime

/// What the admin API runs on a plugin directly, outside any route or iiidea: an envelope
/// injected into a sink port, and a service piece run once.
///
/// It owns the router that reaches the instances; separate from ``AdminServer``, which only
/// registers it.
struct AdminInjectAPI: AdminRouteGroup {
    let router: SwitchyardRuntime.Router
    /// The router's iiideas, whose service pieces `/v1/pieces` runs.
    let iiideas: RouterIiideas

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        addInjectRoute(to: routes)
        addPieceRoute(to: routes)
    }

    /// `POST /v1/instances/{instance}/ports/{port}[?type=T&timeout=S]`: the request body (JSON,
    /// at most 64 KiB) delivered to a sink port as an envelope, without a route — Node-RED's
    /// inject, for one-off actions such as a SIP registration (`sip.Control`). Checked like a
    /// route's output (the port's types, the type's schema); answered with the plugin's
    /// acknowledgement: `200 {"outcome": "ok"}`, `422` reject, `503` retry (both with the
    /// plugin's reason), `504` none within `timeout` (default 10 s, at most 60 s).
    private func addInjectRoute(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.post("v1/instances/:instance/ports/:port") { request, context -> Response in
            let body = try await request.jsonBody()
            let query = request.uri.queryParameters
            let seconds = min(max(query.get("timeout", as: Int.self) ?? 10, 1), 60)
            let outcome: SwitchyardRuntime.SinkInjector.InjectionOutcome
            do {
                outcome = try await router.injector.inject(
                    body: body.serializedBytes(), type: query.get("type"), instance: context.parameters.get("instance") ?? "",
                    port: context.parameters.get("port") ?? "", timeout: .seconds(seconds))
            } catch let error as SwitchyardRuntime.SinkInjector.InjectionError {
                return .refusal(.badRequest, error.description)
            }
            switch outcome {
            case .ok: return .json(JSONValue.object(["outcome": "ok"]).serializedBytes())
            case .reject(let reason):
                return .json(
                    JSONValue.object(["outcome": "reject", "reason": .string(reason)]).serializedBytes(), status: .unprocessableContent)
            case .retry(let reason):
                return .json(
                    JSONValue.object(["outcome": "retry", "reason": .string(reason)]).serializedBytes(), status: .serviceUnavailable)
            case .timedOut:
                return .json(
                    JSONValue.object(["outcome": "timed_out", "reason": .string("no acknowledgement within \(seconds) s")])
                        .serializedBytes(),
                    status: .gatewayTimeout)
            }
        }
    }

    /// `POST /v1/instances/{instance}/pieces/{piece}[?timeout=S]`: runs a service piece once
    /// with the request body (a JSON object, at most 64 KiB) as its input, outside any iiidea,
    /// and answers `200` with its output — how the admin API reads what a plugin serves as a
    /// piece (a SIP identity's message history: `sip.history_query`). `400` when there is no
    /// such piece, `502` with the plugin's reason when the piece failed or gave no answer
    /// within `timeout` (default 10 s, at most 60 s).
    private func addPieceRoute(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.post("v1/instances/:instance/pieces/:piece") { request, context -> Response in
            let input = try await request.jsonBody()
            let seconds = min(max(request.uri.queryParameters.get("timeout", as: Int.self) ?? 10, 1), 60)
            do {
                let output = try await iiideas.runServicePiece(
                    instance: context.parameters.get("instance") ?? "", port: context.parameters.get("piece") ?? "", input: input,
                    timeout: .seconds(seconds))
                return .json(output.serializedBytes() + [0x0A])
            } catch let error as SwitchyardIiideas.RouterIiideas.PieceRunError {
                return .refusal(error.failed ? .badGateway : .badRequest, error.description)
            }
        }
    }
}
