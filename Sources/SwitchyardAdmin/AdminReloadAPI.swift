import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardRuntime

/// `POST /reload`: re-reads the route files as SIGHUP does and answers the summary (see
/// ``SwitchyardRuntime/Router/ReloadSummary/json``): 200 applied, 422 rejected (nothing
/// changed), 500 rolled back (the previous graph runs again), 409 while another reload
/// runs. A POST, behind the same guard as every other change: the token, the Host check and
/// the cross-site check.
///
/// It owns the reload the process gave (nil: the router reloads only on SIGHUP); separate from
/// ``AdminServer``, which only registers it.
struct AdminReloadAPI: AdminRouteGroup {
    /// Re-reads the route files; `false`: nil while another reload runs rather than waiting.
    let reload: (@Sendable (_ waiting: Bool) -> SwitchyardRuntime.Router.ReloadSummary?)?

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
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
