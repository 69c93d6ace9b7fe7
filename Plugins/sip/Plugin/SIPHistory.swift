import DequeModule
import Dispatch
import Foundation
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// `history:`'s settings: how many entries and how old, and how much of each body.
struct SIPHistorySettings: Sendable, Equatable {
    /// Entries kept; past it the oldest go.
    var keep: Int
    /// Entries older than this go.
    var maximumAge: Duration
    /// Bytes of each body kept.
    var maximumBody: Int
}

/// An identity's message history (iDoubs' history service) kept in the router's store (the
/// host's state service, keys `history/<id>`), with the events iDoubs' service raises —
/// `added`, `updated`, `removed`, `reset` — emitted on the `history` port.
///
/// Store calls write to disk, so they run on a queue of their own, never on the SIP event
/// loop. The ``SIPHistoryBook`` they work on is reached only there, through a lock that is
/// never contended but lets the compiler check that nothing else touches it.
final class SIPHistory: Sendable {
    private let queue = DispatchQueue(label: "switchyard.sip.history")
    private let context: PluginContext
    /// The records handed to `queue` and not yet written (any thread): past
    /// ``maximumBacklog`` a flood of MESSAGEs is not recorded rather than queued without bound.
    private let backlog = Atomic<Int>(0)
    /// The most records waiting for the store.
    static let maximumBacklog = 1_000
    /// The most entries a query answers.
    static let maximumQueryLimit = 1_000
    /// The most bytes of entries one query answers (the admin client reads at most 4 MiB).
    static let maximumQueryBytes = 1 << 20
    /// The identity and settings as the last reconfigure left them (read by any thread to cut
    /// bodies before they are queued; the book's copies are what it writes with).
    private let adopted: Mutex<(identity: String, settings: SIPHistorySettings)>
    /// The index and what `send` still works on; used on `queue` only.
    private let book: Locked<SIPHistoryBook>

    /// Reads the index from the store; throws when the router has no store to keep it in.
    init(context: PluginContext, identity: String, settings: SIPHistorySettings) throws(PluginError) {
        self.context = context
        adopted = Mutex((identity, settings))
        book = Locked(try SIPHistoryBook(context: context, identity: identity, settings: settings))
        queue.async { self.book.withLock { $0.prune() } }
    }

    /// Adopts changed settings or identity (a reload); a smaller `keep` or `max_age` prunes at once.
    func adopt(_ settings: SIPHistorySettings, identity: String) {
        adopted.withLock { $0 = (identity, settings) }
        queue.async {
            self.book.withLock { book in
                (book.settings, book.identity) = (settings, identity)
                book.prune()
            }
        }
    }

    /// Waits until every record handed over so far is written (the instance stops).
    func flush() { queue.sync {} }

    /// Hands `record` to the queue, unless too many wait already (counted, logged once per burst).
    private func enqueue(_ record: @escaping @Sendable (inout SIPHistoryBook) -> Void) {
        guard backlog.wrappingAdd(1, ordering: .relaxed).newValue <= Self.maximumBacklog else {
            if backlog.wrappingSubtract(1, ordering: .relaxed).newValue == Self.maximumBacklog {
                context.log(
                    .warning, "history: more than \(Self.maximumBacklog) records wait for the store; not recording until they are written")
            }
            context.metric(.counter, "history_dropped_total", 1)
            return
        }
        queue.async {
            self.book.withLock(record)
            self.backlog.wrappingSubtract(1, ordering: .relaxed)
        }
    }

    /// The body as it will be kept: cut before it is queued, so a backlog holds no more.
    private func kept(_ body: [UInt8]) -> (body: [UInt8], length: Int) {
        (SIPHistoryEntry.cut(body, to: adopted.withLock { $0.settings.maximumBody }), body.count)
    }

    /// Records an incoming MESSAGE answered `status`.
    func recordIncoming(peer: String, contentType: String, body: [UInt8], callID: String, status: Int) {
        let time = Date()
        let (body, length) = kept(body)
        enqueue { book in
            var entry = SIPHistoryEntry(
                id: book.takeID(), time: time, direction: .incoming, peer: peer, contentType: contentType, body: body,
                maximumBody: book.settings.maximumBody, callID: callID, status: status, reason: SIPServerTransactions.reasonPhrase(status))
            entry.bodyBytes = max(entry.bodyBytes, length)
            book.add(entry)
        }
    }

    /// Records a MESSAGE `send` is sending for envelope `envelopeID` (`pending`), or counts
    /// another attempt of one recorded before (the route retrying it).
    func recordSending(_ outgoing: SIPEnvelopes.Outgoing, callID: String, attempts: Int) {
        let time = Date()
        let (body, length) = kept(outgoing.body)
        let (to, contentType, envelopeID) = (outgoing.to, outgoing.contentType, outgoing.envelopeID)
        enqueue { book in
            if let id = book.pending[envelopeID], var entry = book.entry(id) {
                (entry.attempts, entry.callID, entry.outcome, entry.status, entry.reason) = (attempts, callID, "pending", 0, "")
                return book.update(entry)
            }
            var entry = SIPHistoryEntry(
                id: book.takeID(), time: time, direction: .outgoing, peer: to, contentType: contentType, body: body,
                maximumBody: book.settings.maximumBody, callID: callID, status: 0, reason: "", outcome: "pending", attempts: attempts,
                envelopeID: envelopeID)
            entry.bodyBytes = max(entry.bodyBytes, length)
            book.remember(pending: envelopeID, entry: entry.id)
            book.add(entry)
        }
    }

    /// Records how the MESSAGE sent for `envelopeID` ended.
    func recordOutcome(envelopeID: String, status: Int, reason: String, outcome: String) {
        enqueue { book in
            guard let id = book.pending[envelopeID], var entry = book.entry(id) else { return }
            if outcome != "retry" { book.pending[envelopeID] = nil }
            (entry.status, entry.reason, entry.outcome) = (status, reason, outcome)
            book.update(entry)
        }
    }

    /// The newest entries first — older than entry `before` when given, only with `peer` and
    /// only from `since` on — at most `limit` and about ``maximumQueryBytes``:
    /// `{identity, total, entries, more}`; with `more`, ask again with `before` the last id.
    func query(peer: String?, since: Date?, before: UInt64?, limit: Int) -> JSONValue {
        queue.sync {
            book.withLock { book in
                book.prune()
                var entries: [JSONValue] = []
                var bytes = 0
                var more = false
                for indexed in book.index.reversed() {
                    if let before, indexed.id >= before { continue }
                    if let since, indexed.time < since { break }
                    if let peer, !Self.samePeer(indexed.peer, peer) { continue }
                    guard entries.count < limit, bytes < Self.maximumQueryBytes else {
                        more = true
                        break
                    }
                    guard let entry = book.entry(indexed.id) else { continue }
                    let json = entry.json
                    bytes += json.serializedBytes().count
                    entries.append(json)
                }
                return [
                    "identity": .string(book.identity), "total": .int(book.index.count), "entries": .array(entries),
                    "more": .bool(more),
                ]
            }
        }
    }

    /// Removes every entry (event `reset`), or those with `peer` (event `removed`); returns
    /// how many went.
    func clear(peer: String?) -> Int {
        queue.sync {
            book.withLock { book in
                let going = book.index.filter { indexed in peer.map { Self.samePeer(indexed.peer, $0) } ?? true }
                book.remove(going.map(\.id), reset: peer == nil)
                return going.count
            }
        }
    }

    /// Whether two SIP URIs name the same far end: the user part as written (RFC 3261
    /// §19.1.4), the host (with its port) without case; the scheme (`sip:` or `sips:`), angle
    /// brackets and parameters ignored.
    static func samePeer(_ stored: String, _ asked: String) -> Bool {
        func plain(_ uri: String) -> (user: Substring, host: String) {
            var text = Substring(uri)
            if text.hasPrefix("<") { text = text.dropFirst().prefix { $0 != ">" } }
            text = text.prefix { $0 != ";" && $0 != "?" }
            if let colon = text.firstIndex(of: ":") { text = text[text.index(after: colon)...] }
            guard let at = text.lastIndex(of: "@") else { return ("", text.lowercased()) }
            return (text[..<at], text[text.index(after: at)...].lowercased())
        }
        let (left, right) = (plain(stored), plain(asked))
        return left.user == right.user && left.host == right.host
    }
}
