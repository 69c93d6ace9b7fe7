import Hummingbird
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardRuntime

/// `/console/connections`: the OAuth 2.0 connections of the route files, each with a button
/// that starts the authorization in this browser (back here once the provider answered)
/// and one that forgets its tokens.
///
/// It owns the iiideas whose connections it lists and starts; separate from ``Console``
/// because its page alone widens the form-action policy to the providers.
struct ConsoleConnectionPages: Sendable {
    let iiideas: RouterIiideas
    let frame: ConsoleFrame

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("console/connections") { request, _ -> Response in
            guard let session = frame.sessions.session(of: request) else { return frame.signIn(request) }
            let query = Console.query(request)
            // Only a declared connection's name is repeated: the page echoes no text a link chose.
            let names = Set(iiideas.oauth.list().compactMap { $0["name"]?.stringValue })
            let notice =
                query["connected"].flatMap { names.contains($0) ? "Connected \($0)." : nil }
                ?? query["disconnected"].flatMap { names.contains($0) ? "Disconnected \($0)." : nil }
            return connectionsPage(session: session, notice: notice)
        }
        routes.post("console/connections/:name/connect") { request, context -> Response in
            let name = try context.decodedParameter("name")
            let callback = AdminOAuthAPI.callback(authority: request.head.authority)
            return try await frame.change(request) { session, _ in
                do {
                    let url = try iiideas.oauth.start(name, callback: callback, returnTo: "/console/connections")
                    // Off to the provider: it sends the browser back to the callback, which comes here.
                    var response = Response(status: .seeOther)
                    response.headers[.location] = url
                    response.headers[.cacheControl] = "no-store"
                    return response
                } catch let error as OAuthError {
                    return connectionsPage(session: session, problem: error.reason, status: .notFound)
                }
            }
        }
        routes.post("console/connections/:name/disconnect") { request, context -> Response in
            let name = try context.decodedParameter("name")
            return try await frame.change(request) { session, _ in
                do {
                    try iiideas.oauth.disconnect(name)
                    return Console.redirect("/console/connections?disconnected=" + Console.queryEscaped(name))
                } catch let error as OAuthError {
                    return connectionsPage(session: session, problem: error.reason, status: .serviceUnavailable)
                }
            }
        }
    }

    private func connectionsPage(
        session: ConsoleSessions.Session, notice: String? = nil, problem: String? = nil, status: HTTPResponse.Status = .ok
    ) -> Response {
        var response = frame.page(
            title: "Connections", template: "connections", data: ["connections": connectionViews()], session: session, nav: "connections",
            notice: notice, problem: problem, status: status)
        // The Connect buttons post here and are redirected to a provider: a form's redirect is
        // held to the page's form-action, so this page (only) also allows the declared providers.
        let providers = iiideas.oauth.authorizationOrigins()
        if !providers.isEmpty, let policy = response.headers[.contentSecurityPolicy] {
            response.headers[.contentSecurityPolicy] = policy.replacingOccurrences(
                of: "form-action 'self'", with: "form-action 'self' " + providers.joined(separator: " "))
        }
        return response
    }

    /// Each connection as the page shows it, with the iiideas waiting for it.
    private func connectionViews() -> [[String: Any]] {
        let waiting = iiideas.list.filter { $0.enabled && $0.inactiveReason != nil }
        return iiideas.oauth.list().map { connection in
            let name = connection["name"]?.stringValue ?? ""
            var view: [String: Any] = ["name": name, "connected": connection["connected"]?.boolValue == true]
            view["expires_at"] = connection["expires_at"]?.stringValue
            view["scope"] = connection["scope"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            view["last_error"] = connection["last_error"]?.stringValue
            let blocked = waiting.filter { $0.inactiveReason?.contains("connect \(name) first") == true }.map(\.iiidea.id)
            view["waiting"] = blocked.joined(separator: ", ")
            view["has_waiting"] = !blocked.isEmpty
            return view
        }
    }
}
