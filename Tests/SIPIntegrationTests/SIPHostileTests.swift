import Foundation
import Testing

@testable import IntegrationSupport

/// The sip plugin against peers that lie: integers at their limits, challenges from strangers,
/// envelopes that try to redirect or inject, floods of transactions and connections. Each test
/// checks the router is still alive and another route (console → file) still delivers.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SIPHostileTests {
    /// A router with a sip instance `pager` configured by `sip` (YAML lines under it), plus the
    /// bystander route `in.lines → out.write` that must keep delivering.
    static func startRouter(
        _ sandbox: Sandbox, sip: String, routes: String = "", fileLimit: (soft: Int, hard: Int?)? = nil
    ) async throws -> (RouterProcess, String) {
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("sip")
        try sandbox.writeRoutes(
            """
            instances:
              pager:
                plugin: sip
            \(sip)
              in: { plugin: core, console: {} }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
              registration: { plugin: core, file: { path: "\(sandbox.path("registration.jsonl"))" } }
            routes:
              - { from: in.lines, to: out.write }
              - { from: pager.registration, to: registration.write }
            \(routes)
            """)
        return try await RouterProcess.startWithAdmin(sandbox, environment: ["SIP_PASSWORD": "alice-secret"], fileLimit: fileLimit)
    }

    /// The router answers its health check and the bystander route delivers a line.
    static func expectAliveAndDelivering(_ router: RouterProcess, _ sandbox: Sandbox, admin: String, line: String) async throws {
        #expect(try HTTPExchange.send("http://" + admin + "/healthz").status == 200)
        router.send(line + "\n")
        await router.waitUntil("the bystander route to deliver '\(line)'") {
            sandbox.lines(of: "out.jsonl").contains { $0.contains(line) }
        }
    }

    static func registrations(_ sandbox: Sandbox) -> [[String: Any]] {
        ((try? sandbox.jsonLines(of: "registration.jsonl")) ?? []).compactMap { $0["body"] as? [String: Any] }
    }

    /// The crash of issue 18: a registrar whose 200 OK carries CSeq 4294967295 made the next
    /// refresh trap (`cseq += 1`); a negative Expires trapped in `granted - 60`. Now a CSeq not
    /// below 2^31 is malformed, one not the request's is a protocol error, Expires and
    /// Min-Expires are clamped to 2^31-1 s, and registration goes on.
    @Test func aRegistrarAnsweringWithIntegersAtTheirLimitsDoesNotStopTheRouter() async throws {
        let registrar = try SIPScriptedPeer { request, index in
            switch index {
            case 0: SIPScriptedPeer.response(to: request, "200 OK", cseq: "4294967295 REGISTER", extra: ["Expires: 10"])
            case 1: SIPScriptedPeer.response(to: request, "200 OK", cseq: "2147483000 REGISTER", extra: ["Expires: 10"])
            case 2: SIPScriptedPeer.response(to: request, "200 OK", extra: ["Expires: -9223372036854775808"])
            case 3: SIPScriptedPeer.response(to: request, "423 Interval Too Brief", extra: ["Min-Expires: 9223372036854775807"])
            default:
                SIPScriptedPeer.response(
                    to: request, "200 OK",
                    extra: [
                        "Contact: " + (SIPScriptedPeer.header("Contact", in: request) ?? "") + ";expires=99999999999999999999",
                        "Expires: 9223372036854775807",
                    ])
            }
        }
        let sandbox = try Sandbox()
        let (router, admin) = try await Self.startRouter(
            sandbox,
            sip: """
                    identity: { impu: "sip:alice@example.test", password: "${SIP_PASSWORD}" }
                    listen: { host: 127.0.0.1, port: 0 }
                    register: { registrar: "sip:127.0.0.1:\(registrar.port)", expires: 10, retry: { initial_delay: 100ms, max_delay: 200ms } }
                    timers: { t1: 50ms, t2: 200ms }
                """)
        // Two Timer F rounds (3.2 s each), a refresh after 5 s, the 423 round, the last grant.
        let requests = registrar.waitForRequests(5, timeout: .seconds(30))
        #expect(requests.count == 5, "\(requests)\n\(router.standardError)")
        let states = Self.registrations(sandbox).compactMap { $0["state"] as? String }
        #expect(states == ["registering", "failed", "registered"], "\(states)")
        #expect(Self.registrations(sandbox).last?["expires"] as? Int == 10, "Expires: -2^63 read as absent: the 10 s asked for")
        let cseqs = requests.compactMap { SIPScriptedPeer.header("CSeq", in: $0)?.split(separator: " ").first.flatMap { UInt32($0) } }
        #expect(cseqs == Array(cseqs.sorted()) && Set(cseqs).count == cseqs.count, "CSeq rises: \(cseqs)")
        #expect(cseqs.allSatisfy { $0 < 1 << 31 })
        #expect(requests.last.flatMap { SIPScriptedPeer.header("Expires", in: $0) } == "2147483647", "Min-Expires clamped")
        #expect(router.logged("malformed SIP message from udp:127.0.0.1:\(registrar.port)"), "\(router.standardError)")
        #expect(router.logged("CSeq 4294967295 is not below 2^31"))
        #expect(router.logged("protocol error from udp:127.0.0.1:\(registrar.port)"))
        #expect(try SIPTests.metric("malformed_total", admin: admin) >= 1)
        #expect(try SIPTests.metric("protocol_errors_total", admin: admin) >= 1)
        try await Self.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")
        #expect(router.stop() == 0)
    }

    /// A registrar that closes the TCP connection without answering the REGISTER on it (a
    /// registrar stopping or restarting looks so): the transaction fails at once, the state
    /// becomes `failed` with the reason, and the retry goes out on a new connection. Before, the
    /// REGISTER waited for Timer F (32 s) and the registration stayed `registering`.
    @Test func aRegisterWhoseConnectionClosesUnansweredFailsAtOnceAndIsRetried() async throws {
        let registrar = try SIPClosingTCPPeer()
        let sandbox = try Sandbox()
        let (router, admin) = try await Self.startRouter(
            sandbox,
            sip: """
                    identity: { impu: "sip:alice@example.test", password: "${SIP_PASSWORD}" }
                    transport: tcp
                    listen: { host: 127.0.0.1, port: 0 }
                    register: { registrar: "sip:127.0.0.1:\(registrar.port);transport=tcp", expires: 10, retry: { initial_delay: 100ms, max_delay: 200ms } }
                """)
        // Timer F keeps its default (64·T1 = 32 s): a state reached well within it came from the close.
        await router.waitUntil("the registration failed", timeout: .seconds(15)) {
            Self.registrations(sandbox).contains { $0["state"] as? String == "failed" }
        }
        let failed = Self.registrations(sandbox).first { $0["state"] as? String == "failed" }
        let reason = failed?["reason"] as? String ?? ""
        #expect(reason.contains("closed before it answered"), "\(reason)\n\(router.standardError)")
        #expect(router.logged("registration of sip:alice@example.test failed: the connection to"))
        // The retry: a second REGISTER, on a second connection (the peer closed the first).
        let requests = registrar.waitForRequests(2, timeout: .seconds(15))
        #expect(requests.count >= 2 && requests.allSatisfy { $0.hasPrefix("REGISTER ") }, "\(requests)")
        try await Self.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")
        #expect(router.stop() == 0)
    }

    /// Item 5: credentials go only to the configured registrar or proxy; an envelope cannot
    /// send elsewhere than `send.to`; CR, LF or NUL never reach a header line.
    @Test func credentialsDestinationsAndHeaderLinesStayWhereConfigured() async throws {
        let far = try SIPScriptedPeer { request, _ in
            SIPScriptedPeer.response(
                to: request, "401 Unauthorized", extra: [#"WWW-Authenticate: Digest realm="example.test", nonce="n1", qop="auth""#])
        }
        let sandbox = try Sandbox()
        let bob = "sip:bob@127.0.0.1:\(far.port)"
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("sip")
        try sandbox.writeRoutes(
            """
            instances:
              pager:
                plugin: sip
                identity: { impu: "sip:alice@example.test", password: "${SIP_PASSWORD}" }
                listen: { host: 127.0.0.1, port: 0 }
                send: { to: "\(bob)" }
              in: { plugin: core, console: {} }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { from: in.lines, to: out.write }
              - { from: in.lines, type: sip.Send, map: { to: "{{body}}", body: "to from the line" }, to: pager.send }
              - { from: in.lines, type: sip.Send, map: { to: "\(bob)", body: "note", headers: { X-Note: "{{body}}" } }, to: pager.send }
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["SIP_PASSWORD": "alice-secret"])
        func metric(_ name: String) -> Double { (try? SIPTests.metric(name, admin: admin)) ?? -1 }
        // Route 2 tries another destination: refused. Route 3 reaches bob, whose 401 is not
        // answered: bob is neither registrar nor proxy.
        router.send("sip:mallory@127.0.0.1:9\n")
        await router.waitUntil("the redirect and the stranger's challenge refused") {
            metric("destinations_refused_total") == 1 && metric("challenges_refused_total") == 1
        }
        // A CR in a header value (route 3); a NUL in the destination (route 2) and a header (route 3).
        router.send("note\rInjected: yes\n")
        router.send("\(bob);x=\u{0}\n")
        await router.waitUntil("three values refused") { metric("header_values_refused_total") == 3 }
        let requests = far.requests
        #expect(requests.count == 1, "only the MESSAGE to bob, once: \(requests)")
        #expect(requests.allSatisfy { !$0.contains("Authorization") && !$0.contains("Injected") && !$0.contains("\u{0}") })
        #expect(requests.first?.contains("X-Note: sip:mallory@127.0.0.1:9") == true)
        #expect(router.logged("not answering a 401 challenge (realm 'example.test') from udp:127.0.0.1:\(far.port)"))
        #expect(router.logged("send.allow_envelope_destination"))
        #expect(router.logged(#"holds CR, LF or NUL: 'note\u{d}Injected: yes'"#), "\(router.standardError)")
        try await Self.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")
        #expect(router.stop() == 0)
    }

    /// With `identity.realm` set, the proxy's challenge for another realm is not answered; one
    /// for the configured realm is.
    @Test func onlyTheConfiguredRealmIsAnswered() async throws {
        let proxy = try SIPScriptedPeer { request, index in
            switch index {
            case 0:
                SIPScriptedPeer.response(
                    to: request, "407 Proxy Authentication Required", extra: [#"Proxy-Authenticate: Digest realm="evil.test", nonce="e""#])
            case 1:
                SIPScriptedPeer.response(
                    to: request, "407 Proxy Authentication Required",
                    extra: [#"Proxy-Authenticate: Digest realm="example.test", nonce="g""#])
            default: SIPScriptedPeer.response(to: request, "200 OK")
            }
        }
        let sandbox = try Sandbox()
        let (router, admin) = try await Self.startRouter(
            sandbox,
            sip: """
                    identity: { impu: "sip:alice@example.test", password: "${SIP_PASSWORD}", realm: example.test }
                    listen: { host: 127.0.0.1, port: 0 }
                    proxy: "sip:127.0.0.1:\(proxy.port)"
                    send: { to: "sip:bob@remote.test" }
                """, routes: "  - { from: in.lines, to: pager.send }")
        router.send("one\n")
        await router.waitUntil("the other realm refused") { (try? SIPTests.metric("challenges_refused_total", admin: admin)) == 1 }
        router.send("two\n")
        await router.waitUntil("the second sent") { (try? SIPTests.metric("messages_sent_total", admin: admin)) == 1 }
        let requests = proxy.requests
        #expect(requests.count == 3, "\(requests)")
        #expect(requests.count == 3 && !requests[1].contains("Proxy-Authorization") && requests[2].contains(#"realm="example.test""#))
        #expect(router.logged("for realm 'evil.test': identity.realm is 'example.test'"))
        try await Self.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")
        #expect(router.stop() == 0)
    }

    /// Item 8's SIP side: while the at-least-once spool cannot write, a MESSAGE is not
    /// confirmed: it is answered 503 with Retry-After, and taken once the disk has room.
    @Test func aMessageTheSpoolCannotKeepIsAnswered503WithRetryAfter() async throws {
        let sandbox = try Sandbox(plugins: ["core", "sip"])
        let disk = try SmallFileSystem(at: sandbox.path("disk"), megabytes: 8)
        let port = try LoopbackPort.freeForUDPAndTCP()
        try sandbox.writeRoutes(
            """
            spool: { path: "\(disk.path)/spool.db" }
            instances:
              pager:
                plugin: sip
                identity: { impu: "sip:alice@example.test" }
                listen: { host: 127.0.0.1, port: \(port) }
                receive: { answer_timeout: 2s }
              in: { plugin: core, console: {} }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
              messages: { plugin: core, file: { path: "\(sandbox.path("messages.jsonl"))" } }
            routes:
              - { from: in.lines, to: out.write }
              - { name: durable, from: pager.messages, to: messages.write, delivery: at-least-once }
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox)
        try disk.fill(leavingKilobytes: 32)
        // 60 kB bodies: within a few the spool's write-ahead log cannot grow.
        var answers: [String] = []
        for index in 0..<8 where !(answers.last?.hasPrefix("SIP/2.0 503") ?? false) {
            answers.append(try UDPExchange.send(SIPLimitsTests.message("while-full-\(index)", port: port, padding: 60_000), to: port))
        }
        let refused = answers.last ?? ""
        #expect(refused.hasPrefix("SIP/2.0 503 Service Unavailable\r\n"), "\(answers)\n\(router.standardError)")
        #expect(refused.contains("Retry-After: 1\r\n"))
        #expect(answers.dropLast().allSatisfy { $0.hasPrefix("SIP/2.0 200 OK") }, "\(answers)")
        try await Self.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")

        try disk.freeFiller()
        // The sender comes back (a new transaction): now confirmed, and delivered.
        await router.waitUntil("the MESSAGE taken once the spool writes") {
            (try? UDPExchange.send(SIPLimitsTests.message("after-\(UUID().uuidString)", port: port), to: port))?
                .hasPrefix("SIP/2.0 200 OK\r\n") == true
        }
        // Every MESSAGE answered 200 is delivered: confirmed only once on disk.
        await router.waitUntil("delivered") { sandbox.lines(of: "messages.jsonl").count == answers.count }
        #expect(router.stop() == 0)
    }
}
