import Foundation
import Testing

/// The sip plugin's resource limits (`limits:`), each with small values so the tests are quick:
/// the refusal the protocol has for it, its counter, and the router still routing.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SIPLimitsTests {
    /// A router whose sip instance listens on a free UDP/TCP port (and a TLS one with `tls`).
    static func startRouter(_ sandbox: Sandbox, limits: String, tls: Bool = false) async throws -> (RouterProcess, String, UInt16) {
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
                """)
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
        #expect(router.standardError.contains("refused a MESSAGE from udp:127.0.0.1:"))
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

    @Test func connectionsPastTheCapAreClosedAndIdleOnesTimeOut() async throws {
        let sandbox = try Sandbox()
        let (router, admin, port) = try await Self.startRouter(sandbox, limits: "{ max_connections: 2, idle_timeout: 1s }")
        let first = try TCPConnection(port: port)
        let second = try TCPConnection(port: port)
        let third = try TCPConnection(port: port)
        #expect(third.waitForClose(timeout: .seconds(5)), "the third connection was not closed")
        #expect(Self.metric("connections_refused_total", admin) == 1)
        #expect(router.standardError.contains("2 tcp connections open (limits.max_connections)"))
        // The first two said nothing: closed after the idle timeout, and their slots free again.
        let start = ContinuousClock.now
        #expect(first.waitForClose(timeout: .seconds(5)) && second.waitForClose(timeout: .seconds(5)))
        #expect(ContinuousClock.now - start > .milliseconds(500), "closed before the idle timeout")
        await router.waitUntil("idle closes counted") { Self.metric("connections_idle_closed_total", admin) == 2 }
        let fourth = try TCPConnection(port: port)
        try fourth.send(Self.message("after", port: port))
        #expect(fourth.receive(timeout: .seconds(5)).hasPrefix("SIP/2.0 200 OK"), "a slot is free again")
        try await SIPHostileTests.expectAliveAndDelivering(router, sandbox, admin: admin, line: "still routing")
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

/// A client TCP connection to a loopback port, with bounded waits.
final class TCPConnection {
    private let descriptor: Int32

    init(port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = LoopbackPort.loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw SandboxError("cannot connect to 127.0.0.1:\(port)")
        }
    }

    deinit { close(descriptor) }

    func send(_ bytes: [UInt8]) throws {
        guard Foundation.send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw SandboxError("send failed") }
    }

    /// What arrives within `timeout` (one read).
    func receive(timeout: Duration) -> String {
        setTimeout(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : ""
    }

    /// Whether the far side closes the connection within `timeout` (bytes before are skipped).
    func waitForClose(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            setTimeout(deadline - ContinuousClock.now)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 || (count < 0 && errno == ECONNRESET) { return true }
            if count < 0 { return false }
        }
        return false
    }

    private func setTimeout(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var value = timeval(tv_sec: max(0, Int(seconds)), tv_usec: max(1000, Int(attoseconds / 1_000_000_000_000)))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }
}
