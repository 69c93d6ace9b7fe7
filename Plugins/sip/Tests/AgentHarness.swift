import NIOCore
import NIOEmbedded
import PluginTestSupport
import SIPCodec
import SwitchyardCore
import Testing

@testable import SIPPlugin

/// One SIP user agent on an `EmbeddedEventLoop`, its UDP socket an `EmbeddedChannel` on which
/// the test is the far end (``peer``: the outbound proxy, the registrar, and the sender of the
/// requests the tests make up). Transaction timers (E, F, J) and the answer deadline fire only
/// when a test advances the loop's time. The agent reports to a ``RecordingHost``.
///
/// As the fuzz target does (Tests/Fuzz/SIPAgentFuzzTarget.swift), it drives the agent without
/// starting it: no listener is bound, and registering is up to the test.
final class AgentHarness {
    let loop = EmbeddedEventLoop()
    let host = RecordingHost()
    let agent: SIPAgent
    let socket: EmbeddedChannel
    /// Where the agent's requests go and the tests' requests come from.
    let peer: SocketAddress

    /// An agent for `alice` at example.test behind the proxy ``peer``, with the sip plugin's
    /// `settings` on top (`register`, `limits`, `receive`…).
    init(_ settings: [String: JSONValue] = [:]) throws {
        peer = try SocketAddress(ipAddress: "192.0.2.10", port: 5070)
        var config: [String: JSONValue] = [
            "identity": ["impu": "sip:alice@example.test", "password": "secret"], "listen": "127.0.0.1:5060",
            "proxy": "sip:192.0.2.10:5070",
        ]
        config.merge(settings) { _, setting in setting }
        agent = SIPAgent(configuration: try SIPConfiguration(config: .object(config)), context: host.context, eventLoop: loop)
        socket = EmbeddedChannel(loop: loop)
        socket.localAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 5060)
        try agent.transport.start(datagramChannel: socket, reportingTo: agent)
    }

    /// The peer sends `datagram`; the loop then runs what it set off.
    func receive(_ datagram: [UInt8]) throws {
        try socket.writeInbound(AddressedEnvelope(remoteAddress: peer, data: ByteBuffer(bytes: datagram)))
        loop.run()
    }

    /// Runs what the loop has due, then takes every datagram the agent has sent since the last
    /// call, in order; each must have gone to ``peer``.
    func sent() throws -> [SIPMessage] {
        loop.run()
        var messages: [SIPMessage] = []
        while let datagram = try socket.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) {
            #expect(datagram.remoteAddress == peer, "sent to \(datagram.remoteAddress), not to the peer")
            messages.append(try SIPParser.parse(datagram: Array(datagram.data.readableBytesView)))
        }
        return messages
    }

    /// The router delivers a `sip.Send` envelope with `body` to the send port, as delivery `id`.
    func send(_ body: JSONValue, delivery id: UInt64) throws {
        let envelope = Envelope(id: "envelope-\(id)", type: SIPEnvelopes.sendType, source: "test.out", body: body.serializedBytes())
        let outgoing = try SIPEnvelopes.outgoing(for: envelope, configuration: agent.configuration)
        // As the plugin's deliver does before it hops onto the loop.
        agent.environment.outstanding.add(1, ordering: .relaxed)
        agent.send(outgoing, delivery: host.delivery(id))
        loop.run()
    }

    /// The `state` of each `sip.Registration` emitted, in order.
    var registrationStates: [String] {
        host.emitted(on: SIPPlugin.registrationPort).compactMap { $0.envelope.decodedBody()["state"]?.stringValue }
    }

    /// Closes the socket and cancels the timers left.
    func finish() {
        _ = try? socket.finish(acceptAlreadyClosed: true)
        try? loop.syncShutdownGracefully()
    }

    /// A MESSAGE from bob to alice, as the peer sends it.
    static func message(
        branch: String = "z9hG4bK-m1", callID: String = "call-1@peer.test", cseq: String = "1 MESSAGE", body: String = "hello",
        contentType: String = "text/plain"
    ) -> [UInt8] {
        var message = SIPMessage(startLine: .request(method: "MESSAGE", uri: "sip:alice@example.test"))
        message.headers.append("Via", "SIP/2.0/UDP 192.0.2.10:5070;branch=\(branch);rport")
        message.headers.append("Max-Forwards", "70")
        message.headers.append("From", "<sip:bob@example.test>;tag=bob-1")
        message.headers.append("To", "<sip:alice@example.test>")
        message.headers.append("Call-ID", callID)
        message.headers.append("CSeq", cseq)
        message.headers.append("Content-Type", contentType)
        message.body = Array(body.utf8)
        return message.serialized()
    }

    /// The peer's answer to `request`: its Via, From, To, Call-ID and CSeq, and `headers`.
    static func response(to request: SIPMessage, status: Int, reason: String, headers: [(String, String)] = []) -> [UInt8] {
        var response = SIPMessage(startLine: .response(status: status, reason: reason))
        for name in ["Via", "From", "To", "Call-ID", "CSeq"] {
            for value in request.headers.values(name) { response.headers.append(name, value) }
        }
        for (name, value) in headers { response.headers.append(name, value) }
        return response.serialized()
    }
}
