import Foundation
import Testing

@testable import IntegrationSupport

/// The webhook against clients that try to hold it: a connection cap, header and body read
/// timeouts, the bearer token checked before the body, the body limit checked before and while
/// reading, and a router that cannot take a message answered 503 with Retry-After.
@Suite(.timeLimit(.minutes(2)))
struct PushLimitsTests {
    static let bearer = PushRouter.bearer

    /// A webhook with tight limits, routed to a testkit sink that answers retry while `down` exists.
    static func start(_ sandbox: Sandbox, limits: String, down: String = "/nonexistent") async throws -> (
        router: RouterProcess, port: Int, admin: String
    ) {
        try sandbox.installPlugin("testkit")
        let (router, webhook, admin) = try await PushRouter.start(
            sandbox,
            instances: """
                  push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "${PUSH_BEARER}" }, \(limits) }
                  sink: { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", fail_while: "\(down)" } }
                """,
            routes: "routes:\n  - { from: push.messages, to: sink.collect }")
        let port = Int(webhook.split(separator: ":").last ?? "") ?? -1
        return (router, port, admin)
    }

    static func status(of answer: String) -> Int? {
        answer.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) }
    }

    /// A wrong token with a 100 MB body announced is answered 401 at once, without the body
    /// being sent; a right token with a declared body over `max_body` gets 413 the same way.
    @Test func refusalsComeBeforeTheBodyIsRead() async throws {
        let sandbox = try Sandbox()
        // A body deadline far off: an answer that waited for the body would come only after it.
        let (router, port, admin) = try await Self.start(sandbox, limits: "max_body: 8KiB, body_timeout: 10m")
        let started = ContinuousClock.now
        let stranger = try RawSocket(port: port)
        stranger.write("POST /push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nContent-Length: 100000000\r\n\r\n")
        let refused = stranger.readToEnd()
        #expect(Self.status(of: refused) == 401, "\(refused)")
        let tooLarge = try RawSocket(port: port)
        tooLarge.write("POST /push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Self.bearer)\r\nContent-Length: 9000\r\n\r\n")
        let answer = tooLarge.readToEnd()
        #expect(Self.status(of: answer) == 413, "\(answer)")
        // Both answers came, and the connections closed, without waiting for a byte of the
        // bodies: well before the body deadline (a bound no load comes near).
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(try PushTests.metric("webhook_unauthorized_total", admin: admin) == 1)
        #expect(try PushTests.metric("webhook_too_large_total", admin: admin) == 1)
        // A body over the limit without a declared length is refused while it is read.
        let chunked = try RawSocket(port: port)
        let chunk = String(repeating: "x", count: 4096)
        chunked.write("POST /push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Self.bearer)\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in 0..<3 { chunked.write("1000\r\n\(chunk)\r\n") }
        let streamed = chunked.readToEnd()
        #expect(Self.status(of: streamed) == 413, "\(streamed)")
        #expect(router.process.isRunning)
        #expect(router.stop() == 0, "\(router.standardError)")
    }

    /// A client that connects and says nothing, or sends half a head, is answered 408 and
    /// closed after `header_timeout`; one that stops in the middle of a body is closed after
    /// `body_timeout`. Every other client is still served.
    @Test func slowClientsAreClosed() async throws {
        let sandbox = try Sandbox()
        let (router, port, admin) = try await Self.start(sandbox, limits: "header_timeout: 300ms, body_timeout: 300ms")
        let silent = try RawSocket(port: port)
        let slow = try RawSocket(port: port)
        slow.write("POST /push HTTP/1.1\r\nHost: x\r\n")
        let stalled = try RawSocket(port: port)
        stalled.write("POST /push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Self.bearer)\r\nContent-Length: 100\r\n\r\n{\"topic\"")
        let silentAnswer = silent.readToEnd()
        #expect(Self.status(of: silentAnswer) == 408, "\(silentAnswer)")
        let slowAnswer = slow.readToEnd()
        #expect(Self.status(of: slowAnswer) == 408, "\(slowAnswer)")
        let stalledAnswer = stalled.readToEnd()
        #expect(Self.status(of: stalledAnswer) != 200, "\(stalledAnswer)")
        #expect(try PushTests.metric("webhook_timeouts_total", admin: admin) == 3)
        #expect(router.logged("no complete request head within 0.3s (header_timeout)"))
        #expect(router.logged("body was not complete within 0.3s (body_timeout)"))
        let fine = try HTTPExchange.send(
            "http://127.0.0.1:\(port)/push", method: "POST", headers: ["Authorization": "Bearer \(Self.bearer)"],
            body: #"{"topic": "news", "data": {"k": "v"}}"#)
        #expect(fine.status == 200, "\(fine.body)")
        #expect(router.stop() == 0, "\(router.standardError)")
    }

    /// A kept-alive connection gets a new `header_timeout` after each answer (the guard's one
    /// timer, set at connect, fires before the new deadline and must set itself again rather
    /// than close): a second request sent after the first deadline, within the new one, is
    /// served; silence after it is answered 408 and closed.
    @Test func eachAnswerOnAKeptConnectionRestartsTheHeaderTimeout() async throws {
        let sandbox = try Sandbox()
        let (router, port, admin) = try await Self.start(sandbox, limits: "header_timeout: 2s")
        let body = #"{"topic": "news", "data": {"k": "v"}}"#
        let request =
            "POST /push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Self.bearer)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let client = try RawSocket(port: port)
        let connected = ContinuousClock.now
        Self.pause(until: connected + .seconds(1))
        client.write(request)
        let first = client.readResponse()
        #expect(Self.status(of: first) == 200, "\(first)")
        let answered = ContinuousClock.now
        try #require(answered < connected + .milliseconds(1800), "the first answer came too late to test the timer")
        // Past the deadline set at connect (2 s), before the one set by the answer.
        Self.pause(until: connected + .milliseconds(2500))
        #expect(client.write(request))
        let second = client.readResponse()
        #expect(Self.status(of: second) == 200, "\(second)")
        let silence = ContinuousClock.now
        let closing = client.readToEnd()
        #expect(Self.status(of: closing) == 408, "\(closing)")
        #expect(ContinuousClock.now - silence > .milliseconds(1500))
        #expect(try PushTests.metric("webhook_timeouts_total", admin: admin) == 1)
        #expect(sandbox.lines(of: "collected.txt").count == 2)
        #expect(router.stop() == 0, "\(router.standardError)")
    }

    /// Lets time pass on an open connection: the timeouts under test are the events.
    private static func pause(until instant: ContinuousClock.Instant) {
        let left = ContinuousClock.now.duration(to: instant)
        guard left > .zero else { return }
        Thread.sleep(forTimeInterval: Double(left.components.seconds) + Double(left.components.attoseconds) * 1e-18)
    }

    /// At `max_connections`, a new connection takes the place of the oldest one still waiting
    /// for its request head, which is closed; when every open connection is in a request, the
    /// new one is answered 503 with Retry-After.
    @Test func aSlowHeadGivesWayAndBusyConnectionsRefuseWith503() async throws {
        let sandbox = try Sandbox()
        let (router, port, admin) = try await Self.start(
            sandbox, limits: "max_connections: 2, max_connections_per_peer: 10, header_timeout: 2s")
        let slow = [try RawSocket(port: port), try RawSocket(port: port)]
        for socket in slow { socket.write("POST /push HTTP/1.1\r\nHost: x\r\n") }
        await router.waitUntil("both slow connections open") {
            (try? PushTests.metric("webhook_connections_open", admin: admin)) == 2
        }
        let served = try HTTPExchange.send(
            "http://127.0.0.1:\(port)/push", method: "POST", headers: ["Authorization": "Bearer \(Self.bearer)"],
            body: #"{"topic": "news", "data": {"k": "v"}}"#)
        #expect(served.status == 200)
        #expect(try PushTests.metric("webhook_connections_evicted_total", admin: admin) >= 1)
        // One slow head was closed without an answer to make room; the other timed out (408).
        let answers = slow.map { $0.readToEnd() }
        #expect(answers.filter(\.isEmpty).count == 1, "\(answers)")
        #expect(router.logged("it had sent no complete request head"))

        // Two connections in the middle of a request (a head, the body still to come): the third is refused.
        let busy = [try RawSocket(port: port), try RawSocket(port: port)]
        for socket in busy {
            socket.write("POST /push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Self.bearer)\r\nContent-Length: 100\r\n\r\n{")
        }
        // Both heads read (the server waits for their bodies), and nothing else waits for a head.
        await router.waitUntil("both requests under way") {
            (try? PushTests.metric("webhook_connections_open", admin: admin)) == 2
                && (try? PushTests.metric("webhook_connections_waiting", admin: admin)) == 0
        }
        try await router.waitUntil("a new connection refused") {
            // Each new probe evicts what still waits for a head; it is answered 503 once none does.
            let probe = try RawSocket(port: port)
            probe.write("GET /v1/tokens HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return Self.status(of: probe.readToEnd()) == 503
        }
        #expect(try PushTests.metric("webhook_connections_refused_total", admin: admin) >= 1)
        #expect(router.stop() == 0, "\(router.standardError)")
    }

    /// One address cannot take more than `max_connections_per_peer` slots; another is served.
    @Test func oneAddressIsCappedBelowTheServer() async throws {
        let sandbox = try Sandbox()
        let (router, port, admin) = try await Self.start(sandbox, limits: "max_connections: 16, max_connections_per_peer: 2")
        let held = [try RawSocket(port: port, from: "127.0.0.2"), try RawSocket(port: port, from: "127.0.0.2")]
        for socket in held { socket.write("POST /push HTTP/1.1\r\nHost: x\r\n") }
        let third = try RawSocket(port: port, from: "127.0.0.2")
        let answer = third.readToEnd()
        #expect(Self.status(of: answer) == 503, "\(answer)")
        #expect(try PushTests.metric("webhook_connections_refused_total", admin: admin) == 1)
        #expect(router.logged("2 connections from this address are open (max_connections_per_peer)"))
        let served = try HTTPExchange.send(
            "http://127.0.0.1:\(port)/push", method: "POST", headers: ["Authorization": "Bearer \(Self.bearer)"],
            body: #"{"topic": "news", "data": {"k": "v"}}"#)
        #expect(served.status == 200)
        #expect(router.stop() == 0, "\(router.standardError)")
    }

    /// Slow-loris from three addresses — 60 connections, each sending half a request head and
    /// then nothing — against a webhook of 16 slots: every legitimate request is served.
    @Test func slowLorisDoesNotStarveLegitimateClients() async throws {
        let sandbox = try Sandbox()
        let (router, port, admin) = try await Self.start(
            sandbox, limits: "max_connections: 16, max_connections_per_peer: 8, header_timeout: 60s")
        var attackers = try RawSocket.slowHeads(60, port: port, addresses: 3, head: "POST /push HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        // Every attacking connection was seen: 16 hold the slots, the rest were evicted or refused.
        await router.waitUntil("the server to have seen all 60") {
            let evicted = (try? PushTests.metric("webhook_connections_evicted_total", admin: admin)) ?? 0
            let refused = (try? PushTests.metric("webhook_connections_refused_total", admin: admin)) ?? 0
            return evicted + refused >= 44
        }
        var served = 0
        for _ in 0..<20 {
            let answer = try HTTPExchange.send(
                "http://127.0.0.1:\(port)/push", method: "POST", headers: ["Authorization": "Bearer \(Self.bearer)"],
                body: #"{"topic": "news", "data": {"k": "v"}}"#)
            if answer.status == 200 { served += 1 }
        }
        #expect(served == 20)
        await router.waitUntil("the 20 messages collected") { sandbox.lines(of: "collected.txt").count == 20 }
        #expect(try PushTests.metric("webhook_connections_evicted_total", admin: admin) >= 20)
        // Refusals and evictions are logged at a bounded rate (five a second), not one line each.
        #expect(router.occurrences(of: "webhook connection from") < 44, "\(router.standardError)")
        attackers.removeAll()
        #expect(router.stop() == 0, "\(router.standardError)")
    }

    /// A message the routes settle with retry (here: the sink is down on an at-most-once route;
    /// on an at-least-once route, a spool that cannot write) is answered 503 with Retry-After,
    /// so the sender sends it again; nothing was taken.
    @Test func aMessageSettledWithRetryIsAnswered503WithRetryAfter() async throws {
        let sandbox = try Sandbox()
        let down = sandbox.path("sink-down")
        #expect(FileManager.default.createFile(atPath: down, contents: nil))
        let (router, port, admin) = try await Self.start(sandbox, limits: "ack_timeout: 10s", down: down)
        let result = try Tool.run(
            "/usr/bin/curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code} %header{retry-after}", "-H", "Authorization: Bearer \(Self.bearer)",
                "-d", #"{"topic": "news", "data": {"k": "v"}}"#, "http://127.0.0.1:\(port)/push",
            ])
        #expect(result.output == "503 1", "\(result.output)")
        #expect(try PushTests.metric("webhook_unavailable_total", admin: admin) == 1)
        #expect(sandbox.lines(of: "collected.txt").isEmpty)
        try FileManager.default.removeItem(atPath: down)
        let again = try HTTPExchange.send(
            "http://127.0.0.1:\(port)/push", method: "POST", headers: ["Authorization": "Bearer \(Self.bearer)"],
            body: #"{"topic": "news", "data": {"k": "v"}}"#)
        #expect(again.status == 200, "\(again.body)")
        #expect(sandbox.lines(of: "collected.txt").count == 1)
        #expect(router.stop() == 0, "\(router.standardError)")
    }
}
