import Foundation
import Testing

@testable import IntegrationSupport

/// The push plugin's `send` as an iiidea action: its preferences name whom to send to, and a
/// user with no registered token makes the piece refuse honestly until one registers.
@Suite(.timeLimit(.minutes(2)))
struct PushPieceTests {
    @Test func anActionForAUserWithoutATokenIsInactiveUntilOneRegistersThenSendsToIt() async throws {
        let sandbox = try Sandbox()
        let endpoint = try FCMEndpoint(in: sandbox)
        defer { endpoint.stop() }
        let (router, webhook, admin) = try await PushRouter.start(
            sandbox,
            instances: """
                  in:   { plugin: core, console: {} }
                  push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "${PUSH_BEARER}" }, registry: "\(sandbox.path("tokens.db"))",
                          fcm: { service_account: "\(endpoint.serviceAccountFile)", base_url: "\(endpoint.baseURL)" } }
                """,
            routes: """
                iiideas:
                  - id: tell-alice
                    trigger: { port: in.lines }
                    service: { piece: template, preferences: { text: "{{body}}" } }
                    action:  { port: push.send, preferences: { user: alice } }
                """)
        let reason = "push.send refused: no FCM token is registered for user alice; it is asked again when one registers"
        let before = try HTTPExchange.send(admin + "/v1/iiideas")
        #expect(before.body.contains(reason), "\(before.body)")

        let registered = try HTTPExchange.send(
            webhook + "/v1/tokens", method: "POST",
            headers: ["Authorization": "Bearer \(PushRouter.bearer)", "Content-Type": "application/json"],
            body: #"{"token": "alice-phone", "user": "alice"}"#)
        #expect(registered.status == 201)
        await router.waitUntil("the iiidea active") {
            (try? HTTPExchange.send(admin + "/v1/iiideas").body.contains(#""active":true"#)) == true
        }

        // A run sends to alice's token: the message itself named nobody.
        router.send("hello alice\n")
        await router.waitUntil("a send at the FCM endpoint") { (try? endpoint.sends().count) == 1 }
        #expect(try endpoint.sends().first?.message?["token"] as? String == "alice-phone")
        #expect(router.stop() == 0)
    }
}
