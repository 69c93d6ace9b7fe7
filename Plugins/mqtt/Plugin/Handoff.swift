import Synchronization

/// Items handed from any thread to an event loop in batches: only the first item of a batch
/// asks the caller to wake the loop, so a stream costs one wake-up per batch, not per item.
final class Handoff<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])

    /// Adds an item; true when it starts a new batch (schedule ``takeAll(into:)`` on the loop).
    func add(_ item: Element) -> Bool {
        items.withLock { items in
            items.append(item)
            return items.count == 1
        }
    }

    /// Adds an item behind others still waiting; false, with nothing added, when none waits.
    /// Everything added before it has then been taken, though not necessarily handled yet: a
    /// caller on the loop handles the item at once only when no taken batch is still being
    /// worked through (MQTTPublisher checks its batch).
    func addBehindWaiting(_ item: Element) -> Bool {
        items.withLock { items in
            guard !items.isEmpty else { return false }
            items.append(item)
            return true
        }
    }

    /// Everything added since the last call, in order, swapped into `taken` (which must be
    /// empty): the caller empties it with `removeAll(keepingCapacity: true)` once done, so the
    /// two arrays trade places and a steady stream allocates no array per batch.
    func takeAll(into taken: inout [Element]) {
        items.withLock { items in swap(&items, &taken) }
    }
}
