import Foundation
import Testing

@testable import IntegrationSupport

/// What the first-party plugins promise (ABI section 6: `settles`, `confirms`,
/// `at_most_once`, from each instance's configuration), as `switchyard validate` holds it
/// against at-least-once routes.
@Suite(.timeLimit(.minutes(1)))
struct GuaranteeValidationTests {
    /// MQTT in (subscribed at `subscribeQoS`) → at-least-once → MQTT out (publishing at
    /// `publishQoS`, nil: not set) and a synced file.
    static func validate(subscribeQoS: Int, publishQoS: Int?, extra: String = "") throws -> (status: Int32, errors: String) {
        let sandbox = try Sandbox(plugins: ["core", "mqtt"])
        let publish = (publishQoS.map { ", publish: { qos: \($0) }" } ?? "") + extra
        try sandbox.writeRoutes(
            """
            instances:
              broker: { plugin: mqtt, url: "mqtt://127.0.0.1:1883", subscriptions: [ { topic: a/#, qos: \(subscribeQoS) } ]\(publish) }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", fsync: true } }
            routes:
              - { name: durable, from: broker.messages, to: [out.write, broker.publish], delivery: at-least-once }
            """)
        let result = try RouterProcess.runToExit(["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        return (result.status, result.errors)
    }

    @Test func qos1InAndOutKeepsAtLeastOnceWithoutRemarks() throws {
        let result = try Self.validate(subscribeQoS: 1, publishQoS: 1)
        #expect(result.status == 0, "\(result.errors)")
        #expect(!result.errors.contains("note:") && !result.errors.contains("warning:"), "\(result.errors)")
    }

    /// A shared subscription keeps at-least-once by default: the routers take over each other's
    /// sessions, so `validate` says nothing. Only a session the broker does not keep (a clean
    /// start) holds it in part: a warning at the route's `from:` says which case it misses.
    @Test func aSharedSubscriptionIsWarnedAboutOnlyWithASessionTheBrokerDoesNotKeep() throws {
        let shared = try Self.validate(subscribeQoS: 1, publishQoS: 1, extra: ", share: true")
        #expect(shared.status == 0 && !shared.errors.contains("warning:"), "\(shared.errors)")
        let clean = try Self.validate(subscribeQoS: 1, publishQoS: 1, extra: ", share: true, clean_start: true")
        #expect(clean.status == 0, "\(clean.errors)")
        #expect(
            clean.errors.contains(
                "main.yaml:5:28: warning: route 'durable' is at-least-once, but through broker.messages (plugin mqtt) only in part: with share: and a session the broker does not keep"
            ), "\(clean.errors)")
        let named = try Self.validate(subscribeQoS: 1, publishQoS: 1, extra: ", share: true, client_id: \"bridge-${HOSTNAME:-a}\"")
        #expect(named.status == 0 && !named.errors.contains("warning:"), "\(named.errors)")
    }

    /// The issue's case: a QoS 0 subscription feeding an at-least-once route is refused at the
    /// route's `from:`, saying what to change.
    @Test func aQoS0SubscriptionFailsTheAtLeastOnceRouteAtItsSource() throws {
        let result = try Self.validate(subscribeQoS: 0, publishQoS: 1)
        #expect(result.status != 0)
        #expect(
            result.errors.contains(
                "main.yaml:5:28: error: route 'durable' is at-least-once, but its source broker.messages (plugin mqtt) is at-most-once as configured: subscriptions/0 ('a/#') is QoS 0: the broker lets go of a message as it sends it; subscribe with `qos: 1`; or make the route `delivery: at-most-once`"
            ), "\(result.errors)")
    }

    /// A publish left at the default QoS 0 cannot confirm: refused at that `to:` entry.
    @Test func aDefaultQoS0PublishFailsTheAtLeastOnceRouteAtItsSink() throws {
        let result = try Self.validate(subscribeQoS: 1, publishQoS: nil)
        #expect(result.status != 0)
        #expect(
            result.errors.contains(
                "main.yaml:5:61: error: route 'durable' is at-least-once, but its sink broker.publish (plugin mqtt) is at-most-once as configured: publish.qos is 0 (the default): nothing confirms a QoS 0 PUBLISH; set `publish: { qos: 1 }`"
            ), "\(result.errors)")
    }

    /// A SIP MESSAGE and a push webhook request are answered only once the router settled
    /// them, and SIP and push sends are acknowledged on the peer's 2xx: no remark. A file
    /// without fsync promises nothing on power loss: noted.
    @Test func sipAndPushSettleAndConfirm() throws {
        let sandbox = try Sandbox(plugins: ["core", "sip", "push"])
        try sandbox.writeRoutes(
            """
            instances:
              pager: { plugin: sip, identity: { impu: "sip:bot@example.org" }, listen: "127.0.0.1:0" }
              hook: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "t0ken-that-is-long-enough" } }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { name: pages, from: pager.messages, to: pager.send, delivery: at-least-once }
              - { name: pushes, from: hook.messages, to: out.write, delivery: at-least-once }
            """)
        let result = try RouterProcess.runToExit(["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 0, "\(result.errors)")
        let remarks = result.errors.split(separator: "\n").filter { $0.contains("note:") || $0.contains("warning:") }
        #expect(remarks.count == 1, "\(result.errors)")
        #expect(
            remarks.first?.hasSuffix(
                "main.yaml:7:46: note: route 'pushes' is at-least-once up to out.write (plugin core), which does not say that the far side confirmed what it acknowledges"
            ) == true, "\(result.errors)")
    }
}
