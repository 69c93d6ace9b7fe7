public import SwitchyardHTTPGuard
public import SwitchyardPluginKit

extension HTTPConnectionLimits {
    /// Limits for the server `name` of the plugin instance behind `context`, which logs and
    /// counts as that instance.
    public convenience init(
        name: String, maximumConnections: Int, maximumPerPeer: Int? = nil, headerTimeout: Duration, bodyTimeout: Duration,
        context: PluginContext
    ) {
        self.init(
            name: name, maximumConnections: maximumConnections, maximumPerPeer: maximumPerPeer, headerTimeout: headerTimeout,
            bodyTimeout: bodyTimeout, reporter: PluginGuardReporter(context: context))
    }
}

/// A plugin instance's log and metrics, for a connection guard.
struct PluginGuardReporter: ConnectionGuardReporter {
    let context: PluginContext

    func warning(_ line: String) { context.log(.warning, line) }
    func count(_ name: String) { context.metric(.counter, name, 1) }
    func gauge(_ name: String, _ value: Double) { context.metric(.gauge, name, value) }
}
