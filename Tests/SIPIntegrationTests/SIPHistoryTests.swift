import Foundation
import Testing

@testable import IntegrationSupport

/// iDoubs' message history, against Kamailio and SIPp: every MESSAGE received and sent is
/// recorded in the router's store with its outcome, comes out of `history` as an event, is
/// read through the admin API and `switchyard sip history`, kept within its bounds, survives a
/// restart and can be cleared.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SIPHistoryTests {
    /// A router with `pager` (alice, registered at `kamailio`) keeping at most three entries of
    /// at most 8 body bytes; stdin lines are SIP URIs to send a MESSAGE to; history events go
    /// to `history.jsonl`.
    static func startRouter(_ sandbox: Sandbox, kamailio: Kamailio) async throws -> (RouterProcess, String) {
        try sandbox.writeRoutes(
            """
            instances:
              pager:
                plugin: sip
                identity: { impu: "sip:alice@example.test", password: "${SIP_PASSWORD}" }
                listen: { host: 127.0.0.1, port: 0 }
                proxy: "sip:127.0.0.1:\(kamailio.port);transport=udp"
                register: { expires: 60, retry: { initial_delay: 200ms, max_delay: 1s } }
                send: { allow_envelope_destination: true }
                history: { keep: 3, max_body: 8 }
              in: { plugin: core, console: {} }
              registration: { plugin: core, file: { path: "\(sandbox.path("registration.jsonl"))" } }
              history: { plugin: core, file: { path: "\(sandbox.path("history.jsonl"))" } }
              messages: { plugin: core, file: { path: "\(sandbox.path("messages.jsonl"))" } }
            routes:
              - { from: pager.registration, to: registration.write }
              - { from: pager.history, to: history.write }
              - { from: pager.messages, to: messages.write }
              - from: in.lines
                type: sip.Send
                map: { to: "{{body}}", body: "hello, bob" }
                to: pager.send
            """)
        let started = try await RouterProcess.startWithAdmin(sandbox, environment: ["SIP_PASSWORD": "alice-secret"])
        await started.0.waitUntil("registered") { SIPTests.states(sandbox).contains("registered") }
        return started
    }

    /// The history events written so far: `(event, entry, ids)`.
    static func events(_ sandbox: Sandbox) -> [(event: String, entry: [String: Any]?, ids: [Int])] {
        ((try? sandbox.jsonLines(of: "history.jsonl")) ?? []).compactMap { line in
            guard let body = line["body"] as? [String: Any], let event = body["event"] as? String else { return nil }
            return (event, body["entry"] as? [String: Any], body["ids"] as? [Int] ?? [])
        }
    }

    static func query(_ admin: String, _ input: String = "{}") throws -> [String: Any] {
        let answer = try HTTPExchange.send(
            "http://" + admin + "/v1/instances/pager/pieces/history_query", method: "POST", headers: ["Content-Type": "application/json"],
            body: input)
        #expect(answer.status == 200, "\(answer.body)")
        return try #require(JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
    }

    static func entries(_ answer: [String: Any]) -> [[String: Any]] { answer["entries"] as? [[String: Any]] ?? [] }

    @Test func messagesInAndOutAreRecordedQueriedBoundedKeptAndCleared() async throws {
        let kamailio = try Kamailio()
        let uas = try SIPp(scenario: SIPp.uasScenario())
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("sip")
        var (router, admin) = try await Self.startRouter(sandbox, kamailio: kamailio)

        // In: bob → Kamailio → alice, answered 200; its body cut at 8 bytes.
        let uac = try SIPp(scenario: SIPp.uacScenario(), remote: "127.0.0.1:\(kamailio.port)")
        #expect(uac.waitForExit() == 0, "\(uac.diagnostics)")
        // Out: delivered (200 from SIPp), then refused (404 from Kamailio).
        router.send("sip:bob@127.0.0.1:\(uas.port)\n")
        #expect(uas.waitForExit() == 0, "\(uas.diagnostics)")
        await router.waitUntil("the delivered MESSAGE updated") { Self.events(sandbox).filter { $0.event == "updated" }.count == 1 }
        router.send("sip:nobody@example.test\n")
        await router.waitUntil("the refused MESSAGE updated") { Self.events(sandbox).filter { $0.event == "updated" }.count == 2 }
        #expect(Self.events(sandbox).map(\.event) == ["added", "added", "updated", "added", "updated"])

        let all = try Self.query(admin)
        #expect(all["identity"] as? String == "sip:alice@example.test")
        #expect(all["total"] as? Int == 3)
        let entries = Self.entries(all)
        #expect(entries.map { $0["direction"] as? String } == ["out", "out", "in"])
        let refused = entries[0]
        #expect(refused["peer"] as? String == "sip:nobody@example.test")
        #expect(
            refused["status"] as? Int == 404 && refused["reason"] as? String == "Not Found" && refused["outcome"] as? String == "reject")
        #expect(refused["attempts"] as? Int == 1)
        let delivered = entries[1]
        #expect(delivered["status"] as? Int == 200 && delivered["outcome"] as? String == "ok")
        #expect(
            delivered["body"] as? String == "hello, b" && delivered["truncated"] as? Bool == true && delivered["body_bytes"] as? Int == 10)
        #expect((delivered["call_id"] as? String)?.hasSuffix("@switchyard") == true)
        let received = entries[2]
        #expect(received["peer"] as? String == "sip:bob@peer.test")
        #expect(received["status"] as? Int == 200 && received["content_type"] as? String == "text/plain")
        #expect(received["body"] as? String == "hello fr")
        #expect((received["call_id"] as? String)?.isEmpty == false)

        // Filters: one peer; since a time after everything.
        #expect(Self.entries(try Self.query(admin, #"{"peer": "<sip:bob@PEER.test>"}"#)).count == 1)
        #expect(Self.entries(try Self.query(admin, #"{"since": "2999-01-01T00:00:00Z"}"#)).isEmpty)
        let bad = try HTTPExchange.send(
            "http://" + admin + "/v1/instances/pager/pieces/history_query", method: "POST", headers: ["Content-Type": "application/json"],
            body: #"{"since": "yesterday"}"#)
        #expect(bad.status == 502 && bad.body.contains("not an RFC 3339 time"), "\(bad.body)")

        // keep: 3 — a fourth entry removes the oldest, the received one.
        router.send("sip:nobody@example.test\n")
        await router.waitUntil("the oldest removed") { Self.events(sandbox).contains { $0.event == "removed" } }
        let removed = try #require(Self.events(sandbox).first { $0.event == "removed" })
        #expect(removed.ids == [received["id"] as? Int ?? -1])
        await router.waitUntil("the fourth updated") { Self.events(sandbox).filter { $0.event == "updated" }.count == 3 }

        // The history is in the router's store: a restarted router has it.
        #expect(router.stop() == 0)
        (router, admin) = try await Self.startRouter(sandbox, kamailio: kamailio)
        let kept = try Self.query(admin)
        #expect(kept["total"] as? Int == 3)
        #expect(
            Self.entries(kept).map { $0["peer"] as? String } == [
                "sip:nobody@example.test", "sip:nobody@example.test", delivered["peer"] as? String,
            ])

        // The command line: columns, a peer, and clearing.
        let cli = { (arguments: [String]) throws -> (status: Int32, output: String, errors: String) in
            try RouterProcess.runToExit(
                ["--plugins", sandbox.plugins.path, "sip", "history"] + arguments + ["--admin", admin], in: sandbox.root)
        }
        let listed = try cli(["pager", "--peer", "sip:nobody@example.test"])
        #expect(listed.status == 0, "\(listed.errors)")
        let lines = listed.output.split(separator: "\n")
        #expect(
            lines.count == 2 && lines.allSatisfy { $0.contains("\tout\tsip:nobody@example.test\t404\ttext/plain\thello, b") },
            "\(listed.output)")
        let recent = try cli(["pager", "--since", "1h", "--json", "--limit", "1"])
        #expect(recent.output.split(separator: "\n").count == 1 && recent.output.contains(#""direction":"out""#), "\(recent.output)")
        let unknown = try cli(["nobody"])
        #expect(unknown.status == 1 && unknown.errors.contains("no instance named 'nobody'"), "\(unknown.errors)")

        #expect(try cli(["pager", "--clear", "--peer", "sip:nobody@example.test"]).output == "cleared\n")
        await router.waitUntil("two removed") { Self.events(sandbox).filter { $0.event == "removed" }.count == 2 }
        #expect(try Self.query(admin)["total"] as? Int == 1)
        #expect(try cli(["pager", "--clear"]).output == "cleared\n")
        await router.waitUntil("reset") { Self.events(sandbox).last?.event == "reset" }
        #expect(try Self.query(admin)["total"] as? Int == 0)
        #expect(try cli(["pager"]).output.isEmpty)
        #expect(router.stop() == 0)
    }

    /// Asking an instance without `history:` for its history names the setting that turns the
    /// piece on, instead of "no service piece (its pieces: none)" (issue 34).
    @Test func askingForAHistoryThatIsOffNamesTheSetting() async throws {
        let sandbox = try Sandbox(plugins: ["core", "sip"])
        try sandbox.writeRoutes(
            """
            instances:
              pager:
                plugin: sip
                identity: { impu: "sip:alice@example.test", password: "alice-secret-1" }
                listen: { host: 127.0.0.1, port: 0 }
                proxy: "sip:127.0.0.1:9;transport=udp"
              messages: { plugin: core, file: { path: "\(sandbox.path("messages.jsonl"))" } }
            routes:
              - { from: pager.messages, to: messages.write }
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox)
        let answer = try HTTPExchange.send(
            "http://" + admin + "/v1/instances/pager/pieces/history_query", method: "POST", headers: ["Content-Type": "application/json"],
            body: "{}")
        #expect(answer.status == 400 || answer.status == 404, "\(answer.status)")
        #expect(
            answer.body.contains("pager serves 'history_query' only with `history:` in its configuration (plugin sip)"), "\(answer.body)")
        #expect(router.stop() == 0, "\(router.standardError)")
    }
}
