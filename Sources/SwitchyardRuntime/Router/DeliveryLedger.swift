internal import SwitchyardABI
import Synchronization

/// Numbers deliveries and finds who waits for each acknowledgement. An id carries what its
/// acknowledgement needs to find (its route, its latency sample, whether someone waits for it),
/// so the hot path needs no lookup; only tracked deliveries (an injected envelope, an iiidea's
/// piece) take a lock. Separate from the router because every route worker and every
/// acknowledging plugin thread reaches it, and it needs nothing of the router but the route table.
final class DeliveryLedger: Sendable {
    /// Where an acknowledgement finds its route by the index in its id.
    private let routes: RouteTable
    /// Delivery ids are numbered from it.
    private let counter = Atomic<UInt64>(0)
    /// Who waits for a tracked delivery's acknowledgement, by its id.
    private let tracked = Mutex<[UInt64: any DeliveryCompletion]>([:])

    init(routes: RouteTable) { self.routes = routes }

    /// Delivery ids whose settlement someone waits for carry this bit, so acknowledging the
    /// rest needs no lock.
    static let trackedBit: UInt64 = 1 << 63

    /// Delivery ids that carry a route's latency sample (``LatencyProbe``) have this bit.
    static let probeBit: UInt64 = 1 << 61

    /// At-most-once delivery ids of a route carry this bit and the route's index, so the
    /// acknowledgement counts for its route (and finds its latency probe) without a lookup.
    static let routedBit: UInt64 = 1 << 60

    /// Route indexes below this fit in a delivery id (20 bits).
    static let routeIndexLimit = 1 << 20

    /// The route index bits of a routed or spooled delivery id.
    static func routeIndex(of id: UInt64) -> Int { Int((id >> routeIndexShift) & UInt64(routeIndexLimit - 1)) }

    /// The next id of an at-most-once delivery; with `settlement`, one whose acknowledgement
    /// `settlement` waits for.
    func nextID(tracking settlement: (any DeliveryCompletion)?, route: Int? = nil, probing: Bool = false) -> UInt64 {
        var id = counter.add(1, ordering: .relaxed).newValue & ((1 << Self.routeIndexShift) - 1)
        // Beyond 2^20 routes the index does not fit: such a route's acknowledgements go uncounted.
        if let route, route < Self.routeIndexLimit {
            id |= Self.routedBit | (UInt64(route) << Self.routeIndexShift) | (probing ? Self.probeBit : 0)
        }
        guard let settlement else { return id }
        settlement.expect(1)
        let trackedID = id | Self.trackedBit
        tracked.withLock { $0[trackedID] = settlement }
        return trackedID
    }

    /// At-least-once delivery ids carry this bit and their route's index, so the
    /// acknowledgement finds its route's worker without a lookup.
    static let spooledBit: UInt64 = 1 << 62
    static let routeIndexShift: UInt64 = 40

    /// The next id of an at-least-once delivery of route `index`.
    func nextSpooledID(route index: Int) -> UInt64 {
        let number = counter.add(1, ordering: .relaxed).newValue & ((1 << Self.routeIndexShift) - 1)
        return Self.spooledBit | (UInt64(index) << Self.routeIndexShift) | number
    }

    /// Drops the waiter of a tracked delivery that will not be acknowledged (refused, or given
    /// up on).
    func forgetTracked(_ id: UInt64) {
        _ = tracked.withLock { $0.removeValue(forKey: id) }
    }

    /// A delivery ended: acknowledged by its sink, or refused by it (`acknowledgedBySink`
    /// false: counted as refused, not as failed).
    func finished(_ id: UInt64, outcome: Int32, reason: sy_bytes, acknowledgedBySink: Bool = true) {
        if id & Self.routedBit != 0, id & Self.spooledBit == 0, let route = routes[Self.routeIndex(of: id)] {
            if id & Self.probeBit != 0 { route.latency?.acknowledged(id, ok: outcome == SY_OUTCOME_OK) }
            if acknowledgedBySink {
                if outcome == SY_OUTCOME_OK {
                    route.counters.delivered.add(1, ordering: .relaxed)
                } else {
                    route.counters.failed.add(1, ordering: .relaxed)
                }
            }
        }
        if id & Self.trackedBit != 0 {
            tracked.withLock { $0.removeValue(forKey: id) }?.complete(outcome, reason: reason)
        } else if id & Self.spooledBit != 0 {
            routes[Self.routeIndex(of: id)]?.queue.post(
                RouteAck(deliveryID: id, outcome: outcome, reason: outcome == SY_OUTCOME_OK ? "" : reason.string))
        }
    }
}
