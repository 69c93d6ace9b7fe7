import Hummingbird
import SwitchyardCore
import SwitchyardRuntime

extension Console {
    /// `/console/connections`: the OAuth 2.0 connections of the route files, each with a button
    /// that starts the authorization in this browser (back here once the provider answered)
    /// and one that forgets its tokens.
    func addConnectionPages(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("console/connections") { request, _ -> Response in
            guard let session = sessions.session(of: request) else { return signIn(request) }
            let query = Self.query(request)
            // Only a declared connection's name is repeated: the page echoes no text a link chose.
            let names = Set(router.oauth.list().compactMap { $0["name"]?.stringValue })
            let notice =
                query["connected"].flatMap { names.contains($0) ? "Connected \($0)." : nil }
                ?? query["disconnected"].flatMap { names.contains($0) ? "Disconnected \($0)." : nil }
            return connectionsPage(session: session, notice: notice)
        }
        routes.post("console/connections/:name/connect") { request, context -> Response in
            let name = try context.decodedParameter("name")
            let callback = AdminServer.oauthCallback(authority: request.head.authority)
            return try await change(request) { session, _ in
                do {
                    let url = try router.oauth.start(name, callback: callback, returnTo: "/console/connections")
                    // Off to the provider: it sends the browser back to the callback, which comes here.
                    var response = Response(status: .seeOther)
                    response.headers[.location] = url
                    response.headers[.cacheControl] = "no-store"
                    return response
                } catch let error as RouterError {
                    return connectionsPage(session: session, problem: error.reason, status: .notFound)
                }
            }
        }
        routes.post("console/connections/:name/disconnect") { request, context -> Response in
            let name = try context.decodedParameter("name")
            return try await change(request) { session, _ in
                do {
                    try router.oauth.disconnect(name)
                    return Self.redirect("/console/connections?disconnected=" + Self.queryEscaped(name))
                } catch let error as RouterError {
                    return connectionsPage(session: session, problem: error.reason, status: .serviceUnavailable)
                }
            }
        }
    }

    private func connectionsPage(
        session: ConsoleSessions.Session, notice: String? = nil, problem: String? = nil, status: HTTPResponse.Status = .ok
    ) -> Response {
        var response = page(
            title: "Connections", template: "connections", data: ["connections": connectionViews()], session: session, nav: "connections",
            notice: notice, problem: problem, status: status)
        // The Connect buttons post here and are redirected to a provider: a form's redirect is
        // held to the page's form-action, so this page (only) also allows the declared providers.
        let providers = router.oauth.authorizationOrigins()
        if !providers.isEmpty, let policy = response.headers[.contentSecurityPolicy] {
            response.headers[.contentSecurityPolicy] = policy.replacingOccurrences(
                of: "form-action 'self'", with: "form-action 'self' " + providers.joined(separator: " "))
        }
        return response
    }

    /// Each connection as the page shows it, with the iiideas waiting for it.
    private func connectionViews() -> [[String: Any]] {
        let waiting = router.iiideas.filter { $0.enabled && $0.inactiveReason != nil }
        return router.oauth.list().map { connection in
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

extension ConsoleTemplates {
    static let connectionPages: [String: String] = [
        "connections": """
        <p class="help">OAuth 2.0 connections of the route files (<code>oauth:</code>). An <code>http</code> piece with <code>auth: { oauth: NAME }</code> calls with the connection's token; its iiidea waits until the connection is connected.</p>
        {{^connections}}<p>The route files declare no connection.</p>{{/connections}}
        {{#connections}}
        <section class="card" data-connection="{{name}}">
        <h2>{{name}}</h2>
        <p><span class="badge {{#connected}}on{{/connected}}{{^connected}}warn{{/connected}}" data-status>{{#connected}}connected{{/connected}}{{^connected}}not connected{{/connected}}</span>
        {{#expires_at}} <span class="reason">token until {{expires_at}}</span>{{/expires_at}}{{#scope}} <span class="reason">scope {{scope}}</span>{{/scope}}</p>
        {{#has_waiting}}<p class="reason">Waiting for it: {{waiting}}</p>{{/has_waiting}}
        {{#last_error}}<p class="problem">{{last_error}}</p>{{/last_error}}
        <form method="post" action="/console/connections/{{name}}/connect" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit">{{#connected}}Connect again{{/connected}}{{^connected}}Connect{{/connected}}</button>
        </form>
        {{#connected}}
        <form method="post" action="/console/connections/{{name}}/disconnect" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="secondary">Disconnect</button>
        </form>
        {{/connected}}
        </section>
        {{/connections}}
        """
    ]
}
