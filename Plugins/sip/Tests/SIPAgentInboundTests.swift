import NIOCore
import NIOEmbedded
import SIPCodec
import SwitchyardCore
import Testing

@testable import SIPPlugin

/// MESSAGEs from a peer, over a UDP socket that is an `EmbeddedChannel` (``AgentHarness``):
/// answered when the router settled them, taken once however often they are resent, and
/// refused with 503 when the agent or the routes have no room.
struct SIPAgentInboundTests {
    @Test func aMessageIsAnswered200OnlyOnceTheRouterSettledIt() throws {
        let harness = try AgentHarness()
        defer { harness.finish() }
        try harness.receive(AgentHarness.message())
        let emitted = harness.host.emitted(on: SIPPlugin.messagesPort)
        #expect(emitted.count == 1)
        let message = try #require(emitted.first)
        #expect(message.envelope.type == SIPEnvelopes.messageType)
        #expect(message.envelope.bodyText == "hello")
        #expect(message.settleToken != 0)
        #expect(try harness.sent().isEmpty, "answered before the router settled the MESSAGE")

        harness.agent.settled(token: message.settleToken, outcome: .ok)
        let answers = try harness.sent()
        #expect(answers.map(\.status) == [200])
        let answer = try #require(answers.first)
        #expect(answer.headers["Call-ID"] == "call-1@peer.test")
        #expect(answer.headers["CSeq"] == "1 MESSAGE")
        #expect(answer.headers["To"]?.contains(";tag=") == true)
        #expect(answer.headers["Via"]?.contains("branch=z9hG4bK-m1") == true)
    }

    @Test func aMessageTheRoutesCannotKeepIsAnswered503WithRetryAfter() throws {
        let harness = try AgentHarness()
        defer { harness.finish() }
        try harness.receive(AgentHarness.message())
        let message = try #require(harness.host.emitted.first)
        harness.agent.settled(token: message.settleToken, outcome: .retry)
        let answer = try #require(try harness.sent().first)
        #expect(answer.status == 503)
        #expect(answer.headers["Retry-After"] == "1")
        #expect(harness.host.counter("messages_deferred_total") == 1)
    }

    @Test func aRetransmittedMessageIsTakenOnceAndAnsweredEachTime() throws {
        let harness = try AgentHarness()
        defer { harness.finish() }
        try harness.receive(AgentHarness.message())
        // UDP Timer E at the sender: the same request again, before the router settled it.
        try harness.receive(AgentHarness.message())
        #expect(harness.host.emitted(on: SIPPlugin.messagesPort).count == 1)
        #expect(harness.host.counter("retransmissions_absorbed_total") == 1)
        #expect(try harness.sent().isEmpty)

        let message = try #require(harness.host.emitted.first)
        harness.agent.settled(token: message.settleToken, outcome: .ok)
        #expect(try harness.sent().map(\.status) == [200])
        // Resent after the answer (it was lost): the transaction answers again.
        try harness.receive(AgentHarness.message())
        #expect(try harness.sent().map(\.status) == [200])
        #expect(harness.host.counter("retransmissions_absorbed_total") == 2)
        // Resent as a new transaction (a new branch, the same Call-ID, CSeq and From tag): a
        // duplicate, answered as the first was.
        try harness.receive(AgentHarness.message(branch: "z9hG4bK-m2"))
        #expect(try harness.sent().map(\.status) == [200])
        #expect(harness.host.counter("duplicates_total") == 1)
        #expect(harness.host.emitted(on: SIPPlugin.messagesPort).count == 1)
    }

    @Test func aMessageTheRouterDoesNotSettleIsAnswered503AtTheAnswerTimeout() throws {
        let harness = try AgentHarness(["receive": ["answer_timeout": "2s"]])
        defer { harness.finish() }
        try harness.receive(AgentHarness.message())
        harness.loop.advanceTime(by: .milliseconds(1999))
        #expect(try harness.sent().isEmpty)
        harness.loop.advanceTime(by: .milliseconds(1))
        #expect(try harness.sent().map(\.status) == [503])
        #expect(harness.host.logged(.warning) == ["the router did not take a MESSAGE within receive.answer_timeout; answered 503"])
        // A settlement that comes late changes nothing.
        let message = try #require(harness.host.emitted.first)
        harness.agent.settled(token: message.settleToken, outcome: .ok)
        #expect(try harness.sent().isEmpty)
    }

    @Test func requestsPastTheServerTransactionLimitAreAnswered503() throws {
        let harness = try AgentHarness(["limits": ["max_server_transactions": 1]])
        defer { harness.finish() }
        try harness.receive(AgentHarness.message())
        try harness.receive(AgentHarness.message(branch: "z9hG4bK-other", callID: "call-2@peer.test"))
        let answers = try harness.sent()
        #expect(answers.map(\.status) == [503])
        #expect(answers.first?.headers["Call-ID"] == "call-2@peer.test")
        #expect(answers.first?.headers["Retry-After"] == "1")
        #expect(harness.host.counter("server_transactions_refused_total") == 1)
        #expect(harness.host.emitted(on: SIPPlugin.messagesPort).count == 1)
    }

    @Test func aMessageTheRoutesHaveNoRoomForIsAnswered503() throws {
        let harness = try AgentHarness()
        defer { harness.finish() }
        harness.host.emitAnswer = .full
        try harness.receive(AgentHarness.message())
        let answer = try #require(try harness.sent().first)
        #expect(answer.status == 503)
        #expect(answer.headers["Retry-After"] == "1")
        #expect(harness.host.counter("refused_full_total") == 1)
    }

    @Test func aContentTypeNotAcceptedIsAnswered415WithWhatIs() throws {
        let harness = try AgentHarness()
        defer { harness.finish() }
        try harness.receive(AgentHarness.message(contentType: "image/png"))
        let answer = try #require(try harness.sent().first)
        #expect(answer.status == 415)
        #expect(answer.headers["Accept"] == "text/plain, application/json")
        #expect(harness.host.emitted.isEmpty)
    }

    @Test func aMalformedRequestIsAnswered400SayingWhy() throws {
        let harness = try AgentHarness()
        defer { harness.finish() }
        // The CSeq's method is not the request's.
        try harness.receive(AgentHarness.message(cseq: "1 INFO"))
        let answer = try #require(try harness.sent().first)
        #expect(answer.status == 400)
        #expect(answer.headers["Warning"]?.hasPrefix("399 switchyard \"") == true)
        #expect(harness.host.counter("malformed_total") == 1)
        #expect(harness.host.emitted.isEmpty)
    }
}
