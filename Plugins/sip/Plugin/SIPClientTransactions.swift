import NIOCore
import SIPCodec
import SwitchyardPluginKit

/// The client transactions (RFC 3261 §17.1) of a ``SIPAgent``, by branch: each request as sent,
/// its state machine, its retransmission and timeout timers, and the responses matched to it.
///
/// Separate from the agent so the open transactions have one owner: the registration and the
/// messaging only start requests and hear how they ended. Confined to the agent's event loop
/// (a `NIOLoopBoundBox`, checked at each access).
final class SIPClientTransactions: Sendable {
    /// How a client request ended, after any authentication round.
    enum Outcome {
        /// A final response (2xx-6xx).
        case response(SIPMessage)
        /// Timer F: no final response in 64·T1.
        case timedOut
        /// The transport could not send it.
        case transportFailed(String)
    }

    /// A client transaction and what it needs to run: the request as sent, where to, its timers.
    struct Transaction {
        var machine: SIPClientTransaction
        var bytes: [UInt8]
        var target: SIPTarget
        /// The request's CSeq: a response must carry the same (RFC 3261 §8.1.3.3).
        var cseq: (number: UInt32, method: String)?
        var timers: [SIPTimer: Scheduled<Void>] = [:]
        var response: SIPMessage?
        /// Why the transport failed, when more is known than "could not send".
        var transportFailure: String?
        var completion: (Outcome) -> Void
    }

    private let environment: SIPAgentEnvironment
    private let _transactions: NIOLoopBoundBox<[String: Transaction]>

    init(environment: SIPAgentEnvironment) {
        self.environment = environment
        _transactions = .makeBoxSendingValue([:], as: [String: Transaction].self, eventLoop: environment.eventLoop)
    }

    /// The open transactions, by the branch of their Via.
    var transactions: [String: Transaction] {
        get { _transactions.value }
        _modify { yield &_transactions.value }
    }

    private var context: PluginContext { environment.context }

    /// Sends a request in a new client transaction: adds the Via (with `rport` and a fresh
    /// branch), moves a large request from UDP to TCP (RFC 3261 §18.1.1), and runs timers.
    func send(_ request: SIPMessage, to target: SIPTarget, completion: @escaping (Outcome) -> Void) {
        environment.eventLoop.assertInEventLoop()
        var target = target
        var request = request
        // 1300 bytes with room for the Via this adds.
        if target.transport == .udp, request.serialized().count + 120 > 1300 { target.transport = .tcp }
        let branch = "z9hG4bK" + SIPAgentEnvironment.randomToken(16)
        var via = SIPVia(transport: target.transport.viaName, host: environment.viaHost, port: environment.localPort(for: target.transport))
        via.parameters.set("rport", nil)
        via.parameters.set("branch", branch)
        request.headers.prepend("Via", via.text)
        let bytes = request.serialized()
        var machine = SIPClientTransaction(timers: environment.configuration.timers, reliable: target.transport.isReliable)
        let actions = machine.start()
        transactions[branch] = Transaction(
            machine: machine, bytes: bytes, target: target, cseq: request.headers.cseq, completion: completion)
        context.metric(.counter, "requests_sent_total", 1)
        perform(actions, branch: branch)
    }

    private func perform(_ actions: [SIPClientTransaction.Action], branch: String) {
        for action in actions {
            guard var transaction = transactions[branch] else { return }
            switch action {
            case .sendRequest:
                let target = transaction.target
                environment.transport.send(transaction.bytes, to: target).whenFailure { error in
                    self.context.log(.warning, "sending to \(target): \(error)")
                    self.handle(.transportError, branch: branch)
                }
                if transaction.machine.state != .trying || transaction.timers[.e] != nil {
                    context.metric(.counter, "retransmissions_total", 1)
                }
            case .schedule(let timer, let delay):
                transaction.timers[timer]?.cancel()
                transaction.timers[timer] = environment.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                    self.handle(.timer(timer), branch: branch)
                }
                transactions[branch] = transaction
            case .cancel(let timer):
                transaction.timers[timer]?.cancel()
                transaction.timers[timer] = nil
                transactions[branch] = transaction
            case .deliver(let status):
                guard status >= 200, let response = transaction.response else { continue }
                transaction.completion(.response(response))
            case .timedOut:
                context.metric(.counter, "timeouts_total", 1)
                transaction.completion(.timedOut)
            case .failed:
                transaction.completion(.transportFailed(transaction.transportFailure ?? "could not send to \(transaction.target)"))
            case .terminate:
                for timer in transaction.timers.values { timer.cancel() }
                transactions[branch] = nil
            }
        }
    }

    /// Runs an event (a timer, a response, a transport error) through the transaction `branch`.
    func handle(_ event: SIPClientTransaction.Event, branch: String) {
        guard var transaction = transactions[branch] else { return }
        let actions = transaction.machine.handle(event)
        transactions[branch] = transaction
        perform(actions, branch: branch)
    }

    /// A stream connection closed: every transaction sent over it that has no final answer yet
    /// fails now (a transport error, RFC 3261 §17.1.4) instead of waiting for Timer F. A
    /// registrar restarting, or one that closes without answering, leaves no transaction that
    /// could still be answered on that connection.
    func connectionClosed(_ key: String) {
        let lost = transactions.filter { _, transaction in
            transaction.target.transport.isReliable
                && SIPTransport.key(transaction.target.transport, transaction.target.host, transaction.target.port) == key
        }
        for (branch, transaction) in lost {
            transactions[branch]?.transportFailure = "the connection to \(transaction.target) closed before it answered"
            handle(.transportError, branch: branch)
        }
    }

    /// Ends every transaction from outside the state machine (shutdown), telling each requester why.
    func failAll(_ reason: String) {
        for (branch, _) in transactions {
            guard let transaction = transactions.removeValue(forKey: branch) else { continue }
            for timer in transaction.timers.values { timer.cancel() }
            transaction.completion(.transportFailed(reason))
        }
    }

    /// Matches a response to the transaction its top Via's branch names; a stray one is counted.
    func received(_ response: SIPMessage, from peer: SIPPeer) {
        guard let top = response.headers["Via"].flatMap({ SIPHeaders.splitValues($0).first }).flatMap(SIPVia.init),
            let branch = top.branch, var transaction = transactions[branch], let status = response.status
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
        transactions[branch] = transaction
        handle(.response(status: status), branch: branch)
    }

    /// A peer broke the protocol in a way the parser cannot see: counted, logged, ignored.
    private func protocolError(_ what: String, from peer: SIPPeer) {
        context.metric(.counter, "protocol_errors_total", 1)
        context.log(.warning, "protocol error from \(peer.addressText): \(what)")
    }
}
