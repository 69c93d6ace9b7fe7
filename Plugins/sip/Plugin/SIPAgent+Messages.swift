import NIOCore
import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// An incoming MESSAGE waiting for the router: the server transactions to answer (more than
/// one when a sender resent it with a new branch) and the answer deadline.
struct IncomingMessage {
    var serverKeys: [String]
    var dialogKey: String
    var deadline: Scheduled<Void>?
    /// What the history records once the MESSAGE is answered 2xx (nil without a history).
    var record: (peer: String, contentType: String, body: [UInt8], callID: String)?
}

/// A MESSAGE answered with a 2xx, remembered so a resend with a new branch is not emitted twice.
struct AnsweredMessage {
    var status: Int
    var expiry: NIODeadline
}

extension SIPAgent {
    /// The `Retry-After` of every 503 this agent answers: come back in a second.
    static let retryAfterSeconds = 1

    // MARK: MESSAGE in

    /// RFC 3428 §7: the content type must be acceptable (else 415 with Accept); the message is
    /// emitted once and answered when the router has it (200, or 202 for store-and-forward).
    func receivedMessage(_ request: SIPMessage, key: String) {
        let dialog = Self.dialogKey(request)
        if let previous = answered[dialog] {
            context.metric(.counter, "duplicates_total", 1)
            return respond(key, status: previous.status, reason: Self.reasonPhrase(previous.status))
        }
        if let token = waiting[dialog] {
            context.metric(.counter, "duplicates_total", 1)
            incoming[token]?.serverKeys.append(key)
            return
        }
        let contentType = request.headers["Content-Type"] ?? "text/plain"
        guard accepts(contentType) else {
            context.metric(.counter, "unsupported_media_total", 1)
            context.log(.warning, "refused a MESSAGE from \(request.headers["From"] ?? "?") with content type \(contentType) (415)")
            return respond(
                key, status: 415, reason: "Unsupported Media Type", headers: [("Accept", configuration.accept.joined(separator: ", "))])
        }
        context.metric(.counter, "messages_received_total", 1)
        // Wrapping (not in this universe's lifetime, but never a trap), and never 0: no token.
        nextSettleToken = nextSettleToken == UInt64.max ? 1 : nextSettleToken + 1
        let token = nextSettleToken
        incoming[token] = IncomingMessage(
            serverKeys: [key], dialogKey: dialog,
            record: history.map { _ in
                (
                    request.headers["From"].flatMap(SIPAddress.init)?.uri ?? "", contentType, request.body,
                    request.headers["Call-ID"] ?? ""
                )
            })
        waiting[dialog] = token
        let result = context.emit(SIPEnvelopes.envelope(for: request), on: SIPPlugin.messagesPort, settleToken: token)
        switch result {
        case .ok:
            incoming[token]?.deadline = eventLoop.scheduleTask(in: TimeAmount(configuration.answerTimeout)) {
                self.context.log(.warning, "the router did not take a MESSAGE within receive.answer_timeout; answered 503")
                self.finishIncoming(token, status: 503)
            }
        case .full:
            context.metric(.counter, "refused_full_total", 1)
            finishIncoming(token, status: 503)
        case .stopped:
            finishIncoming(token, status: 503)
        case .invalid, .unknownPort, .failed:
            finishIncoming(token, status: 500)
        }
    }

    /// The router settled an emitted MESSAGE (any thread). `retry` means the routes could not
    /// keep it (an at-least-once spool that cannot write): the sender is told to send it again
    /// (503 with Retry-After), as nothing is confirmed that is not on disk.
    func settled(token: UInt64, outcome: DeliveryOutcome) {
        eventLoop.execute {
            switch outcome {
            case .ok: self.finishIncoming(token, status: self.configuration.answerStatus)
            case .retry:
                self.context.metric(.counter, "messages_deferred_total", 1)
                self.context.log(.warning, "the routes could not keep a MESSAGE (retry): answered 503 with Retry-After")
                self.finishIncoming(token, status: 503)
            case .reject: self.finishIncoming(token, status: 500)
            }
        }
    }

    /// Answers every server transaction of an incoming MESSAGE; a 503 always says when to come
    /// back (`Retry-After`, RFC 3261 §21.5.4), so a sender retries rather than gives up.
    private func finishIncoming(_ token: UInt64, status: Int) {
        let headers = status == 503 ? [("Retry-After", String(Self.retryAfterSeconds))] : []
        guard let message = incoming.removeValue(forKey: token) else { return }
        message.deadline?.cancel()
        waiting[message.dialogKey] = nil
        if (200..<300).contains(status) {
            if let record = message.record {
                history?.recordIncoming(
                    peer: record.peer, contentType: record.contentType, body: record.body, callID: record.callID, status: status)
            }
            let expiry = NIODeadline.now() + TimeAmount(configuration.duplicateWindow)
            answered[message.dialogKey] = AnsweredMessage(status: status, expiry: expiry)
            answeredOrder.append((message.dialogKey, expiry))
            // A flood of distinct MESSAGEs (over TCP, free of Timer J) forgets the oldest first.
            while answeredOrder.count > configuration.limits.answeredMemory, let oldest = answeredOrder.popFirst() {
                if answered[oldest.key]?.expiry == oldest.expiry { answered[oldest.key] = nil }
            }
        }
        for key in message.serverKeys { respond(key, status: status, reason: Self.reasonPhrase(status), headers: headers) }
    }

    /// Whether `contentType` (parameters ignored) matches `receive.accept`.
    func accepts(_ contentType: String) -> Bool {
        let media = (contentType.split(separator: ";").first.map(String.init) ?? "").trimmingCharacters(in: " ").lowercased()
        let type = media.split(separator: "/").first.map(String.init) ?? media
        return configuration.accept.contains { $0 == "*/*" || $0 == media || $0 == type + "/*" }
    }

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

    // MARK: MESSAGE out

    /// Sends one MESSAGE for a delivery; acknowledged on the final answer: 2xx → ok;
    /// 408/480/500/503/504, Timer F or a transport failure → retry; any other 4xx-6xx → reject.
    func send(_ outgoing: SIPEnvelopes.Outgoing, delivery: Delivery) {
        guard !stopped else { return finish(delivery, .retry, reason: "sip instance stopped") }
        let target: SIPTarget
        do {
            target = try self.target(for: outgoing.to)
        } catch {
            return finish(delivery, .reject, reason: error.message)
        }
        let callID = Self.randomToken(20) + "@switchyard"
        var request = newRequest(
            method: "MESSAGE", uri: outgoing.to, to: outgoing.to, callID: callID, cseq: 1, fromTag: Self.randomToken(10))
        for (name, value) in outgoing.headers { request.headers.append(name, value) }
        request.headers.append("Content-Type", outgoing.contentType)
        request.body = outgoing.body
        let attempts = countAttempt(outgoing.envelopeID)
        let history = self.history
        history?.recordSending(outgoing, callID: callID, attempts: attempts)
        self.request(request, to: target) { outcome in
            let (status, result, reason): (Int, DeliveryOutcome, String)
            switch outcome {
            case .response(let response) where (200..<300).contains(response.status ?? 0):
                self.context.metric(.counter, "messages_sent_total", 1)
                (status, result, reason) = (response.status ?? 200, .ok, Self.reason(response))
            case .response(let response):
                let code = response.status ?? 0
                self.context.metric(.counter, "messages_failed_total", 1)
                (status, result, reason) = (code, [408, 480, 500, 503, 504].contains(code) ? .retry : .reject, Self.reason(response))
            case .timedOut:
                self.context.metric(.counter, "messages_failed_total", 1)
                (status, result, reason) = (0, .retry, "no answer within 64·T1 (Timer F)")
            case .transportFailed(let failure):
                self.context.metric(.counter, "messages_failed_total", 1)
                (status, result, reason) = (0, .retry, failure)
            }
            if result != .retry { self.forgetAttempts(outgoing.envelopeID) }
            history?.recordOutcome(envelopeID: outgoing.envelopeID, status: status, reason: reason, outcome: result.word)
            self.context.emit(
                SIPEnvelopes.outcome(of: outgoing, status: status, reason: reason, outcome: result, attempts: attempts),
                on: SIPPlugin.sentPort)
            let detail = status == 0 ? reason : "\(status) \(reason)"
            self.finish(delivery, result, reason: result == .ok ? "" : "MESSAGE to \(outgoing.to): \(detail)")
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

    private func forgetAttempts(_ id: String) {
        sendAttempts[id] = nil
    }

    func finish(_ delivery: Delivery, _ outcome: DeliveryOutcome, reason: String = "") {
        outstanding.subtract(1, ordering: .releasing)
        delivery.ack(outcome, reason: reason)
    }
}
