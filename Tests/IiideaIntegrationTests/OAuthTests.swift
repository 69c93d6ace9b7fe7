import Foundation
import Testing

@testable import IntegrationSupport

/// OAuth 2.0 connections for iiidea pieces, against a strict provider in Python
/// (`oauth_provider.py`: authorization endpoint, token endpoint checking PKCE, refresh with
/// rotation, a protected resource): an `http` piece that needs a connection nobody connected
/// is inactive with "connect NAME first"; a person connects it through the admin API; the
/// piece then calls with the token, the token is refreshed before it expires, kept sealed in
/// the store across a restart, and forgotten on request.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct OAuthTests {
    static func startRouter(_ sandbox: Sandbox, provider: PythonServer) async throws -> (RouterProcess, String) {
        try await RouterProcess.startWithAdmin(
            sandbox, extra: ["--spool", sandbox.path("state/spool.db")], environment: ["EXAMPLE_CLIENT_SECRET": "provider-secret"])
    }

    @Test func aPieceRefusesUntilConnectedThenCallsWithARefreshedSealedToken() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let provider = try OAuthExample.provider(in: sandbox, lifetime: 3)
        defer { provider.stop() }
        try sandbox.writeRoutes(OAuthExample.routes(provider: provider, out: sandbox.path("out.jsonl")))
        var (router, admin) = try await Self.startRouter(sandbox, provider: provider)

        // Nobody connected it: the piece refuses, and says what to do.
        await router.waitUntil("the refusal") { (try? OAuthExample.fetch(admin))?["inactive_reason"] != nil }
        #expect(
            try OAuthExample.fetch(admin)["inactive_reason"] as? String
                == "http refused: connect example first (POST /v1/oauth/example/start, or the console)")
        #expect(try OAuthExample.connection(admin)["connected"] as? Bool == false)

        // A person connects it: the admin API gives the authorization URL (PKCE S256); the
        // browser (here: URLSession following the redirects) goes to the provider, which sends
        // it back to the router's callback.
        let start = try HTTPExchange.send("http://" + admin + "/v1/oauth/example/start", method: "POST")
        let authorize = try #require(start.json["authorize_url"] as? String, "\(start.body)")
        let query = try #require(URLComponents(string: authorize)?.queryItems)
        #expect(query.first { $0.name == "code_challenge_method" }?.value == "S256")
        #expect(query.first { $0.name == "redirect_uri" }?.value == "http://\(admin)/v1/oauth/callback")
        #expect(query.first { $0.name == "scope" }?.value == "read")
        let browser = try HTTPExchange.send(authorize)
        #expect(browser.status == 200 && browser.body == "Connected example. You may close this window.\n", "\(browser.body)")
        // A callback replayed (same state) is refused: the flow is single-use.
        let replay = try HTTPExchange.send("http://" + admin + "/v1/oauth/callback?state=forged&code=x")
        #expect(replay.status == 400 && replay.body.contains("unknown or expired authorization"), "\(replay.body)")

        // Connected: the iiidea is asked again by itself, and its runs carry the token.
        await router.waitUntil("the iiidea active") { (try? OAuthExample.fetch(admin))?["active"] as? Bool == true }
        router.send("go\n")
        await router.waitUntil("the first call") { sandbox.lines(of: "out.jsonl").count == 1 }
        let first = try #require(try sandbox.jsonLines(of: "out.jsonl").first)
        #expect(first["ok"] as? Bool == true, "\(first)")
        let generation = try #require(first["token_generation"] as? Int)

        // Refreshed before it expires (3 s tokens), with the rotated refresh token.
        let refreshes = try OAuthExample.stats(provider)["token_refresh"] as? Int ?? 0
        let expiry = try OAuthExample.connection(admin)["expires_at"] as? String
        await router.waitUntil("a refresh") { ((try? OAuthExample.stats(provider))?["token_refresh"] as? Int ?? 0) > refreshes }
        // The provider counts a refresh before it answers: the router has the new token once
        // the connection's expiry moved.
        await router.waitUntil("the refreshed token stored") { (try? OAuthExample.connection(admin))?["expires_at"] as? String != expiry }
        router.send("again\n")
        await router.waitUntil("the second call") { sandbox.lines(of: "out.jsonl").count == 2 }
        let second = try #require(try sandbox.jsonLines(of: "out.jsonl").last)
        #expect((second["token_generation"] as? Int ?? 0) > generation, "\(second)")
        #expect(try OAuthExample.stats(provider)["resource_refused"] as? Int == 0)

        // Sealed in the store: no token field in the clear, the key owner-only.
        #expect(router.stop() == 0)
        for file in ["spool.db", "spool.db-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: sandbox.path("state/\(file)")))) ?? Data()
            #expect(bytes.range(of: Data("refresh_token".utf8)) == nil, "\(file) holds a token in the clear")
        }
        let key = try FileManager.default.attributesOfItem(atPath: sandbox.path("state/oauth.key"))
        #expect((key[.posixPermissions] as? Int) == 0o600)

        // Kept across a restart; a token that expired meanwhile is refreshed before the call.
        (router, admin) = try await Self.startRouter(sandbox, provider: provider)
        #expect(try OAuthExample.connection(admin)["connected"] as? Bool == true)
        await router.waitUntil("the iiidea active after the restart") { (try? OAuthExample.fetch(admin))?["active"] as? Bool == true }
        router.send("after restart\n")
        await router.waitUntil("the third call") { sandbox.lines(of: "out.jsonl").count == 3 }
        #expect(try sandbox.jsonLines(of: "out.jsonl").last?["ok"] as? Bool == true)

        // Forgotten on request: the next run fails at the service with the reason.
        #expect(try HTTPExchange.send("http://" + admin + "/v1/oauth/example", method: "DELETE").status == 200)
        #expect(try OAuthExample.connection(admin)["connected"] as? Bool == false)
        router.send("disconnected\n")
        await router.waitUntil("the failed run") { router.standardError.contains("connect example first") }
        #expect(sandbox.lines(of: "out.jsonl").count == 3)
        #expect(router.stop() == 0)
    }

    @Test func aSecretInTheRouteFileAnUndeclaredConnectionAndATemplatedHostAreRefused() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            oauth:
              example: { authorize_url: "https://p.example/authorize", token_url: "https://p.example/token", client_id: c, client_secret: plain }
              good: { authorize_url: "https://p.example/authorize", token_url: "https://p.example/token", client_id: c, client_secret: "${GOOD_SECRET}" }
            instances:
              in: { plugin: core, console: {} }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            iiideas:
              - id: fetch
                trigger: { port: in.lines }
                service: { piece: http, preferences: { url: "https://api.example/x", auth: { oauth: other } } }
                action: { port: out.write }
              - id: anywhere
                trigger: { port: in.lines }
                service: { piece: http, preferences: { url: "https://{{body}}/x", auth: { oauth: good } } }
                action: { port: out.write }
            """)
        let result = try RouterProcess.runToExit(
            ["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root, environment: ["GOOD_SECRET": "s"])
        #expect(result.status != 0)
        #expect(result.errors.contains("oauth.example.client_secret must come from the environment"), "\(result.errors)")
        #expect(
            result.errors.contains("preferences.auth names OAuth connection 'other', which oauth: does not declare"), "\(result.errors)")
        // A token goes where the route file says: the host of such a URL is no template.
        #expect(result.errors.contains("preferences.url must name its scheme and host literally"), "\(result.errors)")
    }
}
