import NIOCore
import SwitchyardPluginKit

extension SIPAgent {
    /// Carries out a `sip.Control` action (on the event loop). `register` and `refresh` are
    /// acknowledged when the registrar answers (`ok` once registered, `reject` with its reason);
    /// `unregister` once the binding is removed.
    func control(_ action: SIPControlAction, delivery: Delivery) {
        guard !environment.stopped else { return environment.finish(delivery, .retry, reason: "sip instance stopped") }
        guard configuration.registration != nil else {
            return environment.finish(delivery, .reject, reason: "this instance does not register (no register: section)")
        }
        context.metric(.counter, "control_\(action.rawValue)_total", 1)
        switch action {
        case .clearHistory:
            // Delivered to ``clearHistory(peer:delivery:)`` before it gets here.
            environment.finish(delivery, .reject, reason: "clear_history is not a registration action")
        case .register, .refresh:
            registration.registerOnRequest(delivery, refreshOnly: action == .refresh)
        case .unregister:
            registration.unregisterOnRequest(delivery)
        }
    }

    /// Why an iiidea action on `send` cannot work now, or nil: an instance that registers only
    /// on request (`register.on_start: false`) and has not been asked yet would send MESSAGEs
    /// the registrar has no binding to answer for. Waits for the event loop (any other thread).
    func sendPieceRefusal() -> String? {
        let refusal = eventLoop.submit { self.registration.sendRefusal }
        return (try? refusal.wait()) ?? nil
    }
}
