import Dispatch
import Foundation
import SwitchyardCore
import SwitchyardPluginKit

extension SIPAgent {
    /// The message history, when the instance keeps one.
    var history: SIPHistory? { environment.history }

    /// Opens the history from the router's store (`start()`); a router without a store refuses
    /// the instance with the reason.
    func openHistory(_ configuration: SIPConfiguration) throws(PluginError) {
        guard let settings = configuration.history, history == nil else { return }
        let history = try SIPHistory(context: context, identity: configuration.identity.impu, settings: settings)
        environment.historyBox.withLock { $0 = history }
    }

    /// `sip.Control {action: clear_history, peer}`: removes the history, or one peer's part.
    func clearHistory(peer: String?, delivery: Delivery) {
        guard let history else { return delivery.ack(.reject, reason: "this instance keeps no history (no history: section)") }
        let context = context
        DispatchQueue.global().async {
            let count = history.clear(peer: peer)
            context.log(.info, "history: cleared \(count) entries" + (peer.map { " with \(SIPEnvelopes.escaped($0))" } ?? ""))
            delivery.ack(.ok)
        }
    }

    /// The `history_query` piece: `{peer, since, before, limit}` — `since` an RFC 3339 time or
    /// a number of milliseconds since 1970, `before` an entry id (the next page after an
    /// answer with `more`), `limit` 1-1000 (default 100).
    func queryHistory(_ input: JSONValue, completion: PieceCompletion) {
        guard let history else { return completion.fail("this instance keeps no history (no history: section)") }
        let peer = input["peer"]?.stringValue
        var since: Date?
        switch input["since"] {
        case nil, .null?: break
        case .string(let text)?:
            guard let time = SIPHistoryEntry.time(text) else {
                return completion.fail("since: '\(SIPEnvelopes.escaped(text))' is not an RFC 3339 time")
            }
            since = time
        case let value?:
            guard let milliseconds = value.doubleValue else { return completion.fail("since must be a time or milliseconds since 1970") }
            since = Date(timeIntervalSince1970: milliseconds / 1000)
        }
        let before = input["before"]?.intValue
        if let before, before < 1 { return completion.fail("before must be an entry id") }
        let limit = input["limit"]?.intValue ?? 100
        guard (1...SIPHistory.maximumQueryLimit).contains(limit) else {
            return completion.fail("limit must be 1-\(SIPHistory.maximumQueryLimit)")
        }
        let from = since
        DispatchQueue.global().async {
            completion.succeed(history.query(peer: peer, since: from, before: before.map(UInt64.init), limit: limit))
        }
    }
}
