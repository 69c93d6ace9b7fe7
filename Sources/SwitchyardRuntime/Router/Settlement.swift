import SwitchyardABI
import Synchronization

/// Someone waiting for deliveries to be acknowledged: a ``Settlement`` (a source's envelope),
/// or an ``InjectedDelivery`` (the admin API's).
protocol DeliveryCompletion: Sendable {
    /// Counts one more delivery to wait for.
    func expect(_ count: Int)
    /// One delivery was acknowledged with `outcome` (an SY_OUTCOME_* value) and `reason`.
    func complete(_ outcome: Int32, reason: sy_bytes)
}

/// Tracks one emitted envelope that its source wants confirmed (a non-zero settle token):
/// settled once every route has dispatched it and every resulting delivery is acknowledged.
final class Settlement: DeliveryCompletion {
    let instance: InstanceRuntime
    let token: UInt64
    /// Whether an at-least-once route settles it once its first deliveries have ended rather
    /// than once it is spooled (the source port's `redelivers`, see SpooledDelivery).
    let afterDelivery: Bool
    private let pending = Atomic<Int>(1)
    private let worst = Atomic<Int32>(0)

    init(instance: InstanceRuntime, token: UInt64, afterDelivery: Bool = false) {
        self.instance = instance
        self.token = token
        self.afterDelivery = afterDelivery
    }

    /// Adds outstanding work (a queued copy or a delivery).
    func expect(_ count: Int = 1) {
        pending.add(count, ordering: .relaxed)
    }

    /// Marks one piece of work done with `outcome` (an SY_OUTCOME_* value).
    func complete(_ outcome: Int32, reason: sy_bytes = sy_bytes()) {
        if outcome != 0 { _ = worst.max(outcome, ordering: .relaxed) }
        if pending.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            instance.settled(token: token, outcome: worst.load(ordering: .relaxed))
        }
    }
}
