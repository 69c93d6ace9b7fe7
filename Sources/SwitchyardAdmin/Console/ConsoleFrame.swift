import Hummingbird
import SwitchyardCore

/// What every console page is served in: the sign-in check, the CSRF-checked change, the
/// layout around a page, and the ceiling on open live views.
///
/// It owns the sessions and the live-view count that the page groups (``ConsoleIiideaPages``,
/// ``ConsoleStorePages``, ``ConsoleGraphPages``, ``ConsoleConnectionPages``) share: one value,
/// handed to each, so every group checks the same sessions and counts against the same ceiling.
struct ConsoleFrame: Sendable {
    let sessions: ConsoleSessions
    let streams = ConsoleStreams()

    /// The answer that sends a browser without a session to sign in, and back here after.
    func signIn(_ request: Request) -> Response {
        let target = request.method == .get ? request.uri.path + (request.uri.query.map { "?" + $0 } ?? "") : "/console/iiideas"
        return Console.redirect("/console/login?next=" + Console.queryEscaped(Console.localPath(target)))
    }

    /// Runs a state change: the session, the form and its CSRF token checked first.
    func change(
        _ request: Request, _ body: @Sendable (ConsoleSessions.Session, [String: String]) async throws -> Response
    ) async throws -> Response {
        guard let session = sessions.session(of: request) else { return signIn(request) }
        let form = try await Console.form(request)
        guard ConsoleSessions.csrfMatches(form["csrf"], session) else { return Console.csrfRefusal() }
        return try await body(session, form)
    }

    /// A whole page: `template` rendered with `data` inside the layout.
    func page(
        title: String, template: String, data: [String: Any], session: ConsoleSessions.Session?, nav: String? = nil, notice: String? = nil,
        problem: String? = nil, live: (kind: String, source: String)? = nil, status: HTTPResponse.Status = .ok
    ) -> Response {
        var data = data
        data["csrf"] = session?.csrf
        let body = ConsoleTemplates.library.render(data, withTemplate: template) ?? ""
        var layout: [String: Any] = ["title": title, "body": body, "csrf": session?.csrf ?? ""]
        layout["signed_in"] = session != nil && sessions.requiresLogin
        if let nav { layout["nav_\(nav)"] = true }
        layout["notice"] = notice
        // Errors may quote a configuration value (a URL, a header): secrets are masked, as in the log.
        layout["problem"] = problem.map(Redaction.redact)
        if let live {
            layout["live"] = live.kind
            layout["live_source"] = live.source
        }
        return Console.html(ConsoleTemplates.library.render(layout, withTemplate: "layout") ?? "", status: status)
    }

    /// A 404 page for something a link named that is not there; `message` says what.
    func notFound(_ session: ConsoleSessions.Session, _ message: String) -> Response {
        page(title: "Not found", template: "iiideas", data: ["iiideas": []], session: session, problem: message, status: .notFound)
    }

    /// A server-sent event stream for a live view of a signed-in browser (see
    /// ``EventStream/response(tick:onTick:isOpen:onEnd:source:)``); at most ``ConsoleStreams/limit``.
    func eventStream(
        for request: Request, tick: Duration, onTick: @escaping @Sendable () -> String = { ": ping\n\n" },
        source: (@Sendable (AsyncStream<String>.Continuation) async -> Void)? = nil
    ) -> Response {
        guard sessions.isSignedIn(request) else { return Response(status: .unauthorized) }
        guard streams.enter() else { return Response(status: .serviceUnavailable, headers: [.retryAfter: "30"]) }
        let sessions = self.sessions
        let streams = self.streams
        return EventStream.response(
            tick: tick, onTick: onTick, isOpen: { sessions.isSignedIn(request) }, onEnd: { streams.leave() }, source: source)
    }
}
