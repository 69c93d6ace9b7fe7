import Foundation
import Testing

@testable import IntegrationSupport

/// The sip plugin through the router binary against real peers: Kamailio as registrar and
/// relay (digest MD5 or SHA-256), SIPp as the far user agent.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SIPTests {
    /// A router with a sip instance `pager` (alice) registering at `kamailio`, MESSAGEs in to
    /// `messages.jsonl`, registration changes to `registration.jsonl`, and stdin lines sent as
    /// MESSAGEs to `sendTo`.
    static func startRouter(
        _ sandbox: Sandbox, kamailio: Kamailio, transport: String = "udp", password: String = "alice-secret",
        sendTo: String = "sip:bob@peer.test", extra: String = ""
    ) async throws -> (RouterProcess, String) {
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("sip")
        let proxyPort = transport == "tls" ? (kamailio.tlsPort ?? 0) : kamailio.port
        let tls =
            transport == "tls"
            ? """
                tls:
                  ca_file: \(kamailio.directory.path)/ca.pem
                  cert_file: \(kamailio.directory.path)/server.pem
                  key_file: \(kamailio.directory.path)/server.key
            """ : ""
        try sandbox.writeRoutes(
            """
            instances:
              pager:
                plugin: sip
                identity: { impu: "sip:alice@example.test", password: "${SIP_PASSWORD}", display_name: Alice }
                transport: \(transport)
                listen: { host: 127.0.0.1, port: 0 }
                proxy: "sip:127.0.0.1:\(proxyPort);transport=\(transport)"
                register: { expires: 10, retry: { initial_delay: 200ms, max_delay: 1s } }
                send: { to: "\(sendTo)" }
            \(tls)
            \(extra)
              in: { plugin: core, console: {} }
              messages: { plugin: core, file: { path: "\(sandbox.path("messages.jsonl"))" } }
              registration: { plugin: core, file: { path: "\(sandbox.path("registration.jsonl"))" } }
            routes:
              - { from: pager.messages, to: messages.write }
              - { from: pager.registration, to: registration.write }
              - from: in.lines
                type: sip.Send
                map: { to: "\(sendTo)", body: '{"text": "{{body}}"}', content_type: application/json, headers: { X-Priority: high } }
                to: pager.send
            """)
        return try await RouterProcess.startWithAdmin(sandbox, environment: ["SIP_PASSWORD": password])
    }

    static func states(_ sandbox: Sandbox) -> [String] {
        ((try? sandbox.jsonLines(of: "registration.jsonl")) ?? []).compactMap { line in
            guard let body = line["body"] as? [String: Any] else { return nil }
            return body["state"] as? String
        }
    }

    static func metric(_ name: String, admin: String) throws -> Double {
        try MetricsExposition.pluginMetric(name, instance: "pager", admin: admin)
    }

    @Test(arguments: [("udp", "MD5"), ("tcp", "SHA-256")])
    func registersReceivesAndSendsThroughKamailio(transport: String, algorithm: String) async throws {
        let kamailio = try Kamailio(.init(algorithm: algorithm))
        let uas = try SIPp(scenario: SIPp.uasScenario())
        let sandbox = try Sandbox()
        let (router, admin) = try await Self.startRouter(
            sandbox, kamailio: kamailio, transport: transport, sendTo: "sip:bob@127.0.0.1:\(uas.port)")
        await router.waitUntil("registered") { Self.states(sandbox).contains("registered") }
        #expect(Self.states(sandbox) == ["registering", "registered"], "\(router.standardError)")
        #expect(try HTTPExchange.send("http://" + admin + "/readyz").status == 200)
        // Digest with the server's algorithm: the first REGISTER is challenged (401), the second accepted.
        #expect(kamailio.waitForLog("REQ REGISTER from sip:alice@example.test"))

        // In: SIPp → Kamailio → (location lookup) → the router.
        let uac = try SIPp(scenario: SIPp.uacScenario(), remote: "127.0.0.1:\(kamailio.port)")
        #expect(uac.waitForExit() == 0, "\(uac.diagnostics)\n\(kamailio.log)\n\(router.standardError)")
        let received = try sandbox.jsonLines(of: "messages.jsonl")
        #expect(received.count == 1)
        let message = try #require(received.first)
        #expect(message["type"] as? String == "sip.Message")
        #expect(message["subject"] as? String == "sip:bob@peer.test")
        #expect((message["body"] as? String)?.trimmingCharacters(in: .newlines) == "hello from sipp")
        let headers = message["headers"] as? [String: String] ?? [:]
        #expect(headers["sip.from"] == "sip:bob@peer.test")
        #expect(headers["sip.from_name"] == "Bob")
        #expect(headers["sip.to"] == "sip:alice@example.test")
        #expect(headers["sip.header.X-Ticket"] == "42")
        #expect(headers["sip.content_type"] == "text/plain")
        #expect(kamailio.waitForLog("RELAY MESSAGE to sip:alice@127.0.0.1"))

        // Out: the router → Kamailio (407, answered with the server's algorithm) → SIPp.
        router.send("bonjour\n")
        #expect(uas.waitForExit() == 0, "\(uas.diagnostics)\n\(kamailio.log)\n\(router.standardError)")
        let seen = uas.messages
        #expect(seen.contains("From: \"Alice\" <sip:alice@example.test>"))
        #expect(seen.contains("Content-Type: application/json"))
        #expect(seen.contains("X-Priority: high"))
        #expect(seen.contains("{\"text\": \"bonjour\"}"))
        #expect(seen.contains("Proxy-Authorization") == false, "Kamailio consumes the credentials before relaying")
        await router.waitUntil("the send acknowledged") { (try? Self.metric("messages_sent_total", admin: admin)) == 1 }

        // A refresh before expiry (10 s granted: refreshed halfway).
        let sent = try Self.metric("registrations_sent_total", admin: admin)
        await router.waitUntil("a refresh", timeout: .seconds(12)) {
            (try? Self.metric("registrations_sent_total", admin: admin)) ?? 0 > sent
        }
        #expect(Self.states(sandbox) == ["registering", "registered"], "a refresh is not a state change")

        // Unregistered on shutdown (the router's routes are closed by then: Kamailio tells).
        #expect(router.stop() == 0)
        #expect(kamailio.waitForLog("via \(transport) expires 0"), "\(kamailio.log)")
        #expect(router.logged("unregistered sip:alice@example.test"))
    }

    @Test func aWrongPasswordFailsClearlyAndTheRouterKeepsRunning() async throws {
        let kamailio = try Kamailio()
        let sandbox = try Sandbox()
        let (router, admin) = try await Self.startRouter(sandbox, kamailio: kamailio, password: "not-the-password")
        await router.waitUntil("the registration to fail") { Self.states(sandbox).contains("failed") }
        #expect(router.logged("registrar refused the credentials of alice (401 Unauthorized)"), "\(router.standardError)")
        #expect(try HTTPExchange.send("http://" + admin + "/readyz").status == 503)
        // It tries again with backoff, and stays up.
        await router.waitUntil("a second attempt") { (try? Self.metric("registration_failures_total", admin: admin)) ?? 0 >= 2 }
        #expect(try HTTPExchange.send("http://" + admin + "/healthz").status == 200)
        #expect(router.stop() == 0)
    }

    @Test func registersAndMessagesOverTLS() async throws {
        let kamailio = try Kamailio(.init(tls: true))
        let uas = try SIPp(scenario: SIPp.uasScenario())
        let sandbox = try Sandbox()
        let (router, _) = try await Self.startRouter(
            sandbox, kamailio: kamailio, transport: "tls", sendTo: "sip:bob@127.0.0.1:\(uas.port)")
        await router.waitUntil("registered over TLS") { Self.states(sandbox).contains("registered") }
        #expect(kamailio.waitForLog("REQ REGISTER from sip:alice@example.test to sip:example.test via tls"), "\(kamailio.log)")
        // In: Kamailio opens a TLS connection to the Contact.
        let uac = try SIPp(scenario: SIPp.uacScenario(), remote: "127.0.0.1:\(kamailio.port)")
        #expect(uac.waitForExit() == 0, "\(uac.diagnostics)\n\(kamailio.log)\n\(router.standardError)")
        #expect(try sandbox.jsonLines(of: "messages.jsonl").count == 1)
        // Out, over the TLS connection to Kamailio.
        router.send("over tls\n")
        #expect(uas.waitForExit() == 0, "\(uas.diagnostics)\n\(kamailio.log)")
        #expect(kamailio.waitForLog("REQ MESSAGE from sip:alice@example.test to sip:bob@127.0.0.1:\(uas.port) via tls"))
        #expect(router.stop() == 0)
    }

    @Test func registersAgainAfterTheRegistrarWasLost() async throws {
        var kamailio = try Kamailio()
        let port = kamailio.port
        let sandbox = try Sandbox()
        let (router, _) = try await Self.startRouter(sandbox, kamailio: kamailio, transport: "tcp")
        await router.waitUntil("registered") { Self.states(sandbox) == ["registering", "registered"] }
        kamailio.stop()
        await router.waitUntil("the loss noticed") { Self.states(sandbox).contains("unregistered") }
        kamailio = try Kamailio(.init(port: port))
        await router.waitUntil("registered again", timeout: .seconds(20)) { Self.states(sandbox).last == "registered" }
        #expect(router.logged("the connection to the registrar"), "\(router.standardError)")
        #expect(Self.states(sandbox) == ["registering", "registered", "unregistered", "registering", "failed", "registered"])
        #expect(router.stop() == 0)
    }

    /// examples/sip-pager as its README runs it: its Kamailio configuration and user table, its
    /// SIPp scenarios for bob, a Mosquitto, the example's routes; a MESSAGE with a quote and a
    /// line break becomes a valid JSON publish, and a publish goes back out as text/plain.
    @Test func theSIPPagerExampleBridgesSIPAndMQTT() async throws {
        let example = BuildProducts.packageRoot.appendingPathComponent("examples/sip-pager")
        let scenario = { (name: String) in try String(contentsOf: example.appendingPathComponent(name), encoding: .utf8) }
        let kamailio = try Kamailio(
            example: example.appendingPathComponent("kamailio.cfg"), database: example.appendingPathComponent("db"))
        let broker = try Mosquitto()
        let inbox = try MosquittoSubscriber(broker, topic: "pager/inbox", qos: 1)
        let uas = try SIPp(scenario: scenario("answer.xml"))
        let sandbox = try Sandbox()
        try sandbox.installPlugin("sip")
        try sandbox.installPlugin("mqtt")
        try sandbox.writeRoutes(try String(contentsOf: example.appendingPathComponent("routes.yaml"), encoding: .utf8))
        let sipPort = try LoopbackPort.freeForUDPAndTCP()
        let (router, _) = try await RouterProcess.startWithAdmin(
            sandbox,
            environment: [
                "SIP_PASSWORD": "alice-secret", "SIP_LISTEN_PORT": String(sipPort), "SIP_PROXY_PORT": String(kamailio.port),
                "MQTT_PORT": String(broker.port), "SPOOL": sandbox.path("state.db"),
            ])
        await router.waitUntil("registered") { router.standardError.contains("registered sip:alice@example.test") }

        let uac = try SIPp(scenario: scenario("message.xml"), remote: "127.0.0.1:\(kamailio.port)")
        #expect(uac.waitForExit() == 0, "\(uac.diagnostics)\n\(router.standardError)")
        let published = try #require(inbox.waitForLines(1).first, "\(router.standardError)")
        #expect(published.hasPrefix("pager/inbox {"), "\(published)")
        let payload = try JSONSerialization.jsonObject(with: Data(published.dropFirst("pager/inbox ".count).utf8)) as? [String: String]
        #expect(payload == ["from": "sip:bob@peer.test", "text": "ping from \"bob\"\r\n"], "\(published)")

        try broker.publish(
            topic: "pager/outbox", message: #"{"to": "sip:bob@127.0.0.1:\#(uas.port)", "text": "pong from alice"}"#, qos: 1)
        #expect(uas.waitForExit() == 0, "\(uas.diagnostics)\n\(router.standardError)")
        #expect(uas.messages.contains("pong from alice"))
        #expect(uas.messages.contains("Content-Type: text/plain"), "\(uas.messages)")
        #expect(router.stop() == 0)
    }
}

/// The sip plugin against SIPp alone: retransmission on loss, duplicate absorption, 415, 400.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SIPEndpointTests {
    @Test func unansweredTriesAreRetransmittedUntilTheAnswerComes() async throws {
        // SIPp takes 3 s to answer: Timer E resends at 0.5 s and 1.5 s (T1 = 500 ms; the next
        // would be at 3.5 s). The answer comes 1.5 s after the second resend: a router thread
        // delayed by a loaded machine still resends first (at 1.6 s, a 100 ms delay lost one).
        let uas = try SIPp(scenario: SIPp.uasScenario(pause: 3000))
        let sandbox = try Sandbox()
        let (router, admin, _) = try await SIPEndpointRouter.start(sandbox, sendTo: "sip:bob@127.0.0.1:\(uas.port)")
        router.send("are you there\n")
        #expect(uas.waitForExit() == 0, "\(uas.diagnostics)")
        await router.waitUntil("the send acknowledged") { (try? SIPTests.metric("messages_sent_total", admin: admin)) == 1 }
        #expect(uas.received("MESSAGE") >= 3, "\(uas.messages)")
        #expect(try SIPTests.metric("retransmissions_total", admin: admin) >= 2)
        #expect(router.stop() == 0)
    }

    @Test func aRequestOver1300BytesMovesFromUDPToTCP() async throws {
        // RFC 3261 §18.1.1: the destination says UDP, the size says TCP (SIPp listens on TCP only).
        let uas = try SIPp(scenario: SIPp.uasScenario(), transport: "t1")
        let sandbox = try Sandbox()
        let (router, admin, _) = try await SIPEndpointRouter.start(sandbox, sendTo: "sip:bob@127.0.0.1:\(uas.port)")
        router.send(String(repeating: "long ", count: 300) + "\n")
        #expect(uas.waitForExit() == 0, "\(uas.diagnostics)\n\(router.standardError)")
        #expect(uas.messages.contains("Via: SIP/2.0/TCP 127.0.0.1:"), "\(uas.messages)")
        await router.waitUntil("the send acknowledged") { (try? SIPTests.metric("messages_sent_total", admin: admin)) == 1 }
        #expect(router.stop() == 0)
    }

    @Test func aMessageNeverAnsweredFailsWithTimerF() async throws {
        let silent = """
            <?xml version="1.0" encoding="ISO-8859-1" ?>
            <scenario name="silent"><recv request="MESSAGE"/><pause milliseconds="5000"/></scenario>
            """
        let uas = try SIPp(scenario: silent)
        let sandbox = try Sandbox()
        let (router, admin, _) = try await SIPEndpointRouter.start(
            sandbox, sendTo: "sip:bob@127.0.0.1:\(uas.port)", extra: "    timers: { t1: 40ms, t2: 160ms }")
        router.send("into the void\n")
        await router.waitUntil("Timer F") { router.standardError.contains("no answer within 64·T1 (Timer F)") }
        #expect(try SIPTests.metric("timeouts_total", admin: admin) == 1)
        #expect(try SIPTests.metric("messages_sent_total", admin: admin) == 0)
        #expect(router.stop() == 0)
    }

    @Test func aResentMessageIsEmittedOnceAndAnsweredEachTime() async throws {
        // The same MESSAGE three times: twice as a retransmission (same branch), then resent
        // with a new branch (same Call-ID and CSeq); each answered 200, one envelope. (Raw
        // datagrams: SIPp answers a repeated 200 by resending its request, forever.)
        let sandbox = try Sandbox()
        let (router, admin, port) = try await SIPEndpointRouter.start(sandbox)
        func message(_ branch: String) -> [UInt8] {
            let body = "once only"
            let text =
                "MESSAGE sip:alice@127.0.0.1:\(port) SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:9;branch=\(branch)\r\n"
                + "From: <sip:bob@peer.test>;tag=fixed\r\nTo: <sip:alice@example.test>\r\nCall-ID: resent-1\r\n"
                + "CSeq: 7 MESSAGE\r\nMax-Forwards: 70\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            return Array(text.utf8)
        }
        let answers = try ["z9hG4bK-same", "z9hG4bK-same", "z9hG4bK-other"].map { try UDPExchange.send(message($0), to: port) }
        for answer in answers { #expect(answer.hasPrefix("SIP/2.0 200 OK\r\n"), "\(answer)") }
        #expect(answers[0] == answers[1], "a retransmission gets the same response again")
        #expect(try sandbox.jsonLines(of: "messages.jsonl").count == 1)
        #expect(try SIPTests.metric("retransmissions_absorbed_total", admin: admin) == 1)
        #expect(try SIPTests.metric("duplicates_total", admin: admin) == 1)
        #expect(router.stop() == 0)
    }

    @Test func anUnacceptedContentTypeIsRefusedWith415AndAccept() async throws {
        let sandbox = try Sandbox()
        let (router, admin, port) = try await SIPEndpointRouter.start(sandbox)
        let scenario = SIPp.uacScenario(transport: "UDP", contentType: "application/octet-stream", body: "bytes")
            .replacingOccurrences(of: "sip:alice@example.test SIP/2.0", with: "sip:alice@127.0.0.1:\(port) SIP/2.0")
            .replacingOccurrences(of: "<recv response=\"200\"/>", with: "<recv response=\"415\"/>")
        let uac = try SIPp(scenario: scenario, remote: "127.0.0.1:\(port)")
        #expect(uac.waitForExit() == 0, "\(uac.diagnostics)")
        #expect(uac.messages.contains("Accept: text/plain, application/json"), "\(uac.messages)")
        #expect(sandbox.lines(of: "messages.jsonl").isEmpty)
        #expect(try SIPTests.metric("unsupported_media_total", admin: admin) == 1)
        #expect(router.stop() == 0)
    }

    @Test func malformedDatagramsGet400AndAreCounted() async throws {
        let sandbox = try Sandbox()
        let (router, admin, port) = try await SIPEndpointRouter.start(sandbox)
        // A body shorter than its Content-Length: not a message, but its Via and friends are
        // enough to answer it.
        let broken =
            "MESSAGE sip:alice@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bK-x\r\n"
            + "From: <sip:bob@peer.test>;tag=1\r\nTo: <sip:alice@example.test>\r\nCall-ID: broken\r\nCSeq: 1 MESSAGE\r\n"
            + "Content-Length: 99\r\n\r\nshort"
        let answer = try UDPExchange.send(Array(broken.utf8), to: port)
        #expect(answer.hasPrefix("SIP/2.0 400 Bad Request\r\n"), "\(answer)")
        #expect(answer.contains("Warning: 399 switchyard \"Content-Length 99 but only 5 body bytes in the datagram\""))
        #expect(answer.contains("Via: SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bK-x"))
        // Bytes that are not SIP at all: counted, no answer, the router goes on.
        #expect(try UDPExchange.send(Array("\u{1}\u{2}garbage\r\n\r\n".utf8), to: port, expectAnswer: false).isEmpty)
        // Unanswered, so counted whenever the router gets to it.
        await router.waitUntil("both counted") { (try? SIPTests.metric("malformed_total", admin: admin)) == 2 }
        await router.waitUntil("the log line") { router.standardError.contains("malformed SIP message from udp:127.0.0.1") }
        #expect(try HTTPExchange.send("http://" + admin + "/healthz").status == 200)
        #expect(router.stop() == 0)
    }
}
