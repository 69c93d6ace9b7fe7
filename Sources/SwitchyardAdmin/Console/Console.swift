import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SwitchyardCore
import SwitchyardIiideas
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
///
/// The entry point the ``AdminServer`` registers: it signs browsers in and out and serves the
/// assets itself, and composes the page groups that own the rest (``ConsoleIiideaPages``,
/// ``ConsoleStorePages``, ``ConsoleGraphPages``, ``ConsoleConnectionPages``) around one
/// ``ConsoleFrame``. The responses every group gives (a page's headers, a redirect, a form
/// read) are its static functions.
struct Console: AdminRouteGroup {
    let frame: ConsoleFrame
    let iiideaPages: ConsoleIiideaPages
    let storePages: ConsoleStorePages
    let graphPages: ConsoleGraphPages
    let connectionPages: ConsoleConnectionPages

    /// The console over `catalog` (its router and spool), signing browsers in with `sessions`.
    init(catalog: IiideaCatalog, sessions: ConsoleSessions) {
        let frame = ConsoleFrame(sessions: sessions)
        let forms = ConsolePreferenceForms(iiideas: catalog.iiideas)
        self.frame = frame
        iiideaPages = ConsoleIiideaPages(catalog: catalog, frame: frame, forms: forms)
        storePages = ConsoleStorePages(catalog: catalog, frame: frame, forms: forms)
        graphPages = ConsoleGraphPages(router: catalog.router, spool: catalog.spool, frame: frame)
        connectionPages = ConsoleConnectionPages(iiideas: catalog.iiideas, frame: frame)
    }

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
        iiideaPages.addRoutes(to: routes)
        storePages.addRoutes(to: routes)
        graphPages.addRoutes(to: routes)
        connectionPages.addRoutes(to: routes)
    }

    // MARK: Sign-in

    private func addLoginRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("console/login") { request, _ -> Response in
            if !frame.sessions.requiresLogin { return Self.redirect("/console/iiideas") }
            let next = Self.localPath(request.uri.queryParameters.get("next"))
            return frame.page(title: "Sign in", template: "login", data: ["next": next], session: nil)
        }
        routes.post("console/login") { request, _ -> Response in
            let form = try await Self.form(request)
            let next = Self.localPath(form["next"])
            if frame.sessions.isThrottled {
                return frame.page(
                    title: "Sign in", template: "login", data: ["next": next], session: nil,
                    problem: "Too many wrong tokens in the last minute; wait a minute and try again.", status: .tooManyRequests)
            }
            guard let value = frame.sessions.logIn(offering: form["token"] ?? "") else {
                return frame.page(
                    title: "Sign in", template: "login", data: ["next": next], session: nil, problem: "That token is not this router's.",
                    status: .unauthorized)
            }
            var response = Self.redirect(next)
            response.setCookie(ConsoleSessions.cookie(value))
            return response
        }
        routes.post("console/logout") { request, _ -> Response in
            guard let session = frame.sessions.session(of: request) else { return Self.redirect("/console/login") }
            let form = try await Self.form(request)
            guard ConsoleSessions.csrfMatches(form["csrf"], session) else { return Self.csrfRefusal() }
            frame.sessions.logOut(request)
            var response = Self.redirect("/console/login")
            response.setCookie(ConsoleSessions.cookie(nil))
            return response
        }
    }

    // MARK: Responses

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

    /// The status a page answers a refused catalog change with.
    static func status(of refusal: IiideaCatalog.Refusal) -> HTTPResponse.Status {
        switch refusal.kind {
        case .notFound: .notFound
        case .conflict: .conflict
        case .invalid: .unprocessableContent
        case .unavailable: .serviceUnavailable
        }
    }

    /// The notice a redirect after a change asks for (`?done=…&id=…`): fixed sentences only.
    static func notice(_ request: Request) -> String? {
        let query = Self.query(request)
        // Only an id as ids are written: a crafted link cannot put a sentence in the banner.
        let given = query["id"] ?? ""
        let id = given.count <= 64 && given.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) ? given : "it"
        switch query["done"] {
        case "enabled": return "Enabled \(id)."
        case "disabled": return "Disabled \(id)."
        case "deleted": return "Deleted \(id)."
        case "obtained": return "Obtained \(id); it runs now."
        case "saved": return "Saved; the pieces run with the new preferences."
        case "reset": return "Back to the route file's preferences."
        case "started": return "Started a test run; it appears below."
        case "replayed": return "Replayed dead letter \(id)."
        case "dropped": return "Dropped dead letter \(id)."
        default: return nil
        }
    }

    /// JSON text indented for reading; other text as it is.
    static func pretty(_ text: String?) -> String {
        guard let text else { return "" }
        guard let value = try? JSONValue(parsing: Array(text.utf8)),
            let object = try? JSONSerialization.jsonObject(with: Data(value.serialized().utf8), options: [.fragmentsAllowed]),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed])
        else { return text }
        return String(decoding: data, as: UTF8.self)
    }
}
