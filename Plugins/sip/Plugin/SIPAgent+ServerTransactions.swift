import NIOCore
import SIPCodec
import SwitchyardPluginKit

extension SIPAgent {
    // Server transactions (RFC 3261 §17.2): matching a request to one, answering it.

    /// The server transaction a request belongs to (RFC 3261 §17.2.3): branch, sent-by and
    /// method; the older Call-ID/CSeq/From-tag identity for a request without an RFC 3261 branch.
    static func serverKey(_ request: SIPMessage) -> String? {
        guard let top = request.headers["Via"].flatMap({ SIPHeaders.splitValues($0).first }).flatMap(SIPVia.init),
            let method = request.method
        else { return nil }
        let matchedMethod = method == "ACK" ? "INVITE" : method
        if let branch = top.branch, branch.hasPrefix("z9hG4bK") {
            return "\(branch)|\(top.host):\(top.port ?? 0)|\(matchedMethod)"
        }
        return "\(request.headers["Call-ID"] ?? "")|\(request.headers.cseq?.number ?? 0)|\(dialogKey(request))|\(matchedMethod)"
    }

    /// Call-ID, CSeq number and From tag: the same request even when resent with a new branch.
    static func dialogKey(_ request: SIPMessage) -> String {
        let tag = request.headers["From"].flatMap(SIPAddress.init)?.tag ?? ""
        return "\(request.headers["Call-ID"] ?? "")|\(request.headers.cseq?.number ?? 0)|\(tag)"
    }

    /// Answers the request of server transaction `key`.
    func respond(_ key: String, status: Int, reason: String, headers extra: [(String, String)] = []) {
        guard var transaction = servers[key] else { return }
        var response = Self.response(to: transaction.request, from: transaction.peer, status: status, reason: reason)
        for (name, value) in extra { response.headers.append(name, value) }
        transaction.lastResponse = response.serialized()
        let actions = transaction.machine.respond(status: status)
        servers[key] = transaction
        performServer(actions, key: key)
    }

    func performServer(_ actions: [SIPServerTransaction.Action], key: String) {
        for action in actions {
            guard var transaction = servers[key] else { return }
            switch action {
            case .sendResponse:
                let peer = transaction.peer
                transport.send(transaction.lastResponse, to: peer).whenFailure { error in
                    self.context.log(.warning, "answering \(peer.addressText): \(error)")
                }
            case .schedule(_, let delay):
                transaction.timer = eventLoop.scheduleTask(in: TimeAmount(delay)) {
                    guard var transaction = self.servers[key] else { return }
                    let actions = transaction.machine.timerJ()
                    self.servers[key] = transaction
                    self.performServer(actions, key: key)
                }
                servers[key] = transaction
            case .terminate:
                transaction.timer?.cancel()
                servers[key] = nil
            }
        }
    }

    /// A response to `request` (RFC 3261 §8.2.6): its Via fields (the top one marked with where
    /// it really came from, RFC 3581), From, To with a tag, Call-ID and CSeq.
    static func response(to request: SIPMessage, from peer: SIPPeer, status: Int, reason: String) -> SIPMessage {
        var response = SIPMessage(startLine: .response(status: status, reason: reason))
        for (index, value) in request.headers.values("Via").flatMap(SIPHeaders.splitValues).enumerated() {
            guard index == 0, var via = SIPVia(value) else {
                response.headers.append("Via", value)
                continue
            }
            if via.parameters.items.contains(where: { $0.name.lowercased() == "rport" }) {
                via.parameters.set("rport", String(peer.address.port ?? 0))
                via.parameters.set("received", peer.address.ipAddress ?? via.host)
            } else if let address = peer.address.ipAddress, address != via.host {
                via.parameters.set("received", address)
            }
            response.headers.append("Via", via.text)
        }
        for name in ["From", "Call-ID", "CSeq"] {
            if let value = request.headers[name] { response.headers.append(name, value) }
        }
        if var to = request.headers["To"] {
            if status > 100, SIPAddress(to)?.tag == nil { to += ";tag=" + randomToken(10) }
            response.headers.append("To", to)
        }
        response.headers.append("Server", "Switchyard")
        return response
    }
}
