import Foundation
import Testing

/// `settles` in a description (ABI section 6): `validate` notes an at-least-once route whose
/// source does not wait for the spool before its upstream counts an envelope as delivered.
@Suite(.timeLimit(.minutes(1)))
struct SettlementNoteTests {
    static func validate(qos: Int) throws -> (status: Int32, errors: String) {
        let sandbox = try Sandbox(plugins: ["core", "mqtt"])
        try sandbox.writeRoutes(
            """
            instances:
              broker: { plugin: mqtt, url: "mqtt://127.0.0.1:1883", subscriptions: [ { topic: a/#, qos: \(qos) } ] }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { name: durable, from: broker.messages, to: out.write, delivery: at-least-once }
            """)
        let result = try RouterProcess.runToExit(["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        return (result.status, result.errors)
    }

    @Test func aQoS1SubscriptionSettlesSoTheRouteHasNoNote() throws {
        let result = try Self.validate(qos: 1)
        #expect(result.status == 0, "\(result.errors)")
        #expect(!result.errors.contains("note:"), "\(result.errors)")
    }

    @Test func aQoS0SubscriptionHasNothingToConfirmAndTheRouteGetsANote() throws {
        let result = try Self.validate(qos: 0)
        #expect(result.status == 0, "\(result.errors)")
        #expect(
            result.errors.contains(
                "note: route 'durable' is at-least-once from the spool on, but broker.messages (plugin mqtt) does not settle"),
            "\(result.errors)")
    }

    /// A SIP MESSAGE and a push webhook request are answered only once the router settled
    /// them: at-least-once routes from them get no note.
    @Test func sipAndPushSourcesSettle() throws {
        let sandbox = try Sandbox(plugins: ["core", "sip", "push"])
        try sandbox.writeRoutes(
            """
            instances:
              pager: { plugin: sip, identity: { impu: "sip:bot@example.org" }, listen: "127.0.0.1:0" }
              hook: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "t0ken-that-is-long-enough" } }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { name: pages, from: pager.messages, to: out.write, delivery: at-least-once }
              - { name: pushes, from: hook.messages, to: out.write, delivery: at-least-once }
            """)
        let result = try RouterProcess.runToExit(["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 0, "\(result.errors)")
        #expect(!result.errors.contains("note:"), "\(result.errors)")
    }
}
