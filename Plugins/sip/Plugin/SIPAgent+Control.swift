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
    /// Remove the message history, or only the entries with `peer`.
    case clearHistory = "clear_history"
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
        case .clearHistory:
            // Delivered to ``clearHistory(peer:delivery:)`` before it gets here.
            finish(delivery, .reject, reason: "clear_history is not a registration action")
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
            let wasRegistered = registration.state == "registered"
            unregister().whenComplete { _ in
                // The registrar removed the binding (or there was none): unregistered. Otherwise
                // it is still there until it expires: say so.
                if !wasRegistered || self.registration.state == "unregistered" {
                    self.setRegistration("unregistered", reason: "unregistered on request")
                    self.finish(delivery, .ok)
                } else {
                    self.finish(delivery, .reject, reason: "the registrar did not confirm the removal; the binding lasts until it expires")
                }
            }
        }
    }

    /// Why an iiidea action on `send` cannot work now, or nil: an instance that registers only
    /// on request (`register.on_start: false`) and has not been asked yet would send MESSAGEs
    /// the registrar has no binding to answer for. Waits for the event loop (any other thread).
    func sendPieceRefusal() -> String? {
        let refusal = eventLoop.submit { () -> String? in
            guard self.configuration.registration != nil, !self.registration.wanted, self.registration.state != "registered" else {
                return nil
            }
            return "not registered (register.on_start: false): deliver {action: register} to the control port first"
        }
        return (try? refusal.wait()) ?? nil
    }
}
