internal import SwitchyardCore
internal import SwitchyardRouting
import Synchronization

/// A source port at run time: the routes fed from it, and the index of their conditions.
final class SourcePort: Sendable {
    let name: String
    let nameBytes: [UInt8]
    let qualifiedName: String
    /// Taps of what the port emits (`switchyard tap INSTANCE.PORT`).
    let tap: TapPoint
    /// Envelopes emitted on the port that routes took.
    let emitted = Atomic<Int>(0)
    /// Envelopes dispatched through the index (``Wiring/index``): a route the index left out of
    /// one counts it as received and filtered (``RouteRuntime/skippedByIndex``).
    let indexedDispatches = Atomic<Int>(0)
    /// Whether an at-least-once route settles what the port emits only once its first
    /// deliveries have ended (the description's `redelivers`).
    let settlesAfterDelivery: Bool
    private let wired = Mutex(Wiring(routes: []))

    /// The routes reading from the port and, when enough of their conditions can be looked up,
    /// the index that picks the ones an envelope may pass.
    struct Wiring {
        let routes: [RouteRuntime]
        let index: ConditionIndex?

        /// An index pays from this many routes with an indexable condition; under it every
        /// route evaluates its own.
        static let indexFrom = 8

        init(routes: [RouteRuntime]) {
            self.routes = routes
            let index = routes.count >= Self.indexFrom ? ConditionIndex(conditions: routes.map(\.plan.condition)) : nil
            self.index = (index?.indexedCount ?? 0) >= Self.indexFrom ? index : nil
        }

        /// The routes `envelope` may pass: all of them without an index.
        func candidates(for envelope: Envelope) -> [RouteRuntime] {
            guard let index else { return routes }
            var scope = EnvelopeScope(envelope)
            return index.candidates(for: &scope).map { routes[$0] }
        }
    }

    /// The routes reading from the port; a reload replaces them in one step.
    var routes: [RouteRuntime] {
        get { wired.withLock { $0.routes } }
        set {
            let wiring = Wiring(routes: newValue)
            for route in newValue { route.watchIndex(of: self) }
            wired.withLock { $0 = wiring }
        }
    }

    /// The routes and their index, as one.
    var wiring: Wiring { wired.withLock { $0 } }

    init(name: String, instance: String, tap: TapPoint, settlesAfterDelivery: Bool = false) {
        self.name = name
        self.settlesAfterDelivery = settlesAfterDelivery
        nameBytes = Array(name.utf8)
        qualifiedName = instance + "." + name
        self.tap = tap
    }
}
