import NIOCore
import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// What comes off the sockets: responses to the client transactions, requests to the server
/// transactions (within `limits.max_server_transactions`) and then to what answers them,
/// malformed input and limit events.
extension SIPAgent: SIPTransportDelegate {
    func transport(received message: SIPMessage, from peer: SIPPeer) {
        switch message.startLine {
        case .response:
            clients.received(message, from: peer)
        case .request(let method, _):
            context.metric(.counter, "requests_received_total", 1)
            guard method != "ACK", let key = servers.open(message, method: method, from: peer) else { return }
            receivedRequest(message, method: method, key: key)
        }
    }

    private func receivedRequest(_ request: SIPMessage, method: String, key: String) {
        let allow = "MESSAGE, OPTIONS"
        switch method {
        case "MESSAGE":
            inbox.received(request, key: key)
        case "OPTIONS":
            servers.respond(
                key, status: 200, reason: "OK", headers: [("Allow", allow), ("Accept", configuration.accept.joined(separator: ", "))])
        case "CANCEL":
            servers.respond(key, status: 481, reason: "Call/Transaction Does Not Exist")
        default:
            servers.respond(key, status: 405, reason: "Method Not Allowed", headers: [("Allow", allow)])
        }
    }

    func transport(malformed bytes: [UInt8], error: SIPParseError, from peer: SIPPeer) {
        context.metric(.counter, "malformed_total", 1)
        if error.kind == .tooLarge { context.metric(.counter, "too_large_total", 1) }
        context.log(.warning, "malformed SIP message from \(peer.addressText): \(error)")
        // A 400 (or 513) needs the request line and the headers a response copies.
        guard !bytes.isEmpty, let request = SIPParser.salvageRequest(bytes), request.method != "ACK" else { return }
        let status = error.kind == .tooLarge ? 513 : 400
        var response = SIPServerTransactions.response(
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
        // The transactions first: a REGISTER the registration sends again at once goes over a
        // new connection and must not be failed with the old one.
        clients.connectionClosed(key)
        registration.connectionClosed(key)
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
