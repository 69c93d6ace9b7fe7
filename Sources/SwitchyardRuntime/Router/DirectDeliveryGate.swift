internal import SwitchyardCore

/// Lets deliveries that bypass the routes into an instance until it stops, and makes the stop
/// wait for the ones in progress: the plugin never sees `deliver` after `stop`.
final class DirectDeliveryGate: Sendable {
    private let state = Locked((closed: false, running: 0))

    /// Runs `body` unless the gate is closed (then nil).
    func pass<Result>(_ body: () -> Result) -> Result? {
        let entered = state.withLock { state in
            guard !state.closed else { return false }
            state.running += 1
            return true
        }
        guard entered else { return nil }
        defer {
            state.withLock { state in
                state.running -= 1
                if state.running == 0 { self.state.broadcast() }
            }
        }
        return body()
    }

    /// Lets nothing more in and waits for what is inside.
    func close() {
        state.withLock { $0.closed = true }
        state.withLock(waitingUntil: { $0.running == 0 }) { _, _ in }
    }
}
