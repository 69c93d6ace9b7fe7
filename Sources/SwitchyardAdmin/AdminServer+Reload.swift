import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardRuntime

extension AdminServer {
    /// `POST /reload`: re-reads the route files as SIGHUP does and answers the summary (see
    /// ``SwitchyardRuntime/Router/ReloadSummary/json``): 200 applied, 422 rejected (nothing
    /// changed), 500 rolled back (the previous graph runs again), 409 while another reload
    /// runs. A POST, behind the same guard
    /// as every other change: the token, the Host check and the cross-site check.
    func addReloadRoute(
        to routes: Hummingbird.Router<BasicRequestContext>,
        reload: (@Sendable (_ waiting: Bool) -> SwitchyardRuntime.Router.ReloadSummary?)?
    ) {
        routes.post("reload") { _, _ -> Response in
            guard let reload else {
                return .json(JSONValue.object(["error": "this router reloads only on SIGHUP"]).serializedBytes(), status: .notFound)
            }
            // A reload blocks (it waits for deliveries and for plugins to start): on its own
            // thread, not on the server's executor.
            let answer = await onOwnThread(named: "admin reload") { reload(false) }
            guard let summary = answer else {
                let busy = JSONValue.object(["error": "a reload is already running; try again when it is done"])
                return .json(busy.serializedBytes(), status: .conflict)
            }
            let status: HTTPResponse.Status =
                switch summary.outcome {
                case .applied: .ok
                case .rejected: .unprocessableContent
                case .rolledBack: .internalServerError
                }
            return .json(summary.json.serializedBytes() + [0x0A], status: status)
        }
    }
}

extension SwitchyardRuntime.Router.ReloadSummary {
    /// The summary as the admin API and `switchyard reload --json` show it:
    /// `{"outcome": "applied"|"rejected"|"rolled_back", "reason": "…" (unless applied),
    /// "instances": {"kept", "reconfigured", "started", "stopped"}, "routes": {"kept", "started", "retired"}}`,
    /// each list of names.
    var json: JSONValue {
        func names(_ list: [String]) -> JSONValue { .array(list.map { .string($0) }) }
        var object: [String: JSONValue] = [
            "outcome": .string(outcome.rawValue),
            "instances": .object([
                "kept": names(keptInstances), "reconfigured": names(reconfiguredInstances), "started": names(startedInstances),
                "stopped": names(stoppedInstances),
            ]),
            "routes": .object(["kept": names(keptRoutes), "started": names(startedRoutes), "retired": names(retiredRoutes)]),
        ]
        if let reason { object["reason"] = .string(reason) }
        if !skippedIiideas.isEmpty { object["skipped_iiideas"] = .object(skippedIiideas.mapValues { .string($0) }) }
        return .object(object)
    }
}
