import Foundation
import Testing

@testable import IntegrationSupport

/// iDoubs' registration control and message outcomes, against Kamailio and SIPp: an instance
/// that starts unregistered registers, refreshes and unregisters on `sip.Control` envelopes,
/// and every MESSAGE `send` finished comes out of `sent` as a `sip.Outcome`.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SIPControlTests {
    /// A router whose stdin lines are `sip.Control` actions (`register`, …) or SIP URIs to send
    /// a MESSAGE to; registration states and outcomes are written to files.
    static func startRouter(_ sandbox: Sandbox, kamailio: Kamailio, iiideas: String = "") async throws -> (RouterProcess, String) {
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("sip")
        try sandbox.writeRoutes(
            """
            instances:
              pager:
                plugin: sip
                identity: { impu: "sip:alice@example.test", password: "${SIP_PASSWORD}" }
                listen: { host: 127.0.0.1, port: 0 }
                proxy: "sip:127.0.0.1:\(kamailio.port);transport=udp"
                register: { expires: 60, on_start: false, retry: { initial_delay: 200ms, max_delay: 1s } }
                send: { allow_envelope_destination: true }
              in: { plugin: core, console: {} }
              registration: { plugin: core, file: { path: "\(sandbox.path("registration.jsonl"))" } }
              outcomes: { plugin: core, file: { path: "\(sandbox.path("outcomes.jsonl"))" } }
              refused: { plugin: core, file: { path: "\(sandbox.path("refused.jsonl"))" } }
            routes:
              - { from: pager.registration, to: registration.write }
              - { from: pager.sent, to: outcomes.write }
              - { from: pager.sent, when: 'body.outcome == "reject"', to: refused.write }
              - from: in.lines
                when: 'not (body startsWith "sip:")'
                type: sip.Control
                map: { action: "{{body}}" }
                to: pager.control
              - from: in.lines
                when: 'body startsWith "sip:"'
                type: sip.Send
                map: { to: "{{body}}", body: hello }
                to: pager.send
            \(iiideas)
            """)
        return try await RouterProcess.startWithAdmin(sandbox, environment: ["SIP_PASSWORD": "alice-secret"])
    }

    @Test func anInstanceThatStartsUnregisteredRegistersAndUnregistersOnRequest() async throws {
        let kamailio = try Kamailio()
        let sandbox = try Sandbox()
        let (router, admin) = try await Self.startRouter(sandbox, kamailio: kamailio)
        await router.waitUntil("listening") { router.standardError.contains("not registering until a sip.Control") }
        // Unregistered on purpose is ready, and no REGISTER went out.
        #expect(try HTTPExchange.send("http://" + admin + "/readyz").status == 200)
        #expect(!kamailio.log.contains("REQ REGISTER"))

        router.send("register\n")
        await router.waitUntil("registered") { SIPTests.states(sandbox).contains("registered") }
        #expect(kamailio.waitForLog("REQ REGISTER from sip:alice@example.test"))
        #expect(try SIPTests.metric("control_register_total", admin: admin) == 1)

        let sent = try SIPTests.metric("registrations_sent_total", admin: admin)
        router.send("refresh\n")
        await router.waitUntil("a refreshing REGISTER") { (try? SIPTests.metric("registrations_sent_total", admin: admin)) ?? 0 > sent }

        router.send("unregister\n")
        await router.waitUntil("unregistered") { SIPTests.states(sandbox).last == "unregistered" }
        #expect(kamailio.waitForLog("via udp expires 0"), "\(kamailio.log)")
        #expect(try HTTPExchange.send("http://" + admin + "/readyz").status == 200)
        #expect(SIPTests.states(sandbox) == ["registering", "registered", "unregistered"])
        // The same actions through the admin API, answered with the plugin's acknowledgement:
        // a refresh while unregistered is refused with its reason, a register succeeds once the
        // registrar granted it, and what is not a sip.Control is refused before the plugin.
        let control = "http://" + admin + "/v1/instances/pager/ports/control"
        let json = ["Content-Type": "application/json"]
        let refresh = try HTTPExchange.send(control, method: "POST", headers: json, body: #"{"action": "refresh"}"#)
        #expect(refresh.status == 422 && refresh.body.contains("not registered: send {action: register} first"), "\(refresh.body)")
        let register = try HTTPExchange.send(control, method: "POST", headers: json, body: #"{"action": "register"}"#)
        #expect(register.status == 200 && register.body.contains(#""outcome":"ok""#), "\(register.body)")
        await router.waitUntil("registered again") { SIPTests.states(sandbox).last == "registered" }
        let bogus = try HTTPExchange.send(control, method: "POST", headers: json, body: #"{"action": "dance"}"#)
        #expect(bogus.status == 400 && bogus.body.contains("the body is not a sip.Control"), "\(bogus.body)")
        let nowhere = try HTTPExchange.send(
            "http://" + admin + "/v1/instances/pager/ports/messages", method: "POST", headers: json, body: "{}")
        #expect(nowhere.status == 400 && nowhere.body.contains("pager has no sink port 'messages'"), "\(nowhere.body)")
        #expect(router.stop() == 0)
    }

    @Test func everySentMessageComesOutAsAnOutcome() async throws {
        let kamailio = try Kamailio()
        let uas = try SIPp(scenario: SIPp.uasScenario())
        let sandbox = try Sandbox()
        let (router, _) = try await Self.startRouter(sandbox, kamailio: kamailio)
        router.send("register\n")
        await router.waitUntil("registered") { SIPTests.states(sandbox).contains("registered") }

        router.send("sip:bob@127.0.0.1:\(uas.port)\n")
        #expect(uas.waitForExit() == 0, "\(uas.diagnostics)")
        router.send("sip:nobody@example.test\n")
        await router.waitUntil("two outcomes") { ((try? sandbox.jsonLines(of: "outcomes.jsonl")) ?? []).count == 2 }
        let outcomes = try sandbox.jsonLines(of: "outcomes.jsonl").compactMap { $0["body"] as? [String: Any] }
        let delivered = try #require(outcomes.first { ($0["to"] as? String)?.hasPrefix("sip:bob@") == true })
        #expect(delivered["status"] as? Int == 200)
        #expect(delivered["outcome"] as? String == "ok")
        #expect(delivered["attempts"] as? Int == 1)
        #expect((delivered["envelope_id"] as? String)?.isEmpty == false)
        let refused = try #require(outcomes.first { $0["to"] as? String == "sip:nobody@example.test" })
        #expect(refused["status"] as? Int == 404)
        #expect(refused["reason"] as? String == "Not Found")
        #expect(refused["outcome"] as? String == "reject")
        // A route reacts to the failure (the iDoubs case: tell the user); a route of its own,
        // so its file may come after the outcomes'.
        await router.waitUntil("the refusal recorded") { ((try? sandbox.jsonLines(of: "refused.jsonl")) ?? []).count == 1 }
        #expect(router.stop() == 0)
    }

    @Test func anIiideaSendingThroughAnInstanceUnregisteredOnPurposeIsInactiveWithTheReason() async throws {
        let kamailio = try Kamailio()
        let sandbox = try Sandbox()
        let (router, admin) = try await Self.startRouter(
            sandbox, kamailio: kamailio,
            iiideas: """
                iiideas:
                  - id: page
                    trigger: { port: in.lines }
                    service: { piece: pass }
                    action: { port: pager.send, preferences: { to: "sip:bob@example.test" } }
                """)
        await router.waitUntil("listening") { router.standardError.contains("not registering until a sip.Control") }
        let reason = "pager.send refused: not registered (register.on_start: false): deliver {action: register} to the control port first"
        let list = try RouterProcess.runToExit(["iiidea", "list", "--admin", admin], in: sandbox.root)
        #expect(list.output.contains("page\tinactive (\(reason))"), "\(list.output)\(list.errors)")
        // Once registered on request the instance reports itself ready, and the router asks the
        // piece again: the iiidea becomes active by itself.
        router.send("register\n")
        await router.waitUntil("registered") { SIPTests.states(sandbox).contains("registered") }
        await router.waitUntil("the iiidea active") {
            let list = try? RouterProcess.runToExit(["iiidea", "list", "--admin", admin], in: sandbox.root)
            return list?.output.contains("page\tenabled\t") == true
        }
        #expect(router.stop() == 0)
    }
}
