import DequeModule
import NIOCore
import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// Pager-mode MESSAGEs in (RFC 3428): each emitted to the router once, answered when the router
/// settles it (or its answer deadline passes), and remembered a while after a 2xx so a resend
/// with a new branch is answered again, not emitted twice.
///
/// Owns the MESSAGEs waiting for the router and the answered ones; separate from the agent so
/// that state has one owner, which answers through ``SIPServerTransactions``. Confined to the
/// agent's event loop (a `NIOLoopBoundBox` per field, checked at each access).
final class SIPMessageInbox: Sendable {
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

    private let environment: SIPAgentEnvironment
    private let servers: SIPServerTransactions
    private let _incoming: NIOLoopBoundBox<[UInt64: IncomingMessage]>
    private let _waiting: NIOLoopBoundBox<[String: UInt64]>
    private let _answered: NIOLoopBoundBox<[String: AnsweredMessage]>
    private let _answeredOrder: NIOLoopBoundBox<Deque<(key: String, expiry: NIODeadline)>>
    private let _nextSettleToken: NIOLoopBoundBox<UInt64>

    init(environment: SIPAgentEnvironment, servers: SIPServerTransactions) {
        self.environment = environment
        self.servers = servers
        let eventLoop = environment.eventLoop
        _incoming = .makeBoxSendingValue([:], as: [UInt64: IncomingMessage].self, eventLoop: eventLoop)
        _waiting = .makeBoxSendingValue([:], as: [String: UInt64].self, eventLoop: eventLoop)
        _answered = .makeBoxSendingValue([:], as: [String: AnsweredMessage].self, eventLoop: eventLoop)
        _answeredOrder = .makeBoxSendingValue([], as: Deque<(key: String, expiry: NIODeadline)>.self, eventLoop: eventLoop)
        _nextSettleToken = .makeBoxSendingValue(0, as: UInt64.self, eventLoop: eventLoop)
    }

    /// The MESSAGEs emitted and not yet answered, by settle token.
    var incoming: [UInt64: IncomingMessage] {
        get { _incoming.value }
        _modify { yield &_incoming.value }
    }
    /// The settle token of each MESSAGE waiting for the router, by ``SIPServerTransactions/dialogKey(_:)``.
    var waiting: [String: UInt64] {
        get { _waiting.value }
        _modify { yield &_waiting.value }
    }
    /// The MESSAGEs answered 2xx within `receive.duplicate_window`, by dialog key.
    var answered: [String: AnsweredMessage] {
        get { _answered.value }
        _modify { yield &_answered.value }
    }
    /// Answered keys in the order they expire (one window for all): the sweep pops the front.
    var answeredOrder: Deque<(key: String, expiry: NIODeadline)> {
        get { _answeredOrder.value }
        _modify { yield &_answeredOrder.value }
    }
    private var nextSettleToken: UInt64 {
        get { _nextSettleToken.value }
        _modify { yield &_nextSettleToken.value }
    }

    private var context: PluginContext { environment.context }
    private var configuration: SIPConfiguration { environment.configuration }

    /// RFC 3428 §7: the content type must be acceptable (else 415 with Accept); the message is
    /// emitted once and answered when the router has it (200, or 202 for store-and-forward).
    func received(_ request: SIPMessage, key: String) {
        let dialog = SIPServerTransactions.dialogKey(request)
        if let previous = answered[dialog] {
            context.metric(.counter, "duplicates_total", 1)
            return servers.respond(key, status: previous.status, reason: SIPServerTransactions.reasonPhrase(previous.status))
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
            return servers.respond(
                key, status: 415, reason: "Unsupported Media Type", headers: [("Accept", configuration.accept.joined(separator: ", "))])
        }
        context.metric(.counter, "messages_received_total", 1)
        // Wrapping (not in this universe's lifetime, but never a trap), and never 0: no token.
        nextSettleToken = nextSettleToken == UInt64.max ? 1 : nextSettleToken + 1
        let token = nextSettleToken
        incoming[token] = IncomingMessage(
            serverKeys: [key], dialogKey: dialog,
            record: environment.history.map { _ in
                (
                    request.headers["From"].flatMap(SIPAddress.init)?.uri ?? "", contentType, request.body,
                    request.headers["Call-ID"] ?? ""
                )
            })
        waiting[dialog] = token
        let result = context.emit(SIPEnvelopes.envelope(for: request), on: SIPPlugin.messagesPort, settleToken: token)
        switch result {
        case .ok:
            incoming[token]?.deadline = environment.eventLoop.scheduleTask(in: TimeAmount(configuration.answerTimeout)) {
                self.context.log(.warning, "the router did not take a MESSAGE within receive.answer_timeout; answered 503")
                self.finish(token, status: 503)
            }
        case .full:
            context.metric(.counter, "refused_full_total", 1)
            finish(token, status: 503)
        case .stopped:
            finish(token, status: 503)
        case .invalid, .unknownPort, .failed:
            finish(token, status: 500)
        }
    }

    /// The router settled an emitted MESSAGE (any thread). `retry` means the routes could not
    /// keep it (an at-least-once spool that cannot write): the sender is told to send it again
    /// (503 with Retry-After), as nothing is confirmed that is not on disk.
    func settled(token: UInt64, outcome: DeliveryOutcome) {
        environment.eventLoop.execute {
            switch outcome {
            case .ok: self.finish(token, status: self.configuration.answerStatus)
            case .retry:
                self.context.metric(.counter, "messages_deferred_total", 1)
                self.context.log(.warning, "the routes could not keep a MESSAGE (retry): answered 503 with Retry-After")
                self.finish(token, status: 503)
            case .reject: self.finish(token, status: 500)
            }
        }
    }

    /// Answers every server transaction of an incoming MESSAGE; a 503 always says when to come
    /// back (`Retry-After`, RFC 3261 §21.5.4), so a sender retries rather than gives up.
    private func finish(_ token: UInt64, status: Int) {
        let headers = status == 503 ? [("Retry-After", String(SIPServerTransactions.retryAfterSeconds))] : []
        guard let message = incoming.removeValue(forKey: token) else { return }
        message.deadline?.cancel()
        waiting[message.dialogKey] = nil
        if (200..<300).contains(status) {
            if let record = message.record {
                environment.history?.recordIncoming(
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
        let reason = SIPServerTransactions.reasonPhrase(status)
        for key in message.serverKeys { servers.respond(key, status: status, reason: reason, headers: headers) }
    }

    /// Answers every MESSAGE still waiting for the router 503 (shutdown): no answer will come.
    func refuseAll() {
        for (token, message) in incoming {
            incoming[token] = nil
            for key in message.serverKeys {
                servers.respond(
                    key, status: 503, reason: "Service Unavailable",
                    headers: [("Retry-After", String(SIPServerTransactions.retryAfterSeconds))])
            }
        }
    }

    /// Forgets answered-message memory past its window.
    func sweep() {
        let now = NIODeadline.now()
        while let first = answeredOrder.first, first.expiry <= now {
            answeredOrder.removeFirst()
            if let entry = answered[first.key], entry.expiry <= now { answered[first.key] = nil }
        }
    }

    /// Whether `contentType` (parameters ignored) matches `receive.accept`.
    func accepts(_ contentType: String) -> Bool {
        let media = (contentType.split(separator: ";").first.map(String.init) ?? "").trimmingCharacters(in: " ").lowercased()
        let type = media.split(separator: "/").first.map(String.init) ?? media
        return configuration.accept.contains { $0 == "*/*" || $0 == media || $0 == type + "/*" }
    }
}
