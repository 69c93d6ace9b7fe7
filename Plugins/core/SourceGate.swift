import Foundation
import SwitchyardCore
import SwitchyardPluginKit

/// The stop and resume handshake of a core source that runs on its own thread: it sleeps until
/// a deadline, waits for room when a blocking route is full (instead of dropping or spinning),
/// and every wait ends at once when the instance stops.
///
/// `Owned` is state of the source's own that must change atomically with a stop (a subprocess's
/// child): ``withLock(_:)`` hands it out under the gate's lock.
final class SourceGate<Owned>: Sendable {
    private struct State {
        var stopped = false
        var owned: Owned
    }

    private let state: Locked<State>
    /// The waits for room on a full route.
    private let room = SourceRoom()
    private let context: PluginContext
    private let port: String

    init(context: PluginContext, port: String, owned: Owned) {
        self.context = context
        self.port = port
        state = Locked(State(owned: owned))
    }

    /// Runs `body` under the gate's lock (for state that must not race a stop).
    func withLock<Result>(_ body: (_ stopped: Bool, _ owned: inout Owned) -> Result) -> Result {
        state.withLock { body($0.stopped, &$0.owned) }
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Ends every wait; `then` runs under the lock once stopped is set.
    func stop(then: (_ owned: inout Owned) -> Void = { _ in }) {
        state.withLock { state in
            state.stopped = true
            then(&state.owned)
            self.state.broadcast()
        }
        room.stop()
    }

    /// The port will emit nothing more (ABI section 11): `run --exit-when-done` counts on it.
    func finished() { context.sourceDone(port) }

    /// The router has room on the port again.
    func resume() { room.resumed() }

    /// Sleeps until `deadline`; false when stopped.
    func sleep(until deadline: ContinuousClock.Instant) -> Bool {
        state.withLock(waitingUntil: { $0.stopped }, deadline: deadline) { _, stopped in !stopped }
    }

    /// Emits on the port, waiting for `resume` while the route is full; false once stopped.
    func emit(_ envelope: Envelope) -> Bool {
        switch room.emit(envelope, on: port, through: context) {
        case .ok: return true
        case .full, .stopped: return false
        case let other:
            context.log(.error, "\(port) envelope was not taken: \(other)")
            return true
        }
    }
}

extension SourceGate where Owned == Void {
    convenience init(context: PluginContext, port: String) {
        self.init(context: context, port: port, owned: ())
    }
}
