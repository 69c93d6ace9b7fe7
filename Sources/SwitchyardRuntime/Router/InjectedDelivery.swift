import SwitchyardABI
import SwitchyardBridge
import Synchronization

/// The acknowledgement of one injected delivery, handed from the plugin's thread to the waiting
/// task. `state` holds the outcome once known and the continuation while someone waits.
final class InjectedDelivery: DeliveryCompletion {
    private let state = Mutex<
        (outcome: SinkInjector.InjectionOutcome?, waiting: CheckedContinuation<SinkInjector.InjectionOutcome, Never>?)
    >(
        (nil, nil))

    func expect(_ count: Int) {}

    func complete(_ outcome: Int32, reason: sy_bytes) {
        let result: SinkInjector.InjectionOutcome =
            switch outcome {
            case SY_OUTCOME_OK: .ok
            case SY_OUTCOME_RETRY: .retry(reason.string)
            default: .reject(reason.string)
            }
        resolve(result)
    }

    /// Resolves once; later outcomes (an acknowledgement after the timeout) are dropped.
    private func resolve(_ result: SinkInjector.InjectionOutcome) {
        let waiting = state.withLock { state -> CheckedContinuation<SinkInjector.InjectionOutcome, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = result
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume(returning: result)
    }

    /// The outcome, or `timedOut` after `timeout`.
    func outcome(within timeout: Duration) async -> SinkInjector.InjectionOutcome {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.resolve(.timedOut)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let known = state.withLock { state -> SinkInjector.InjectionOutcome? in
                if let outcome = state.outcome { return outcome }
                state.waiting = continuation
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }
}
