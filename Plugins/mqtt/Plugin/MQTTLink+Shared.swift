import NIOCore
import SwitchyardPluginKit

/// What the link reads of the state it shares with its inbound side and publisher
/// (``MQTTConnectionState``), under the names its code and its callers use.
extension MQTTLink {
    var configuration: MQTTLinkConfiguration { shared.configuration }
    var context: PluginContext { shared.context }
    var instance: String { shared.instance }
    var eventLoop: any EventLoop { shared.eventLoop }
    var output: MQTTOutput { shared.output }
    var adoption: MQTTSessionAdoption? { shared.adoption }
    var settleTokenBase: UInt64 { shared.settleTokenBase }
    var channel: (any Channel)? {
        get { shared.channel }
        set { shared.channel = newValue }
    }
    var connected: Bool {
        get { shared.connected }
        set { shared.connected = newValue }
    }
    var stopped: Bool { shared.stopped }
    var reading: Bool {
        get { shared.reading }
        set { shared.reading = newValue }
    }
    var connectionNumber: UInt64 {
        get { shared.connectionNumber }
        set { shared.connectionNumber = newValue }
    }
    var sessionResumed: Bool {
        get { shared.sessionResumed }
        set { shared.sessionResumed = newValue }
    }
}
