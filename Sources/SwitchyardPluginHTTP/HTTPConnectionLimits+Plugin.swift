public import SwitchyardConnectionGuard
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

/// A plugin instance's log and metrics, for the connection slots of its listeners (an HTTP
/// server's guard, the sip plugin's TCP and TLS listeners).
public struct PluginGuardReporter: ConnectionGuardReporter {
    let context: PluginContext

    /// Reports as the instance behind `context`.
    public init(context: PluginContext) { self.context = context }

    public func warning(_ line: String) { context.log(.warning, line) }
    public func count(_ name: String) { context.metric(.counter, name, 1) }
    public func gauge(_ name: String, _ value: Double) { context.metric(.gauge, name, value) }
}
