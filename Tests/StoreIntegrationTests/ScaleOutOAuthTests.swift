import Foundation
import Testing

@testable import IntegrationSupport

/// With `store.url`, OAuth connections live in PostgreSQL, sealed with the key every router
/// shares (`SWITCHYARD_OAUTH_KEY`): a connection made on one router serves the others, a
/// refresh by one reaches the others (the provider rotates refresh tokens, so a second refresh
/// of the same token would be refused), and a removal on one removes it on all.
@Suite(.timeLimit(.minutes(2)))
struct ScaleOutOAuthTests {
    /// A key for the test: 32 bytes in base64.
    static let key = Data((0..<32).map { UInt8($0) }).base64EncodedString()

    private static func start(_ server: PostgresServer, provider: PythonServer) async throws -> (
        router: RouterProcess, admin: String, sandbox: Sandbox
    ) {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            spool: { path: "\(sandbox.path("state/spool.db"))" }
            store: { url: "${STORE_URL}" }

            """ + OAuthExample.routes(provider: provider, out: sandbox.path("out.jsonl")))
        let (router, admin) = try await RouterProcess.startWithAdmin(
            sandbox,
            environment: ["STORE_URL": server.url, "EXAMPLE_CLIENT_SECRET": "provider-secret", "SWITCHYARD_OAUTH_KEY": Self.key])
        return (router, admin, sandbox)
    }

    @Test func aConnectionMadeOnOneRouterServesBothAndSurvivesTheirRefreshes() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let providerSandbox = try Sandbox()
        let provider = try OAuthExample.provider(in: providerSandbox, lifetime: 3)
        defer { provider.stop() }
        let first = try await Self.start(server, provider: provider)
        let second = try await Self.start(server, provider: provider)

        // Connected through the first router.
        let start = try HTTPExchange.send("http://" + first.admin + "/v1/oauth/example/start", method: "POST")
        let authorize = try #require(start.json["authorize_url"] as? String, "\(start.body)")
        #expect(try HTTPExchange.send(authorize).status == 200)
        await second.router.waitUntil("the second router connected too", timeout: .seconds(5)) {
            (try? OAuthExample.connection(second.admin))?["connected"] as? Bool == true
        }
        await second.router.waitUntil("the second router's iiidea active") {
            (try? OAuthExample.fetch(second.admin))?["active"] as? Bool == true
        }

        // Tokens last 3 s: both routers keep calling across several refreshes of one rotating
        // refresh token, and neither is refused nor disconnected.
        func refreshes() -> Int { ((try? OAuthExample.stats(provider))?["token_refresh"] as? Int) ?? 0 }
        for round in 1...4 {
            let before = refreshes()
            for node in [first, second] {
                node.router.send("call \(round)\n")
                await node.router.waitUntil("call \(round)") { node.sandbox.lines(of: "out.jsonl").count == round }
            }
            await first.router.waitUntil("a refresh after round \(round)") { refreshes() > before }
        }
        for node in [first, second] {
            let calls = try node.sandbox.jsonLines(of: "out.jsonl")
            #expect(calls.count == 4 && calls.allSatisfy { $0["ok"] as? Bool == true }, "\(calls)\n\(node.router.standardError)")
            #expect(try OAuthExample.connection(node.admin)["connected"] as? Bool == true, "\(node.router.standardError)")
            #expect(!node.router.standardError.contains("refresh failed"), "\(node.router.standardError)")
        }
        #expect(try OAuthExample.stats(provider)["resource_refused"] as? Int == 0)
        #expect(try server.psql("SELECT count(*) FROM oauth_connections") == "1")

        // Removed on the second router: gone on the first.
        #expect(try HTTPExchange.send("http://" + second.admin + "/v1/oauth/example", method: "DELETE").status == 200)
        await first.router.waitUntil("the first router disconnected", timeout: .seconds(5)) {
            (try? OAuthExample.connection(first.admin))?["connected"] as? Bool == false
        }
        for node in [first, second] {
            #expect(node.router.stop() == 0, "\(node.router.standardError)")
            #expect(!node.router.standardError.contains(server.password))
        }
    }
}
