import Foundation
import Testing

@testable import IntegrationSupport

/// The sip plugin's resource limits (`limits:`), each with small values so the tests are quick:
/// the refusal the protocol has for it, its counter, and the router still routing.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SIPLimitsTests {
    /// A router whose sip instance listens on a free UDP/TCP port (and a TLS one with `tls`).
    static func startRouter(
        _ sandbox: Sandbox, limits: String, tls: Bool = false, routes: String = ""
    ) async throws -> (RouterProcess, String, UInt16) {
        let port = try LoopbackPort.freeForUDPAndTCP()
        var tlsLines = ""
        if tls {
            try TestCertificates.write(in: sandbox.root)
            tlsLines = """
                    tls: { ca_file: "\(sandbox.path("ca.pem"))", cert_file: "\(sandbox.path("server.pem"))", key_file: "\(sandbox.path("server.key"))" }
                """
        }
        let (router, admin) = try await SIPHostileTests.startRouter(
            sandbox,
            sip: """
                    identity: { impu: "sip:alice@example.test" }
                    listen: { host: 127.0.0.1, port: \(port)\(tls ? ", tls_port: 0" : "") }
                    limits: \(limits)
                \(tlsLines)
                """, routes: routes)
        return (router, admin, port)
    }

    static func metric(_ name: String, _ admin: String) -> Double { (try? SIPTests.metric(name, admin: admin)) ?? -1 }

    /// A MESSAGE over UDP with its own Call-ID, `padding` extra body bytes.
    static func message(_ id: String, port: UInt16, padding: Int = 0) -> [UInt8] {
        let body = "hello " + String(repeating: "x", count: padding)
        return Array(
            ("MESSAGE sip:alice@127.0.0.1:\(port) SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bK-\(id)\r\n"
                + "From: <sip:bob@peer.test>;tag=\(id)\r\nTo: <sip:alice@example.test>\r\nCall-ID: \(id)\r\nCSeq: 1 MESSAGE\r\n"
                + "Content-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)").utf8)
    }

    @Test func serverTransactionsPastTheCapGet503WithRetryAfter() async throws {
        let sandbox = try Sandbox()
        // Answered over UDP, a transaction stays for Timer J (64·T1 = 32 s): two fill the cap.
        let (router, admin, port) = try await Self.startRouter(sandbox, limits: "{ max_server_transactions: 2 }")
        let answers = try ["a", "b", "c"].map { try UDPExchange.send(Self.message($0, port: port), to: port) }
        #expect(answers[0].hasPrefix("SIP/2.0 200 OK\r\n") && answers[1].hasPrefix("SIP/2.0 200 OK\r\n"), "\(answers)")
        #expect(answers[2].hasPrefix("SIP/2.0 503 Service Unavailable\r\n"), "\(answers[2])")
        #expect(answers[2].contains("Retry-After: 1\r\n"))
        #expect(Self.metric("server_transactions_refused_total", admin) == 1)
        #expect(router.logged("refused a MESSAGE from udp:127.0.0.1:"))
        try await SIPHostileTests.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")
        #expect(router.stop() == 0)
    }

    @Test func aMessageOverTheSizeLimitIsRefusedOnUDPAndTCP() async throws {
        let sandbox = try Sandbox()
        let (router, admin, port) = try await Self.startRouter(sandbox, limits: "{ max_message_bytes: 3000 }")
        // Under the limit but over NIO's default 2048-byte datagram read: taken whole.
        let whole = try UDPExchange.send(Self.message("medium", port: port, padding: 2300), to: port)
        #expect(whole.hasPrefix("SIP/2.0 200 OK\r\n"), "\(whole)")
        // A datagram over the limit: 513, with the limit named.
        let answer = try UDPExchange.send(Self.message("big", port: port, padding: 4000), to: port)
        #expect(answer.hasPrefix("SIP/2.0 513 Message Too Large\r\n"), "\(answer)")
        #expect(answer.contains("limit 3000"))
        // On a stream: the connection is closed once the head announces too much.
        let connection = try TCPConnection(port: port)
        try connection.send(Self.message("big-tcp", port: port, padding: 4000))
        #expect(connection.waitForClose(timeout: .seconds(5)), "the connection stays open")
        await router.waitUntil("both counted") { Self.metric("too_large_total", admin) == 2 }
        try await SIPHostileTests.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")
        #expect(router.stop() == 0)
    }

    /// At `max_connections`, a connection that has not completed a message makes room for a
    /// new one; when every connection has, the new one is closed. Silent ones time out.
    @Test func atTheCapAWaitingConnectionMakesRoomAndIdleOnesTimeOut() async throws {
        let sandbox = try Sandbox()
        let (router, admin, port) = try await Self.startRouter(
            sandbox, limits: "{ max_connections: 2, max_connections_per_peer: 4, idle_timeout: 4s }")
        let silent = try TCPConnection(port: port)
        let second = try TCPConnection(port: port)
        try second.send(Self.message("second", port: port))
        #expect(second.receive(timeout: .seconds(5)).hasPrefix("SIP/2.0 200 OK"))
        // At the cap: the silent connection, which never completed a message, makes room.
        let third = try TCPConnection(port: port)
        #expect(silent.waitForClose(timeout: .seconds(5)), "the silent connection was not evicted")
        await router.waitUntil("the eviction counted") { Self.metric("tcp_connections_evicted_total", admin) == 1 }
        try third.send(Self.message("third", port: port))
        #expect(third.receive(timeout: .seconds(5)).hasPrefix("SIP/2.0 200 OK"))
        // Both connections have completed a message: a new one is refused.
        let fourth = try TCPConnection(port: port)
        #expect(fourth.waitForClose(timeout: .seconds(5)), "the fourth connection was not closed")
        #expect(Self.metric("tcp_connections_refused_total", admin) == 1)
        await router.waitUntil("the refusal logged") {
            router.standardError.contains("connection refused: 2 connections are open (max_connections)")
        }
        // Silent since their messages: closed after the idle timeout, and their slots free again.
        let start = ContinuousClock.now
        #expect(second.waitForClose(timeout: .seconds(15)) && third.waitForClose(timeout: .seconds(15)))
        #expect(ContinuousClock.now - start > .milliseconds(500), "closed before the idle timeout")
        await router.waitUntil("idle closes counted") { Self.metric("connections_idle_closed_total", admin) == 2 }
        let fifth = try TCPConnection(port: port)
        try fifth.send(Self.message("after", port: port))
        #expect(fifth.receive(timeout: .seconds(5)).hasPrefix("SIP/2.0 200 OK"), "a slot is free again")
        try await SIPHostileTests.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")
        #expect(router.stop() == 0)
    }

    /// A message begun on a connection must be complete within `message_timeout`, however the
    /// bytes trickle; a connection quiet between whole messages is not touched by it.
    @Test func aMessageNotCompleteWithinTheMessageTimeoutClosesItsConnection() async throws {
        let sandbox = try Sandbox()
        let (router, admin, port) = try await Self.startRouter(sandbox, limits: "{ message_timeout: 500ms, idle_timeout: 60s }")
        let steady = try TCPConnection(port: port)
        try steady.send(Self.message("steady", port: port))
        #expect(steady.receive(timeout: .seconds(5)).hasPrefix("SIP/2.0 200 OK"))
        let slow = try TCPConnection(port: port)
        try slow.send(Array(Self.message("slow", port: port).prefix(60)))
        #expect(slow.waitForClose(timeout: .seconds(10)), "the half-sent message kept its connection")
        await router.waitUntil("the timeout counted") { Self.metric("message_timeouts_total", admin) == 1 }
        #expect(Self.metric("connections_idle_closed_total", admin) == 0)
        await router.waitUntil("the timeout logged") {
            router.standardError.contains("a message was not complete within 0.5 seconds (limits.message_timeout)")
        }
        try steady.send(Self.message("steady-again", port: port))
        #expect(steady.receive(timeout: .seconds(5)).hasPrefix("SIP/2.0 200 OK"), "the quiet connection was closed")
        #expect(router.stop() == 0)
    }

    /// One address may hold `max_connections_per_peer` connections; another still gets in.
    @Test func oneAddressCannotTakeEverySlot() async throws {
        let sandbox = try Sandbox()
        let (router, admin, port) = try await Self.startRouter(sandbox, limits: "{ max_connections: 8, max_connections_per_peer: 2 }")
        let held = try (0..<2).map { _ in try RawSocket(port: Int(port), from: "127.0.0.2") }
        let refused = try RawSocket(port: Int(port), from: "127.0.0.2")
        #expect(refused.readToEnd().isEmpty, "the third connection from one address got an answer")
        #expect(Self.metric("tcp_connections_refused_total", admin) == 1)
        await router.waitUntil("the refusal logged") {
            router.standardError.contains("tcp connection from 127.0.0.2:")
                && router.standardError.contains("connection refused: 2 connections from this address are open (max_connections_per_peer)")
        }
        let other = try RawSocket(port: Int(port), from: "127.0.0.3")
        other.write(Self.message("other", port: port))
        #expect(other.readResponse().hasPrefix("SIP/2.0 200 OK"))
        #expect(held.count == 2)
        #expect(router.stop() == 0)
    }

    /// Slow-loris on the TCP listener: 60 connections from three addresses, each sending half a
    /// message and then nothing, against 16 slots; every legitimate MESSAGE is answered and routed.
    @Test func slowLorisOnTheTCPListenerDoesNotStarveLegitimatePeers() async throws {
        let sandbox = try Sandbox()
        let (router, admin, port) = try await Self.startRouter(
            sandbox, limits: "{ max_connections: 16, max_connections_per_peer: 8, message_timeout: 60s, idle_timeout: 60s }",
            routes: "  - { from: pager.messages, to: out.write }")
        var attackers = try RawSocket.slowHeads(60, port: Int(port), addresses: 3, head: "MESSAGE sip:alice@127.0.0.1 SIP/2.0\r\nVia: ")
        await router.waitUntil("the listener to have seen all 60") {
            Self.metric("tcp_connections_evicted_total", admin) + Self.metric("tcp_connections_refused_total", admin) >= 44
        }
        var answered = 0
        for index in 0..<20 {
            let peer = try TCPConnection(port: port)
            try peer.send(Self.message("legit-\(index)", port: port))
            if peer.receive(timeout: .seconds(5)).hasPrefix("SIP/2.0 200 OK") { answered += 1 }
        }
        #expect(answered == 20)
        await router.waitUntil("the 20 messages routed") { sandbox.lines(of: "out.jsonl").count { $0.contains("legit-") } == 20 }
        #expect(router.occurrences(of: "tcp connection from") < 44, "refusals and evictions are not logged at a bounded rate")
        attackers.removeAll()
        #expect(router.stop() == 0)
    }

    /// With every descriptor in use the listener cannot accept: that is logged once with the
    /// limit and counted, and accepting resumes by itself once descriptors are free.
    @Test func runningOutOfDescriptorsIsLoggedOnceAndAcceptingResumes() async throws {
        let sandbox = try Sandbox()
        let port = try LoopbackPort.freeForUDPAndTCP()
        let (router, admin) = try await SIPHostileTests.startRouter(
            sandbox,
            sip: """
                    identity: { impu: "sip:alice@example.test" }
                    listen: { host: 127.0.0.1, port: \(port) }
                    limits: { max_connections: 1000, max_connections_per_peer: 1000 }
                """, fileLimit: (160, 160))
        var flood: [TCPConnection] = []
        for _ in 0..<200 { flood.append(try TCPConnection(port: port)) }
        await router.waitUntil("the accept failure logged") {
            router.standardError.contains(
                "tcp listener cannot accept connections: the router has no file descriptor left (the open-file limit is 160)")
        }
        flood.removeAll()
        await router.waitUntil("accepting again") { router.standardError.contains("tcp listener accepts connections again") }
        let peer = try TCPConnection(port: port)
        try peer.send(Self.message("after", port: port))
        #expect(peer.receive(timeout: .seconds(5)).hasPrefix("SIP/2.0 200 OK"))
        #expect(Self.metric("tcp_accept_failures_total", admin) >= 1)
        #expect(router.occurrences(of: "tcp listener cannot accept connections") == 1)
        #expect(router.stop() == 0)
    }

    @Test func aTLSConnectionWithoutAHandshakeIsClosed() async throws {
        let sandbox = try Sandbox()
        let (router, admin, _) = try await Self.startRouter(
            sandbox, limits: "{ tls_handshake_timeout: 300ms, idle_timeout: 30s }", tls: true)
        await router.waitUntil("the TLS listener") { router.standardError.contains("TLS on ") }
        let logged = router.standardError.components(separatedBy: "TLS on ").last ?? ""
        let tlsPort = try #require(UInt16(String(logged.prefix { $0.isNumber })))
        let silent = try TCPConnection(port: tlsPort)
        #expect(silent.waitForClose(timeout: .seconds(5)), "the connection stays open")
        #expect(Self.metric("tls_handshake_timeouts_total", admin) == 1)
        #expect(Self.metric("connections_idle_closed_total", admin) == 0)
        try await SIPHostileTests.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")
        #expect(router.stop() == 0)
    }
}
