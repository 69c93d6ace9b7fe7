internal import SwitchyardABI
import Synchronization

// Delivery ids and acknowledgements: an id carries what its acknowledgement needs to find
// (its route, its latency sample, whether someone waits for it), so the hot path needs no lookup.
extension Router {
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

    func nextDeliveryID(tracking settlement: (any DeliveryCompletion)?, route: Int? = nil, probing: Bool = false) -> UInt64 {
        var id = deliveryCounter.add(1, ordering: .relaxed).newValue & ((1 << Self.routeIndexShift) - 1)
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

    func nextSpooledDeliveryID(route index: Int) -> UInt64 {
        let counter = deliveryCounter.add(1, ordering: .relaxed).newValue & ((1 << Self.routeIndexShift) - 1)
        return Self.spooledBit | (UInt64(index) << Self.routeIndexShift) | counter
    }

    /// Drops the waiter of a tracked delivery that will not be acknowledged (refused, or given
    /// up on).
    func forgetTracked(_ id: UInt64) {
        _ = tracked.withLock { $0.removeValue(forKey: id) }
    }

    /// A delivery ended: acknowledged by its sink, or refused by it (`acknowledgedBySink`
    /// false: counted as refused, not as failed).
    func deliveryFinished(_ id: UInt64, outcome: Int32, reason: sy_bytes, acknowledgedBySink: Bool = true) {
        if id & Self.routedBit != 0, id & Self.spooledBit == 0, let route = routeTable[Self.routeIndex(of: id)] {
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
            routeTable[Self.routeIndex(of: id)]?.queue.post(
                RouteAck(deliveryID: id, outcome: outcome, reason: outcome == SY_OUTCOME_OK ? "" : reason.string))
        }
    }
}
