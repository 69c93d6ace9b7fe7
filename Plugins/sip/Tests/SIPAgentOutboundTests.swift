import NIOCore
import NIOEmbedded
import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit
import Testing

@testable import SIPPlugin

/// Requests the agent starts, over a UDP socket that is an `EmbeddedChannel` (``AgentHarness``):
/// MESSAGEs for the router's deliveries, retransmitted on Timer E and given up on Timer F, and
/// REGISTERs answered with digest credentials when the registrar challenges them.
struct SIPAgentOutboundTests {
    @Test func aMessageIsRetransmittedOnTimerEAndFailsForRetryAtTimerF() throws {
        let harness = try AgentHarness()
        defer { harness.finish() }
        try harness.send(["to": "sip:bob@example.test", "body": "hi"], delivery: 1)
        let first = try #require(try harness.sent().first)
        #expect(first.startLine == .request(method: "MESSAGE", uri: "sip:bob@example.test"))
        #expect(first.body == Array("hi".utf8))

        // Timer E: T1 (500 ms) after the first send, the same request again.
        harness.loop.advanceTime(by: .milliseconds(499))
        #expect(try harness.sent().isEmpty)
        harness.loop.advanceTime(by: .milliseconds(1))
        #expect(try harness.sent() == [first])
        #expect(harness.host.counter("retransmissions_total") == 1)

        // Timer F: 64·T1 after the first send, no answer came: the router is told to retry.
        harness.loop.advanceTime(to: .uptimeNanoseconds(0) + .milliseconds(31_999))
        #expect(harness.host.acknowledgement(of: 1) == nil)
        harness.loop.advanceTime(to: .uptimeNanoseconds(0) + .seconds(32))
        let acknowledgement = try #require(harness.host.acknowledgement(of: 1))
        #expect(acknowledgement.outcome == .retry)
        #expect(acknowledgement.reason == "MESSAGE to sip:bob@example.test: no answer within 64·T1 (Timer F)")
        #expect(harness.host.counter("timeouts_total") == 1)
        let outcome = try #require(harness.host.emitted(on: SIPPlugin.sentPort).first).envelope.decodedBody()
        #expect(outcome["outcome"] == "retry")
        #expect(outcome["envelope_id"] == "envelope-1")
        #expect(outcome["attempts"] == 1)
        // Nothing more goes out for it.
        _ = try harness.sent()
        harness.loop.advanceTime(by: .seconds(60))
        #expect(try harness.sent().isEmpty)
    }

    @Test(arguments: [
        (200, "OK", DeliveryOutcome.ok, ""),
        (404, "Not Found", .reject, "MESSAGE to sip:bob@example.test: 404 Not Found"),
        (480, "Temporarily Unavailable", .retry, "MESSAGE to sip:bob@example.test: 480 Temporarily Unavailable"),
    ])
    func aMessageIsAcknowledgedOnItsFinalAnswer(status: Int, reason: String, outcome: DeliveryOutcome, ackReason: String) throws {
        let harness = try AgentHarness()
        defer { harness.finish() }
        try harness.send(["to": "sip:bob@example.test", "body": "hi"], delivery: 1)
        let request = try #require(try harness.sent().first)
        #expect(harness.host.acknowledgement(of: 1) == nil)
        try harness.receive(AgentHarness.response(to: request, status: status, reason: reason))
        let acknowledgement = try #require(harness.host.acknowledgement(of: 1))
        #expect(acknowledgement.outcome == outcome)
        #expect(acknowledgement.reason == ackReason)
        let reported = try #require(harness.host.emitted(on: SIPPlugin.sentPort).first).envelope.decodedBody()
        #expect(reported["status"] == .int(status))
        // A final answer ends the retransmissions.
        harness.loop.advanceTime(by: .seconds(10))
        #expect(try harness.sent().isEmpty)
    }

    @Test func aRegisterChallengedWith401IsSentAgainWithDigestCredentials() throws {
        let harness = try AgentHarness(["register": ["expires": 600]])
        defer { harness.finish() }
        harness.agent.registration.start()
        let first = try #require(try harness.sent().first)
        #expect(first.startLine == .request(method: "REGISTER", uri: "sip:example.test"))
        #expect(first.headers["CSeq"] == "1 REGISTER")
        #expect(first.headers["Contact"] == "<sip:alice@127.0.0.1:5060>")
        #expect(first.headers["Authorization"] == nil)

        let challenge = #"Digest realm="example.test", nonce="n0nce", qop="auth", algorithm=MD5"#
        try harness.receive(
            AgentHarness.response(to: first, status: 401, reason: "Unauthorized", headers: [("WWW-Authenticate", challenge)]))
        let second = try #require(try harness.sent().first)
        #expect(second.headers["CSeq"] == "2 REGISTER")
        #expect(second.headers["Call-ID"] == first.headers["Call-ID"])
        let fields = Self.digestFields(try #require(second.headers["Authorization"]))
        #expect(fields["username"] == "alice")
        #expect(fields["realm"] == "example.test")
        #expect(fields["nonce"] == "n0nce")
        #expect(fields["uri"] == "sip:example.test")
        #expect(fields["qop"] == "auth")
        // RFC 2617 §3.2.2.1 with qop=auth, over the identity's password.
        let md5 = SIPDigest.Algorithm.md5
        let ha1 = md5.hash("alice:example.test:secret")
        let ha2 = md5.hash("REGISTER:sip:example.test")
        let expected = md5.hash("\(ha1):n0nce:\(fields["nc"] ?? ""):\(fields["cnonce"] ?? ""):auth:\(ha2)")
        #expect(fields["response"] == expected)

        try harness.receive(
            AgentHarness.response(to: second, status: 200, reason: "OK", headers: [("Contact", "<sip:alice@127.0.0.1:5060>;expires=300")]))
        #expect(harness.registrationStates == ["registering", "registered"])
        let registered = try #require(harness.host.emitted(on: SIPPlugin.registrationPort).last).envelope.decodedBody()
        #expect(registered["expires"] == 300)
        #expect(harness.host.gauge("registered") == 1)
    }

    @Test func aRegisterChallengedAgainIsReportedAsWrongCredentialsAndRetriedLater() throws {
        let harness = try AgentHarness(["register": ["expires": 600, "retry": ["initial_delay": "1s", "max_delay": "60s"]]])
        defer { harness.finish() }
        harness.agent.registration.start()
        let challenge = ("WWW-Authenticate", #"Digest realm="example.test", nonce="n0nce""#)
        let first = try #require(try harness.sent().first)
        try harness.receive(AgentHarness.response(to: first, status: 401, reason: "Unauthorized", headers: [challenge]))
        let second = try #require(try harness.sent().first)
        #expect(second.headers["Authorization"] != nil)
        // The same nonce, not stale, for the credentials just given: they are wrong.
        try harness.receive(AgentHarness.response(to: second, status: 401, reason: "Unauthorized", headers: [challenge]))
        let reason = "registrar refused the credentials of alice (401 Unauthorized); check identity.password and identity.impi"
        #expect(harness.registrationStates == ["registering", "failed"])
        let failed = try #require(harness.host.emitted(on: SIPPlugin.registrationPort).last).envelope.decodedBody()
        #expect(failed["reason"] == .string(reason))
        #expect(harness.host.logged(.error) == ["registration of sip:alice@example.test failed: \(reason)"])
        #expect(try harness.sent().isEmpty, "a third REGISTER at once")

        // Tried again after the backoff (1 s ± 20 %), with the cached challenge answered up front.
        harness.loop.advanceTime(by: .milliseconds(1200))
        let third = try #require(try harness.sent().first)
        #expect(third.headers["CSeq"] == "3 REGISTER")
        #expect(third.headers["Authorization"] != nil)
    }

    /// The `name=value` fields of a `Digest …` header, quotes removed.
    static func digestFields(_ header: String) -> [String: String] {
        var fields: [String: String] = [:]
        for part in header.dropFirst("Digest ".count).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = pair[0].drop { $0 == " " }
            var value = pair[1]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
            fields[String(name)] = String(value)
        }
        return fields
    }
}
