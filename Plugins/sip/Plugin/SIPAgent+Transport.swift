import NIOCore
import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// What comes off the sockets: responses matched to client transactions, requests to server
/// transactions (within `limits.max_server_transactions`), malformed input and limit events.
extension SIPAgent: SIPTransportDelegate {
    func transport(received message: SIPMessage, from peer: SIPPeer) {
        switch message.startLine {
        case .response:
            receivedResponse(message, from: peer)
        case .request(let method, _):
            context.metric(.counter, "requests_received_total", 1)
            if method == "ACK" { return }
            guard let key = Self.serverKey(message) else { return }
            if var existing = servers[key] {
                context.metric(.counter, "retransmissions_absorbed_total", 1)
                // Answer where the copy came from (a NAT may have rebound the sender's port).
                existing.peer = peer
                let actions = existing.machine.retransmission()
                servers[key] = existing
                performServer(actions, key: key)
                return
            }
            // A flood of requests holds at most limits.max_server_transactions: past it, a 503
            // answered statelessly (RFC 3261 §21.5.4) asks the sender to come back later.
            guard servers.count < configuration.limits.serverTransactions else {
                context.metric(.counter, "server_transactions_refused_total", 1)
                context.log(
                    .warning,
                    "refused a \(method) from \(peer.addressText) with 503: \(servers.count) server transactions open "
                        + "(limits.max_server_transactions)")
                var response = Self.response(to: message, from: peer, status: 503, reason: "Service Unavailable")
                response.headers.append("Retry-After", String(Self.retryAfterSeconds))
                transport.send(response.serialized(), to: peer).whenFailure { _ in }
                return
            }
            servers[key] = ServerTransaction(
                machine: SIPServerTransaction(timers: configuration.timers, reliable: peer.transport.isReliable), request: message,
                peer: peer)
            receivedRequest(message, method: method, key: key)
        }
    }

    private func receivedResponse(_ response: SIPMessage, from peer: SIPPeer) {
        guard let top = response.headers["Via"].flatMap({ SIPHeaders.splitValues($0).first }).flatMap(SIPVia.init),
            let branch = top.branch, var transaction = clients[branch], let status = response.status
        else {
            context.metric(.counter, "stray_responses_total", 1)
            return
        }
        // What the agent adopts from a response (the CSeq of a registration) is only what it sent.
        guard let sent = transaction.cseq, let answered = response.headers.cseq, answered.number == sent.number,
            answered.method == sent.method
        else {
            return protocolError(
                "a \(status) response with CSeq '\(response.headers["CSeq"]?.prefix(40) ?? "")' answers a request with CSeq "
                    + "'\(transaction.cseq.map { "\($0.number) \($0.method)" } ?? "")'; ignored", from: peer)
        }
        transaction.response = response
        clients[branch] = transaction
        handle(.response(status: status), branch: branch)
    }

    private func receivedRequest(_ request: SIPMessage, method: String, key: String) {
        let allow = "MESSAGE, OPTIONS"
        switch method {
        case "MESSAGE":
            receivedMessage(request, key: key)
        case "OPTIONS":
            respond(key, status: 200, reason: "OK", headers: [("Allow", allow), ("Accept", configuration.accept.joined(separator: ", "))])
        case "CANCEL":
            respond(key, status: 481, reason: "Call/Transaction Does Not Exist")
        default:
            respond(key, status: 405, reason: "Method Not Allowed", headers: [("Allow", allow)])
        }
    }

    /// A peer broke the protocol in a way the parser cannot see: counted, logged, ignored.
    func protocolError(_ what: String, from peer: SIPPeer) {
        context.metric(.counter, "protocol_errors_total", 1)
        context.log(.warning, "protocol error from \(peer.addressText): \(what)")
    }

    func transport(malformed bytes: [UInt8], error: SIPParseError, from peer: SIPPeer) {
        context.metric(.counter, "malformed_total", 1)
        if error.kind == .tooLarge { context.metric(.counter, "too_large_total", 1) }
        context.log(.warning, "malformed SIP message from \(peer.addressText): \(error)")
        // A 400 (or 513) needs the request line and the headers a response copies.
        guard !bytes.isEmpty, let request = SIPParser.salvageRequest(bytes), request.method != "ACK" else { return }
        let status = error.kind == .tooLarge ? 513 : 400
        var response = Self.response(
            to: request, from: peer, status: status, reason: status == 513 ? "Message Too Large" : "Bad Request")
        // The reason quotes the peer's bytes: no quote, backslash or control character reaches the header.
        let warning = String(
            error.description.unicodeScalars.map {
                $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 == "\"" || $0 == "\\" ? "'" : Character($0)
            })
        response.headers.append("Warning", "399 switchyard \"\(warning)\"")
        transport.send(response.serialized(), to: peer).whenFailure { _ in }
    }

    func transport(closed key: String) {
        connectionClosed(key)
    }

    func transport(limited event: SIPTransportLimit, peer: String) {
        switch event {
        case .messageTimeout(let timeout):
            context.metric(.counter, "message_timeouts_total", 1)
            context.log(
                .warning, "closed the connection from \(peer): a message was not complete within \(timeout) (limits.message_timeout)")
        case .idle(let timeout):
            context.metric(.counter, "connections_idle_closed_total", 1)
            context.log(.info, "closed the connection from \(peer): nothing received for \(timeout) (limits.idle_timeout)")
        case .tlsHandshakeTimeout(let timeout):
            context.metric(.counter, "tls_handshake_timeouts_total", 1)
            context.log(.warning, "closed the connection from \(peer): no TLS handshake within \(timeout) (limits.tls_handshake_timeout)")
        }
    }
}
