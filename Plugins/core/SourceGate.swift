import Foundation
import SwitchyardCore
import SwitchyardPluginKit

/// The stop and resume handshake of a core source that runs on its own thread: it sleeps until
/// a deadline, waits for room when a blocking route is full (instead of dropping or spinning),
/// and every wait ends at once when the instance stops.
final class SourceGate: @unchecked Sendable {
    // `stopped` and `resumed` are guarded by `condition`.
    private let condition = NSCondition()
    private var stopped = false
    private var resumed = false
    private let context: PluginContext
    private let port: String

    init(context: PluginContext, port: String) {
        self.context = context
        self.port = port
    }

    /// Runs `body` under the gate's lock (for state that must not race a stop).
    func withLock<Result>(_ body: (_ stopped: Bool) -> Result) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return body(stopped)
    }

    var isStopped: Bool { withLock { $0 } }

    /// Ends every wait; `then` runs under the lock once stopped is set.
    func stop(then: () -> Void = {}) {
        condition.lock()
        stopped = true
        then()
        condition.broadcast()
        condition.unlock()
    }

    /// The port will emit nothing more (ABI section 11): `run --exit-when-done` counts on it.
    func finished() { context.sourceDone(port) }

    /// The router has room on the port again.
    func resume() {
        condition.lock()
        resumed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Sleeps until `deadline`; false when stopped.
    func sleep(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !stopped, Date() < deadline { _ = condition.wait(until: deadline) }
        return !stopped
    }

    /// Emits on the port, waiting for `resume` while the route is full; false once stopped.
    func emit(_ envelope: Envelope) -> Bool {
        while true {
            condition.lock()
            resumed = false
            condition.unlock()
            switch context.emit(envelope, on: port) {
            case .ok: return true
            case .full:
                condition.lock()
                while !stopped, !resumed { condition.wait() }
                let isStopped = stopped
                condition.unlock()
                if isStopped { return false }
            case .stopped: return false
            case let other:
                context.log(.error, "\(port) envelope was not taken: \(other)")
                return true
            }
        }
    }
}
