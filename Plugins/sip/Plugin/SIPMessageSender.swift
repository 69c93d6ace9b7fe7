import DequeModule
import NIOCore
import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// Pager-mode MESSAGEs out (RFC 3428): one MESSAGE per delivery from the router's send port,
/// acknowledged on its final answer and reported on the sent port (`sip.Outcome`).
///
/// Owns how many MESSAGEs each envelope has taken while the router may still retry it (the
/// outcome's `attempts`); separate from the agent so that count has one owner. Confined to the
/// agent's event loop (a `NIOLoopBoundBox` per field, checked at each access).
final class SIPMessageSender: Sendable {
    /// How many envelopes' attempts are remembered; past it the oldest are forgotten first.
    static let maximumRememberedAttempts = 10_000

    private let environment: SIPAgentEnvironment
    private let requests: SIPDigestClient
    private let _sendAttempts: NIOLoopBoundBox<[String: Int]>
    private let _sendAttemptsOrder: NIOLoopBoundBox<Deque<String>>

    init(environment: SIPAgentEnvironment, requests: SIPDigestClient) {
        self.environment = environment
        self.requests = requests
        _sendAttempts = .makeBoxSendingValue([:], as: [String: Int].self, eventLoop: environment.eventLoop)
        _sendAttemptsOrder = .makeBoxSendingValue([], as: Deque<String>.self, eventLoop: environment.eventLoop)
    }

    /// MESSAGEs sent per envelope id while the router may still retry it (its `sip.Outcome`'s
    /// `attempts`), oldest forgotten first past ``maximumRememberedAttempts``.
    var sendAttempts: [String: Int] {
        get { _sendAttempts.value }
        _modify { yield &_sendAttempts.value }
    }
    /// The envelope ids of ``sendAttempts`` in the order they were first sent.
    var sendAttemptsOrder: Deque<String> {
        get { _sendAttemptsOrder.value }
        _modify { yield &_sendAttemptsOrder.value }
    }

    private var context: PluginContext { environment.context }

    /// Sends one MESSAGE for a delivery; acknowledged on the final answer: 2xx → ok;
    /// 408/480/500/503/504, Timer F or a transport failure → retry; any other 4xx-6xx → reject.
    func send(_ outgoing: SIPEnvelopes.Outgoing, delivery: Delivery) {
        guard !environment.stopped else { return environment.finish(delivery, .retry, reason: "sip instance stopped") }
        let target: SIPTarget
        do {
            target = try environment.target(for: outgoing.to)
        } catch {
            return environment.finish(delivery, .reject, reason: error.message)
        }
        let callID = SIPAgentEnvironment.randomToken(20) + "@switchyard"
        var request = environment.newRequest(
            method: "MESSAGE", uri: outgoing.to, to: outgoing.to, callID: callID, cseq: 1, fromTag: SIPAgentEnvironment.randomToken(10))
        for (name, value) in outgoing.headers { request.headers.append(name, value) }
        request.headers.append("Content-Type", outgoing.contentType)
        request.body = outgoing.body
        let attempts = countAttempt(outgoing.envelopeID)
        let history = environment.history
        history?.recordSending(outgoing, callID: callID, attempts: attempts)
        requests.request(request, to: target) { outcome in
            let (status, result, reason): (Int, DeliveryOutcome, String)
            switch outcome {
            case .response(let response) where (200..<300).contains(response.status ?? 0):
                self.context.metric(.counter, "messages_sent_total", 1)
                (status, result, reason) = (response.status ?? 200, .ok, SIPAgentEnvironment.reason(response))
            case .response(let response):
                let code = response.status ?? 0
                self.context.metric(.counter, "messages_failed_total", 1)
                (status, result, reason) = (
                    code, [408, 480, 500, 503, 504].contains(code) ? .retry : .reject, SIPAgentEnvironment.reason(response)
                )
            case .timedOut:
                self.context.metric(.counter, "messages_failed_total", 1)
                (status, result, reason) = (0, .retry, "no answer within 64·T1 (Timer F)")
            case .transportFailed(let failure):
                self.context.metric(.counter, "messages_failed_total", 1)
                (status, result, reason) = (0, .retry, failure)
            }
            if result != .retry { self.sendAttempts[outgoing.envelopeID] = nil }
            history?.recordOutcome(envelopeID: outgoing.envelopeID, status: status, reason: reason, outcome: result.word)
            self.context.emit(
                SIPEnvelopes.outcome(of: outgoing, status: status, reason: reason, outcome: result, attempts: attempts),
                on: SIPPlugin.sentPort)
            let detail = status == 0 ? reason : "\(status) \(reason)"
            self.environment.finish(delivery, result, reason: result == .ok ? "" : "MESSAGE to \(outgoing.to): \(detail)")
        }
    }

    /// Counts one more MESSAGE for an envelope; returns how many there have been.
    private func countAttempt(_ id: String) -> Int {
        if let count = sendAttempts[id] {
            sendAttempts[id] = count + 1
            return count + 1
        }
        sendAttempts[id] = 1
        sendAttemptsOrder.append(id)
        while sendAttemptsOrder.count > Self.maximumRememberedAttempts, let oldest = sendAttemptsOrder.popFirst() {
            sendAttempts[oldest] = nil
        }
        return 1
    }
}
