import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SwitchyardCore
import SwitchyardRuntime
import SwitchyardSpool
import SwitchyardStore

/// The web console on the admin port (`/console`): the iiideas, the store of templates, each
/// iiidea's settings and runs, the graph with live counters and the dead letters.
///
/// Pages are rendered on the server (``ConsoleTemplates``) and work with JavaScript off; the
/// one script (``ConsoleAssets``) only feeds the live views from server-sent events. Every
/// change is a POST form that carries the session's CSRF token and answers with a redirect
/// (post/redirect/get). Responses forbid inline script (`script-src 'self'`) and framing.
struct Console: Sendable {
    let catalog: IiideaCatalog
    let sessions: ConsoleSessions
    let streams = ConsoleStreams()

    var router: SwitchyardRuntime.Router { catalog.router }
    var spool: Spool? { catalog.spool }
    /// Where the dead letters are: the shared store's, or the spool's.
    var deadLetterStore: (any DeadLetterStore)? { spool.map(router.deadLetters(of:)) }

    /// What every page's headers say: no inline script or style, no framing, no caching.
    static let securityHeaders: [(HTTPField.Name, String)] = [
        (
            .contentSecurityPolicy,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        (.xContentTypeOptions, "nosniff"),
        (HTTPField.Name("Referrer-Policy") ?? .cacheControl, "no-referrer"),
        (.cacheControl, "no-store"),
    ]

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("/") { _, _ in Self.redirect("/console/iiideas") }
        routes.get("console") { _, _ in Self.redirect("/console/iiideas") }
        routes.get("console/assets/console.css") { _, _ in Self.asset(ConsoleAssets.css, type: "text/css; charset=utf-8") }
        routes.get("console/assets/console.js") { _, _ in Self.asset(ConsoleAssets.javaScript, type: "text/javascript; charset=utf-8") }
        addLoginRoutes(to: routes)
        addIiideaPages(to: routes)
        addStorePages(to: routes)
        addGraphPages(to: routes)
        addConnectionPages(to: routes)
    }

    // MARK: Sign-in

    private func addLoginRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("console/login") { request, _ -> Response in
            if !sessions.requiresLogin { return Self.redirect("/console/iiideas") }
            let next = Self.localPath(request.uri.queryParameters.get("next"))
            return page(title: "Sign in", template: "login", data: ["next": next], session: nil)
        }
        routes.post("console/login") { request, _ -> Response in
            let form = try await Self.form(request)
            let next = Self.localPath(form["next"])
            if sessions.isThrottled {
                return page(
                    title: "Sign in", template: "login", data: ["next": next], session: nil,
                    problem: "Too many wrong tokens in the last minute; wait a minute and try again.", status: .tooManyRequests)
            }
            guard let value = sessions.logIn(offering: form["token"] ?? "") else {
                return page(
                    title: "Sign in", template: "login", data: ["next": next], session: nil, problem: "That token is not this router's.",
                    status: .unauthorized)
            }
            var response = Self.redirect(next)
            response.setCookie(ConsoleSessions.cookie(value))
            return response
        }
        routes.post("console/logout") { request, _ -> Response in
            guard let session = sessions.session(of: request) else { return Self.redirect("/console/login") }
            let form = try await Self.form(request)
            guard ConsoleSessions.csrfMatches(form["csrf"], session) else { return Self.csrfRefusal() }
            sessions.logOut(request)
            var response = Self.redirect("/console/login")
            response.setCookie(ConsoleSessions.cookie(nil))
            return response
        }
    }

    /// The answer that sends a browser without a session to sign in, and back here after.
    func signIn(_ request: Request) -> Response {
        let target = request.method == .get ? request.uri.path + (request.uri.query.map { "?" + $0 } ?? "") : "/console/iiideas"
        return Self.redirect("/console/login?next=" + Self.queryEscaped(Self.localPath(target)))
    }

    /// Runs a state change: the session, the form and its CSRF token checked first.
    func change(
        _ request: Request, _ body: @Sendable (ConsoleSessions.Session, [String: String]) async throws -> Response
    ) async throws -> Response {
        guard let session = sessions.session(of: request) else { return signIn(request) }
        let form = try await Self.form(request)
        guard ConsoleSessions.csrfMatches(form["csrf"], session) else { return Self.csrfRefusal() }
        return try await body(session, form)
    }

    // MARK: Rendering

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
        return Self.html(ConsoleTemplates.library.render(layout, withTemplate: "layout") ?? "", status: status)
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var response = Response(status: status, body: .init(byteBuffer: ByteBuffer(string: text)))
        response.headers[.contentType] = "text/html; charset=utf-8"
        for (name, value) in securityHeaders { response.headers[name] = value }
        return response
    }

    static func asset(_ text: String, type: String) -> Response {
        var response = Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: text)))
        response.headers[.contentType] = type
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.cacheControl] = "no-cache"
        return response
    }

    static func redirect(_ location: String) -> Response {
        var response = Response(status: .seeOther)
        response.headers[.location] = location
        response.headers[.cacheControl] = "no-store"
        return response
    }

    static func csrfRefusal() -> Response {
        html(
            "<!doctype html><title>Refused</title><p>This form is out of date or did not come from this console: open the page again and retry.</p>",
            status: .forbidden)
    }

    /// A `next` that stays on this console: a path under /console, else the iiideas page.
    static func localPath(_ text: String?) -> String {
        guard let text, text == "/console" || text.hasPrefix("/console/") || text.hasPrefix("/console?"), !text.contains(".."),
            !text.contains("\\"),
            !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { return "/console/iiideas" }
        return text
    }

    static func queryEscaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~/"))) ?? ""
    }

    /// The query of a GET form as name → value: `+` is a space there, as in a posted form
    /// (the URI's own parameters keep it a plus).
    static func query(_ request: Request) -> [String: String] {
        guard let query = request.uri.query, !query.isEmpty else { return [:] }
        return (try? URLEncodedFormDecoder().decode([String: String].self, from: query)) ?? [:]
    }

    /// A posted form (`application/x-www-form-urlencoded`, at most 64 KiB) as name → value.
    static func form(_ request: Request) async throws -> [String: String] {
        let buffer = try await request.body.collect(upTo: 64 * 1024)
        let text = String(buffer: buffer)
        guard !text.isEmpty else { return [:] }
        do {
            return try URLEncodedFormDecoder().decode([String: String].self, from: text)
        } catch {
            throw HTTPError(.badRequest, message: "the form could not be read")
        }
    }

    /// A time as the pages show it: RFC 3339, UTC, to the second.
    static func time(_ unixNanos: Int64) -> String {
        String(Clock.rfc3339(unixNanos: unixNanos).prefix(19)).replacingOccurrences(of: "T", with: " ") + "Z"
    }

    /// A duration as the pages show it.
    static func duration(_ nanos: Int64) -> String {
        nanos < 1_000_000_000 ? String(format: "%.1f ms", Double(nanos) / 1e6) : String(format: "%.2f s", Double(nanos) / 1e9)
    }
}
