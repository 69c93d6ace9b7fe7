import NIOCore
import SIPCodec
import SwitchyardPluginKit

/// The server transactions (RFC 3261 §17.2) of a ``SIPAgent``: one per request received, which
/// absorbs the sender's retransmissions (answering them again with the last response) and
/// lingers for Timer J; at most `limits.max_server_transactions` at once.
///
/// Separate from the agent so the open transactions have one owner: what answers a request
/// (the agent, ``SIPMessageInbox``) knows it only by its key. Confined to the agent's event
/// loop (a `NIOLoopBoundBox`, checked at each access).
final class SIPServerTransactions: Sendable {
    /// A server transaction: the request, where its answers go, what was last answered.
    struct Transaction {
        var machine: SIPServerTransaction
        var request: SIPMessage
        var peer: SIPPeer
        var lastResponse: [UInt8] = []
        var timer: Scheduled<Void>?
    }

    /// The `Retry-After` of every 503 this agent answers: come back in a second.
    static let retryAfterSeconds = 1

    private let environment: SIPAgentEnvironment
    private let _transactions: NIOLoopBoundBox<[String: Transaction]>

    init(environment: SIPAgentEnvironment) {
        self.environment = environment
        _transactions = .makeBoxSendingValue([:], as: [String: Transaction].self, eventLoop: environment.eventLoop)
    }

    /// The open transactions, by ``serverKey(_:)``.
    var transactions: [String: Transaction] {
        get { _transactions.value }
        _modify { yield &_transactions.value }
    }

    private var context: PluginContext { environment.context }

    /// Opens the transaction of a request (not an ACK) and returns its key; nil when there is
    /// nothing more to do: a retransmission (answered again) or a request past the limit (503).
    func open(_ request: SIPMessage, method: String, from peer: SIPPeer) -> String? {
        guard let key = Self.serverKey(request) else { return nil }
        if var existing = transactions[key] {
            context.metric(.counter, "retransmissions_absorbed_total", 1)
            // Answer where the copy came from (a NAT may have rebound the sender's port).
            existing.peer = peer
            let actions = existing.machine.retransmission()
            transactions[key] = existing
            perform(actions, key: key)
            return nil
        }
        // A flood of requests holds at most limits.max_server_transactions: past it, a 503
        // answered statelessly (RFC 3261 §21.5.4) asks the sender to come back later.
        guard transactions.count < environment.configuration.limits.serverTransactions else {
            context.metric(.counter, "server_transactions_refused_total", 1)
            context.log(
                .warning,
                "refused a \(method) from \(peer.addressText) with 503: \(transactions.count) server transactions open "
                    + "(limits.max_server_transactions)")
            var response = Self.response(to: request, from: peer, status: 503, reason: "Service Unavailable")
            response.headers.append("Retry-After", String(Self.retryAfterSeconds))
            environment.transport.send(response.serialized(), to: peer).whenFailure { _ in }
            return nil
        }
        transactions[key] = Transaction(
            machine: SIPServerTransaction(timers: environment.configuration.timers, reliable: peer.transport.isReliable),
            request: request, peer: peer)
        return key
    }

    /// Answers the request of server transaction `key`.
    func respond(_ key: String, status: Int, reason: String, headers extra: [(String, String)] = []) {
        guard var transaction = transactions[key] else { return }
        var response = Self.response(to: transaction.request, from: transaction.peer, status: status, reason: reason)
        for (name, value) in extra { response.headers.append(name, value) }
        transaction.lastResponse = response.serialized()
        let actions = transaction.machine.respond(status: status)
        transactions[key] = transaction
        perform(actions, key: key)
    }

    private func perform(_ actions: [SIPServerTransaction.Action], key: String) {
        for action in actions {
            guard var transaction = transactions[key] else { return }
            switch action {
            case .sendResponse:
                let peer = transaction.peer
                environment.transport.send(transaction.lastResponse, to: peer).whenFailure { error in
                    self.context.log(.warning, "answering \(peer.addressText): \(error)")
                }
            case .schedule(_, let delay):
                transaction.timer = environment.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                    guard var transaction = self.transactions[key] else { return }
                    let actions = transaction.machine.timerJ()
                    self.transactions[key] = transaction
                    self.perform(actions, key: key)
                }
                transactions[key] = transaction
            case .terminate:
                transaction.timer?.cancel()
                transactions[key] = nil
            }
        }
    }

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
            if status > 100, SIPAddress(to)?.tag == nil { to += ";tag=" + SIPAgentEnvironment.randomToken(10) }
            response.headers.append("To", to)
        }
        response.headers.append("Server", "Switchyard")
        return response
    }

    /// The reason phrase this agent answers `status` with.
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 202: "Accepted"
        case 400: "Bad Request"
        case 415: "Unsupported Media Type"
        case 500: "Server Internal Error"
        case 503: "Service Unavailable"
        default: "Status \(status)"
        }
    }
}
