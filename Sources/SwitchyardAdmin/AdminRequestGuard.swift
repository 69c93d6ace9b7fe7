import Hummingbird
import NIOCore
import SwitchyardCore

/// Decides, before any route runs, whether a request may reach the admin API.
///
/// - `Host` must be an IP literal, `localhost`, or one of `admin.allowed_hosts`: a page that
///   rebinds its own DNS name to 127.0.0.1 (DNS rebinding) still sends its own name, and is refused.
/// - Requests that change state (anything but GET and HEAD) are refused when a browser says they
///   come from another site (`Sec-Fetch-Site`, else an `Origin` that is not this host): a page
///   cannot post to a router on the visitor's machine.
/// - With a token, every path but `/healthz`, the console and the OAuth callback needs
///   `Authorization: Bearer <token>`; the console (`/console`) signs browsers in itself
///   (``ConsoleSessions``), the callback is let in by the single-use `state` of a flow an admin
///   started.
struct AdminRequestGuard<Context: RequestContext>: RouterMiddleware {
    let token: String?
    let allowedHosts: Set<String>

    init(configuration: AdminServer.Configuration) {
        token = configuration.token.flatMap { $0.isEmpty ? nil : $0 }
        allowedHosts = Set(configuration.allowedHosts.map { $0.lowercased() })
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let host = request.head.authority, isAllowed(host: host) else {
            return Self.refusal(.misdirectedRequest, "this admin port does not answer to that Host (see admin.allowed_hosts)")
        }
        if request.method != .get, request.method != .head, isCrossSite(request, host: host) {
            return Self.refusal(.forbidden, "cross-site requests may not change the router")
        }
        // The console signs browsers in with a session cookie of its own (ConsoleSessions).
        if let token, request.uri.path != "/healthz", request.uri.path != AdminOAuthAPI.callbackPath, !Self.isConsole(request.uri.path),
            !BearerToken.matches(header: request.headers[.authorization], expected: token)
        {
            var response = Self.refusal(.unauthorized, "a bearer token is required")
            response.headers[.wwwAuthenticate] = "Bearer"
            return response
        }
        return try await next(request, context)
    }

    /// `/`, `/console` and below: pages that check their own session.
    static func isConsole(_ path: String) -> Bool {
        path == "/" || path == "/console" || path.hasPrefix("/console/")
    }

    /// `host[:port]`, `[v6]:port`: the name part must be an IP literal, `localhost` or allowed.
    func isAllowed(host authority: String) -> Bool {
        let name = AdminHost.hostName(of: authority)
        if name.isEmpty { return false }
        if name == "localhost" || AdminHost.isIPLiteral(name) { return true }
        return allowedHosts.contains(name)
    }

    private func isCrossSite(_ request: Request, host: String) -> Bool {
        if let site = request.headers.first(where: { $0.name.canonicalName == "sec-fetch-site" })?.value {
            return site != "same-origin" && site != "none"
        }
        guard let origin = request.headers[.origin] else { return false }
        // "null" (sandboxed frames, file: pages) is a foreign origin too.
        guard let schemeEnd = origin.range(of: "://") else { return true }
        return origin[schemeEnd.upperBound...].lowercased() != host.lowercased()
    }

    private static func refusal(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(["error": .string(message)]).serializedBytes() + [0x0A])))
    }
}

/// Reading the host part of `Host` headers and listen addresses.
enum AdminHost {
    static func hostName(of authority: String) -> String {
        let text = authority.lowercased()
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return "" }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") { return String(text[..<colon]) }
        return text
    }

    static func isIPLiteral(_ name: String) -> Bool {
        (try? SocketAddress(ipAddress: name, port: 0)) != nil
    }

    /// 127.0.0.0/8, ::1 and `localhost`; any other name may resolve anywhere.
    static func isLoopback(_ host: String) -> Bool {
        let name = hostName(of: host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host)
        if name == "localhost" || name == "::1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
