import DequeModule
import Foundation
import SwitchyardCore
import SwitchyardPluginKit

/// The history's index and its writes to the store, on the history's queue only (see
/// ``SIPHistory``): the id, time and peer of every stored entry, oldest first, and the entry of
/// each envelope `send` is still working on.
struct SIPHistoryBook {
    /// What the index keeps of an entry: enough to prune and filter without reading the store.
    struct Indexed {
        var id: UInt64
        var time: Date
        var peer: String
    }

    private let context: PluginContext
    var identity: String
    var settings: SIPHistorySettings
    /// Every stored entry, oldest first.
    private(set) var index: Deque<Indexed> = []
    private var nextID: UInt64 = 1
    /// The entry of each envelope `send` is still working on, so its outcome updates it.
    var pending: [String: UInt64] = [:]
    private var pendingOrder: Deque<String> = []
    /// How many envelopes' entries are remembered for their outcome.
    static let maximumPending = 10_000

    /// Reads the index from the store; throws when the router has no store to keep it in.
    init(context: PluginContext, identity: String, settings: SIPHistorySettings) throws(PluginError) {
        self.context = context
        self.identity = identity
        self.settings = settings
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
    }

    mutating func takeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    /// Remembers that envelope `envelopeID`'s MESSAGE is entry `id`, forgetting the oldest past
    /// ``maximumPending``.
    mutating func remember(pending envelopeID: String, entry id: UInt64) {
        pending[envelopeID] = id
        pendingOrder.append(envelopeID)
        while pendingOrder.count > Self.maximumPending, let oldest = pendingOrder.popFirst() {
            pending[oldest] = nil
        }
    }

    func entry(_ id: UInt64) -> SIPHistoryEntry? {
        (try? context.state.value(forKey: SIPHistoryEntry.key(id))).flatMap { $0.flatMap(SIPHistoryEntry.init(stored:)) }
    }

    mutating func add(_ entry: SIPHistoryEntry) {
        guard store(entry) else { return }
        index.append(Indexed(id: entry.id, time: entry.time, peer: entry.peer))
        emit("added", entry: entry)
        prune()
    }

    func update(_ entry: SIPHistoryEntry) {
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
    mutating func prune() {
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

    mutating func remove(_ ids: [UInt64], reset: Bool) {
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
