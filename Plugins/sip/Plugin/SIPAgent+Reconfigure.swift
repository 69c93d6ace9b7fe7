import NIOCore
import SwitchyardPluginKit

extension SIPAgent {
    /// Takes a changed configuration whose sockets are the same (the plugin checked the
    /// listen, transport, TLS and limits settings): identity, proxy, timers, receive and send
    /// settings apply to the next request or MESSAGE. When `registrationChanged` (the
    /// identity, registrar or proxy differ), the old binding is removed first (as on stop,
    /// bounded by 3 s) and the new identity registers from scratch. Call from any thread but
    /// the event loop; returns once adopted.
    func adopt(_ new: SIPConfiguration, registrationChanged: Bool) {
        let adopted = eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            guard registrationChanged else {
                self.take(new)
                return self.eventLoop.makeSucceededVoidFuture()
            }
            return self.registration.unregister().map {
                self.registration.forgetBinding()
                self.take(new)
                if new.registration != nil {
                    self.registration.register()
                } else {
                    self.context.metric(.gauge, "registered", 0)
                    self.context.metric(.gauge, "ready", 1)
                }
            }
        }
        _ = try? adopted.wait()
        context.log(.info, "configuration changed in place" + (registrationChanged ? "; registration renewed" : ""))
    }

    private func take(_ new: SIPConfiguration) {
        eventLoop.assertInEventLoop()
        environment.configuration = new
        transport.adopt(new)
        if let settings = new.history { history?.adopt(settings, identity: new.identity.impu) }
    }
}
