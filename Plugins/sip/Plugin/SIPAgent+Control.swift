import NIOCore
import SwitchyardPluginKit

/// What a `sip.Control` envelope asks of the registration.
enum SIPControlAction: String, Sendable, CaseIterable {
    /// Register (again) now and keep the binding refreshed.
    case register
    /// Remove the binding and stop refreshing it.
    case unregister
    /// Send a refreshing REGISTER now.
    case refresh
}

extension SIPAgent {
    /// Carries out a `sip.Control` action (on the event loop). `register` and `refresh` are
    /// acknowledged when the registrar answers (`ok` once registered, `reject` with its reason);
    /// `unregister` once the binding is removed.
    func control(_ action: SIPControlAction, delivery: Delivery) {
        guard !stopped else { return finish(delivery, .retry, reason: "sip instance stopped") }
        guard configuration.registration != nil else {
            return finish(delivery, .reject, reason: "this instance does not register (no register: section)")
        }
        context.metric(.counter, "control_\(action.rawValue)_total", 1)
        switch action {
        case .register, .refresh:
            if action == .refresh, !registration.wanted {
                return finish(delivery, .reject, reason: "not registered: send {action: register} first")
            }
            registration.wanted = true
            registration.waiting.append(delivery)
            if registration.inFlight { return }
            register()
        case .unregister:
            registration.wanted = false
            registration.timer?.cancel()
            registration.retryDelay = nil
            let waiting = registration.waiting
            registration.waiting = []
            for earlier in waiting { finish(earlier, .reject, reason: "unregistered before the registrar answered") }
            unregister().whenComplete { _ in
                self.setRegistration("unregistered", reason: "unregistered on request")
                self.finish(delivery, .ok)
            }
        }
    }
}
