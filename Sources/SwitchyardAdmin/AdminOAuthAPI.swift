import Hummingbird
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardRuntime

/// The OAuth 2.0 connections (`oauth:` in the route files):
/// - `GET /v1/oauth`: every connection, whether it is connected, when its token expires
///   (never a token);
/// - `POST /v1/oauth/{name}/start`: `{authorize_url}` — open it in a browser; the provider
///   sends the browser back to the callback (the connection's `redirect_url`, by default
///   this port's `/v1/oauth/callback` under the host the request named);
/// - `GET /v1/oauth/callback?state=…&code=…`: finishes the flow. It needs no bearer token
///   (a browser arrives from the provider): the single-use `state` of a flow an admin
///   started is what lets it in;
/// - `DELETE /v1/oauth/{name}`: forgets the tokens.
///
/// It owns the iiideas whose connections it starts and completes; separate from
/// ``AdminServer``, which registers it, and from the console's connections page, which shares
/// its callback.
struct AdminOAuthAPI: AdminRouteGroup {
    let iiideas: RouterIiideas

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("v1/oauth") { _, _ -> Response in
            .json(JSONValue.object(["connections": .array(iiideas.oauth.list())]).serializedBytes() + [0x0A])
        }
        routes.post("v1/oauth/:name/start") { request, context -> Response in
            let name = context.parameters.get("name") ?? ""
            do {
                let url = try iiideas.oauth.start(name, callback: Self.callback(authority: request.head.authority))
                return .json(JSONValue.object(["authorize_url": .string(url)]).serializedBytes() + [0x0A])
            } catch let error as OAuthError {
                // No such connection, or (the router's side) no key to keep its tokens with.
                return .refusal(
                    iiideas.oauth.list().contains { $0["name"]?.stringValue == name } ? .serviceUnavailable : .notFound, error.reason
                )
            }
        }
        routes.get(RouterPath(Self.callbackPath)) { request, _ -> Response in
            let query = request.uri.queryParameters
            do {
                let (name, returnTo) = try await iiideas.oauth.complete(
                    state: query.get("state") ?? "", code: query.get("code"), error: query.get("error"))
                // A flow the console started goes back to its page (a fixed path of this port).
                if let returnTo {
                    return Console.redirect(returnTo + "?connected=" + Console.queryEscaped(name))
                }
                return .text("Connected \(name). You may close this window.\n")
            } catch let error as OAuthError {
                return .text("Not connected: \(error.reason)\n", status: .badRequest)
            }
        }
        routes.delete("v1/oauth/:name") { _, context -> Response in
            do {
                try iiideas.oauth.disconnect(context.parameters.get("name") ?? "")
                return .json(JSONValue.object(["connected": false]).serializedBytes() + [0x0A])
            } catch let error as OAuthError {
                return .refusal(.serviceUnavailable, error.reason)
            }
        }
    }

    /// Where providers send browsers back; the one path under `/v1` without the bearer token.
    static let callbackPath = "/v1/oauth/callback"

    /// The callback under the host a request named (the guard let it in: an IP literal,
    /// `localhost` or an allowed name), rebuilt from its host and port only.
    static func callback(authority: String?) -> String {
        let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]")
        let host = authority.flatMap { $0.allSatisfy(plain.contains) && !$0.isEmpty ? $0 : nil } ?? "127.0.0.1"
        return "http://\(host)\(callbackPath)"
    }
}
