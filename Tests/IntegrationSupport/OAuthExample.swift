import Foundation
import Testing

/// The OAuth connection `example` to the provider double (`oauth_provider.py`), the iiidea
/// `fetch` that calls through it, and what the router and the provider say about them.
/// Separate from the OAuth suite because the scale-out suite, in another target, runs the
/// same connection on several routers.
enum OAuthExample {
    /// The provider, with access tokens lasting `lifetime` seconds.
    static func provider(in sandbox: Sandbox, lifetime: Int) throws -> PythonServer {
        let portFile = sandbox.path("oauth.port")
        let script = BuildProducts.packageRoot.appendingPathComponent("Tests/IntegrationTests/Support/oauth_provider.py").path
        return try PythonServer(
            arguments: [
                script, portFile, "--client-id", "switchyard", "--client-secret", "provider-secret", "--access-lifetime", String(lifetime),
            ], portFile: portFile, what: "the OAuth provider")
    }

    /// The connection `example` to `provider`, and the iiidea `fetch`: a line on the console
    /// calls the provider's resource with its token, the answer goes to `out`.
    static func routes(provider: PythonServer, out: String) -> String {
        let base = "http://127.0.0.1:\(provider.port)"
        return """
            oauth:
              example:
                authorize_url: \(base)/authorize
                token_url: \(base)/token
                client_id: switchyard
                client_secret: "${EXAMPLE_CLIENT_SECRET}"
                scopes: [read]
            instances:
              in: { plugin: core, console: {} }
              out: { plugin: core, file: { path: "\(out)", format: body } }
            iiideas:
              - id: fetch
                trigger: { port: in.lines }
                service: { piece: http, preferences: { url: "\(base)/resource", allow_private: true, auth: { oauth: example } } }
                action: { port: out.write }
            """
    }

    /// The provider's counters (`GET /stats`): authorizations, tokens granted and refreshed,
    /// resource calls answered and refused.
    static func stats(_ provider: PythonServer) throws -> [String: Any] {
        try HTTPExchange.send("http://127.0.0.1:\(provider.port)/stats").json
    }

    /// The router's iiidea `fetch`, as `GET /v1/iiideas` lists it.
    static func fetch(_ admin: String) throws -> [String: Any] {
        let listed = try HTTPExchange.send("http://" + admin + "/v1/iiideas")
        let iiideas = (try? JSONSerialization.jsonObject(with: Data(listed.body.utf8))) as? [[String: Any]] ?? []
        return iiideas.first { $0["id"] as? String == "fetch" } ?? [:]
    }

    /// The first connection `GET /v1/oauth` lists; throws (with the answer) when there is none,
    /// so a failed or slow request is not read as "not connected".
    static func connection(_ admin: String) throws -> [String: Any] {
        let answer = try HTTPExchange.send("http://" + admin + "/v1/oauth")
        guard let first = (answer.json["connections"] as? [[String: Any]])?.first else {
            throw SandboxError("GET /v1/oauth on \(admin) answered \(answer.status) with no connection: \(answer.body)")
        }
        return first
    }
}
