import Dispatch
import SwitchyardPluginKit
import Synchronization

/// The port a plugin's HTTP server bound, or why it could not, handed from the server task to
/// `start()`, which waits for it on the router's control thread.
final class BoundPort: Sendable {
    private let result = Mutex<Result<Int, PluginError>?>(nil)
    private let signal = DispatchSemaphore(value: 0)

    /// Records the first outcome; later ones (the server stopping) are ignored.
    func set(_ value: Result<Int, PluginError>) {
        let first = result.withLock { result in
            guard result == nil else { return false }
            result = value
            return true
        }
        if first { signal.signal() }
    }

    /// The outcome, waiting at most `timeout` for it.
    func wait(timeout: Duration, what: String) -> Result<Int, PluginError> {
        let (seconds, attoseconds) = timeout.components
        guard signal.wait(timeout: .now() + Double(seconds) + Double(attoseconds) * 1e-18) == .success else {
            return .failure(PluginError("the \(what) server did not start within \(timeout)"))
        }
        return result.withLock { $0 } ?? .failure(PluginError("the \(what) server did not start"))
    }
}
