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
/// loop. Every field below `queue` is only touched on it.
final class SIPHistory: @unchecked Sendable {
    /// What the index keeps of an entry: enough to prune and filter without reading the store.
    private struct Indexed {
        var id: UInt64
        var time: Date
        var peer: String
    }

    private let queue = DispatchQueue(label: "switchyard.sip.history")
    private let context: PluginContext
    /// The records handed to `queue` and not yet written (any thread): past
    /// ``maximumBacklog`` a flood of MESSAGEs is not recorded rather than queued without bound.
    private let backlog = Atomic<Int>(0)
    /// The most records waiting for the store.
    static let maximumBacklog = 1_000
    /// The identity and settings as the last reconfigure left them (read by any thread to cut
    /// bodies before they are queued; the queue's copies below are what it writes with).
    private let adopted: Mutex<(identity: String, settings: SIPHistorySettings)>
    private var identity: String
    private var settings: SIPHistorySettings
    /// Every stored entry, oldest first.
    private var index: Deque<Indexed> = []
    private var nextID: UInt64 = 1
    /// The entry of each envelope `send` is still working on, so its outcome updates it.
    private var pending: [String: UInt64] = [:]
    private var pendingOrder: Deque<String> = []
    /// How many envelopes' entries are remembered for their outcome.
    static let maximumPending = 10_000
    /// The most entries a query answers.
    static let maximumQueryLimit = 1_000
    /// The most bytes of entries one query answers (the admin client reads at most 4 MiB).
    static let maximumQueryBytes = 1 << 20

    /// Reads the index from the store; throws when the router has no store to keep it in.
    init(context: PluginContext, identity: String, settings: SIPHistorySettings) throws(PluginError) {
        self.context = context
        self.identity = identity
        self.settings = settings
        adopted = Mutex((identity, settings))
        var unreadable: [String] = []
        var loaded: [Indexed] = []
        do {
            // One entry in memory at a time: the index keeps its id, time and peer only.
            try context.state.forEach(withPrefix: SIPHistoryEntry.keyPrefix) { key, value in
                // Never trusted: an entry that does not read, or whose key is not its id, goes.
                guard let id = SIPHistoryEntry.id(ofKey: key), let entry = SIPHistoryEntry(stored: value), entry.id == id else {
                    unreadable.append(key)
                    return true
                }
                loaded.append(Indexed(id: entry.id, time: entry.time, peer: entry.peer))
                return true
            }
        } catch {
            throw PluginError("history: the router's store cannot be read (\(error)); history needs it")
        }
        for key in unreadable {
            context.log(.warning, "history: dropped unreadable entry \(key)")
            try? context.state.removeValue(forKey: key)
        }
        index = Deque(loaded)
        nextID = (loaded.last?.id ?? 0) + 1
        queue.async { self.prune() }
    }

    /// Adopts changed settings or identity (a reload); a smaller `keep` or `max_age` prunes at once.
    func adopt(_ settings: SIPHistorySettings, identity: String) {
        adopted.withLock { $0 = (identity, settings) }
        queue.async {
            (self.settings, self.identity) = (settings, identity)
            self.prune()
        }
    }

    /// Waits until every record handed over so far is written (the instance stops).
    func flush() { queue.sync {} }

    /// Hands `record` to the queue, unless too many wait already (counted, logged once per burst).
    private func enqueue(_ record: @escaping @Sendable () -> Void) {
        guard backlog.wrappingAdd(1, ordering: .relaxed).newValue <= Self.maximumBacklog else {
            if backlog.wrappingSubtract(1, ordering: .relaxed).newValue == Self.maximumBacklog {
                context.log(
                    .warning, "history: more than \(Self.maximumBacklog) records wait for the store; not recording until they are written")
            }
            context.metric(.counter, "history_dropped_total", 1)
            return
        }
        queue.async {
            record()
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
        enqueue {
            var entry = SIPHistoryEntry(
                id: self.takeID(), time: time, direction: .incoming, peer: peer, contentType: contentType, body: body,
                maximumBody: self.settings.maximumBody, callID: callID, status: status, reason: SIPAgent.reasonPhrase(status))
            entry.bodyBytes = max(entry.bodyBytes, length)
            self.add(entry)
        }
    }

    /// Records a MESSAGE `send` is sending for envelope `envelopeID` (`pending`), or counts
    /// another attempt of one recorded before (the route retrying it).
    func recordSending(_ outgoing: SIPEnvelopes.Outgoing, callID: String, attempts: Int) {
        let time = Date()
        let (body, length) = kept(outgoing.body)
        let (to, contentType, envelopeID) = (outgoing.to, outgoing.contentType, outgoing.envelopeID)
        enqueue {
            if let id = self.pending[envelopeID], var entry = self.entry(id) {
                (entry.attempts, entry.callID, entry.outcome, entry.status, entry.reason) = (attempts, callID, "pending", 0, "")
                return self.update(entry)
            }
            var entry = SIPHistoryEntry(
                id: self.takeID(), time: time, direction: .outgoing, peer: to, contentType: contentType, body: body,
                maximumBody: self.settings.maximumBody, callID: callID, status: 0, reason: "", outcome: "pending", attempts: attempts,
                envelopeID: envelopeID)
            entry.bodyBytes = max(entry.bodyBytes, length)
            self.pending[envelopeID] = entry.id
            self.pendingOrder.append(envelopeID)
            while self.pendingOrder.count > Self.maximumPending, let oldest = self.pendingOrder.popFirst() {
                self.pending[oldest] = nil
            }
            self.add(entry)
        }
    }

    /// Records how the MESSAGE sent for `envelopeID` ended.
    func recordOutcome(envelopeID: String, status: Int, reason: String, outcome: String) {
        enqueue {
            guard let id = self.pending[envelopeID], var entry = self.entry(id) else { return }
            if outcome != "retry" { self.pending[envelopeID] = nil }
            (entry.status, entry.reason, entry.outcome) = (status, reason, outcome)
            self.update(entry)
        }
    }

    /// The newest entries first — older than entry `before` when given, only with `peer` and
    /// only from `since` on — at most `limit` and about ``maximumQueryBytes``:
    /// `{identity, total, entries, more}`; with `more`, ask again with `before` the last id.
    func query(peer: String?, since: Date?, before: UInt64?, limit: Int) -> JSONValue {
        queue.sync {
            prune()
            var entries: [JSONValue] = []
            var bytes = 0
            var more = false
            for indexed in index.reversed() {
                if let before, indexed.id >= before { continue }
                if let since, indexed.time < since { break }
                if let peer, !Self.samePeer(indexed.peer, peer) { continue }
                guard entries.count < limit, bytes < Self.maximumQueryBytes else {
                    more = true
                    break
                }
                guard let entry = entry(indexed.id) else { continue }
                let json = entry.json
                bytes += json.serializedBytes().count
                entries.append(json)
            }
            return [
                "identity": .string(identity), "total": .int(index.count), "entries": .array(entries), "more": .bool(more),
            ]
        }
    }

    /// Removes every entry (event `reset`), or those with `peer` (event `removed`); returns
    /// how many went.
    func clear(peer: String?) -> Int {
        queue.sync {
            let going = index.filter { indexed in peer.map { Self.samePeer(indexed.peer, $0) } ?? true }
            remove(going.map(\.id), reset: peer == nil)
            return going.count
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

    // MARK: On the queue

    private func takeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    private func entry(_ id: UInt64) -> SIPHistoryEntry? {
        (try? context.state.value(forKey: SIPHistoryEntry.key(id))).flatMap { $0.flatMap(SIPHistoryEntry.init(stored:)) }
    }

    private func add(_ entry: SIPHistoryEntry) {
        guard store(entry) else { return }
        index.append(Indexed(id: entry.id, time: entry.time, peer: entry.peer))
        emit("added", entry: entry)
        prune()
    }

    private func update(_ entry: SIPHistoryEntry) {
        // An entry pruned meanwhile stays gone.
        guard index.contains(where: { $0.id == entry.id }), store(entry) else { return }
        emit("updated", entry: entry)
    }

    private func store(_ entry: SIPHistoryEntry) -> Bool {
        do {
            try context.state.setValue(entry.json.serializedBytes(), forKey: SIPHistoryEntry.key(entry.id))
            return true
        } catch {
            // Counted and logged: history is a record, a MESSAGE never waits on (or fails for) it.
            context.metric(.counter, "history_failures_total", 1)
            context.log(.warning, "history: could not store entry \(entry.id): \(error)")
            return false
        }
    }

    /// Drops the entries past `keep` and older than `max_age` (event `removed`).
    private func prune() {
        let oldest = Date().addingTimeInterval(-Double(settings.maximumAge.components.seconds))
        var going: [UInt64] = []
        var kept = index.count
        for indexed in index {
            guard kept > settings.keep || indexed.time < oldest else { break }
            going.append(indexed.id)
            kept -= 1
        }
        if !going.isEmpty { remove(going, reset: false) }
    }

    private func remove(_ ids: [UInt64], reset: Bool) {
        guard !ids.isEmpty || reset else { return }
        var removed: [UInt64] = []
        for id in ids {
            do {
                try context.state.removeValue(forKey: SIPHistoryEntry.key(id))
                removed.append(id)
            } catch {
                context.metric(.counter, "history_failures_total", 1)
                context.log(.warning, "history: could not remove entry \(id): \(error)")
            }
        }
        let gone = Set(removed)
        index.removeAll { gone.contains($0.id) }
        context.metric(.counter, "history_removed_total", Double(removed.count))
        if reset {
            emit("reset", entry: nil)
        } else if !removed.isEmpty {
            emit("removed", entry: nil, ids: removed)
        }
    }

    private func emit(_ event: String, entry: SIPHistoryEntry?, ids: [UInt64] = []) {
        var body: [String: JSONValue] = ["event": .string(event), "identity": .string(identity)]
        if let entry { body["entry"] = entry.json }
        if !ids.isEmpty { body["ids"] = .array(ids.map { .int(Int(clamping: $0)) }) }
        let envelope = Envelope(
            type: SIPEnvelopes.historyEventType, subject: entry?.peer ?? identity, contentType: "application/json",
            body: JSONValue.object(body).serializedBytes())
        // Nobody may route the port; an event nobody takes is not an error.
        context.emit(envelope, on: SIPPlugin.historyPort)
    }
}
