import NIOCore
import SwitchyardPluginKit

/// What a link's parts share: the connection's settings and state that the link (connecting,
/// reconnecting, pinging), its inbound side (``MQTTInbound``) and its publisher
/// (``MQTTPublisher``) all read. The link owns it and its parts; the parts refer to it, not to
/// the link, so every one of them is made whole in its initializer.
///
/// The connection's state is confined to the event loop: a `NIOLoopBoundBox` per field,
/// checked at each access.
final class MQTTConnectionState: Sendable {
    let configuration: MQTTLinkConfiguration
    let context: PluginContext
    let instance: String
    let eventLoop: any EventLoop
    /// Encodes and writes packets to the connection.
    let output: MQTTOutput
    /// Set on a link that drains a lapsed member's session; nil on the instance's own link.
    let adoption: MQTTSessionAdoption?
    /// The first settle token of this link's inbound publishes: each link of an instance
    /// numbers its own (the top 16 bits tell them apart).
    let settleTokenBase: UInt64

    private let _channel: NIOLoopBoundBox<(any Channel)?>
    private let _connected: NIOLoopBoundBox<Bool>
    private let _stopped: NIOLoopBoundBox<Bool>
    private let _reading: NIOLoopBoundBox<Bool>
    private let _connectionNumber: NIOLoopBoundBox<UInt64>
    private let _sessionResumed: NIOLoopBoundBox<Bool>

    /// The connection, while there is one.
    var channel: (any Channel)? {
        get { _channel.value }
        set { _channel.value = newValue }
    }
    /// Whether the broker accepted the connection (CONNACK).
    var connected: Bool {
        get { _connected.value }
        set { _connected.value = newValue }
    }
    /// Set by the link's stop: nothing more is published or connected.
    var stopped: Bool {
        get { _stopped.value }
        set { _stopped.value = newValue }
    }
    /// Whether inbound publishes are still taken (false from quiesce on).
    var reading: Bool {
        get { _reading.value }
        set { _reading.value = newValue }
    }
    /// Counts accepted connections (CONNACK), so a packet id is confirmed only on its own.
    var connectionNumber: UInt64 {
        get { _connectionNumber.value }
        set { _connectionNumber.value = newValue }
    }
    /// Whether the broker kept the session (CONNACK session present).
    var sessionResumed: Bool {
        get { _sessionResumed.value }
        set { _sessionResumed.value = newValue }
    }

    init(
        configuration: MQTTLinkConfiguration, context: PluginContext, instance: String, eventLoop: any EventLoop,
        adoption: MQTTSessionAdoption?, settleTokenBase: UInt64
    ) {
        self.configuration = configuration
        self.context = context
        self.instance = instance
        self.eventLoop = eventLoop
        self.adoption = adoption
        self.settleTokenBase = settleTokenBase
        output = MQTTOutput(version: configuration.version, context: context, eventLoop: eventLoop)
        _channel = .makeBoxSendingValue(nil, as: (any Channel)?.self, eventLoop: eventLoop)
        _connected = .makeBoxSendingValue(false, as: Bool.self, eventLoop: eventLoop)
        _stopped = .makeBoxSendingValue(false, as: Bool.self, eventLoop: eventLoop)
        _reading = .makeBoxSendingValue(true, as: Bool.self, eventLoop: eventLoop)
        _connectionNumber = .makeBoxSendingValue(0, as: UInt64.self, eventLoop: eventLoop)
        _sessionResumed = .makeBoxSendingValue(false, as: Bool.self, eventLoop: eventLoop)
    }
}
