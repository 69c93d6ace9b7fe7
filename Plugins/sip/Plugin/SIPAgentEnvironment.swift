import NIOCore
import SIPCodec
import SwitchyardCore
import SwitchyardPluginHTTP
import SwitchyardPluginKit
import Synchronization

/// What every part of a ``SIPAgent`` reads: the plugin context, the event loop, the sockets,
/// the configuration (replaced by a reconfigure), whether the instance stopped, the message
/// history and the deliveries not yet acknowledged.
///
/// Separate from the agent so its collaborators (``SIPRegistrationClient``, ``SIPMessageSender``,
/// ``SIPMessageInbox``, the transaction layers) share this and nothing of each other's state.
/// The fields confined to `eventLoop` have a `NIOLoopBoundBox` each, checked at each access:
/// one box for all would make any two overlapping accesses conflict.
final class SIPAgentEnvironment: Sendable {
    private let _configuration: NIOLoopBoundBox<SIPConfiguration>
    private let _stopped: NIOLoopBoundBox<Bool>
    let context: PluginContext
    let eventLoop: any EventLoop
    let transport: SIPTransport
    /// Deliveries taken from the router and not yet acknowledged (read from any thread).
    let outstanding = Atomic<Int>(0)
    /// The message history, set once by `start()` and read from any thread.
    let historyBox = Mutex<SIPHistory?>(nil)

    init(configuration: SIPConfiguration, context: PluginContext, eventLoop: any EventLoop) {
        self.context = context
        self.eventLoop = eventLoop
        _configuration = .makeBoxSendingValue(configuration, as: SIPConfiguration.self, eventLoop: eventLoop)
        _stopped = .makeBoxSendingValue(false, as: Bool.self, eventLoop: eventLoop)
        transport = SIPTransport(configuration: configuration, eventLoop: eventLoop, reporter: PluginGuardReporter(context: context))
    }

    /// Replaced by a reconfigure (``SIPAgent/adopt(_:registrationChanged:)``), on `eventLoop` like the rest.
    var configuration: SIPConfiguration {
        get { _configuration.value }
        _modify { yield &_configuration.value }
    }

    /// Set once by ``SIPAgent/stop()``: nothing new is started after it.
    var stopped: Bool {
        get { _stopped.value }
        _modify { yield &_stopped.value }
    }

    /// The message history, when the instance keeps one.
    var history: SIPHistory? { historyBox.withLock { $0 } }

    /// Acknowledges a delivery taken from the router, counting it off ``outstanding``.
    /// The router hears of the room if it was refused some.
    func finish(_ delivery: Delivery, _ outcome: DeliveryOutcome, reason: String = "") {
        outstanding.subtract(1, ordering: .releasing)
        delivery.ack(outcome, reason: reason)
        context.sinkHasRoom()
    }

    /// The host written into Via and Contact.
    var viaHost: String {
        let host = configuration.advertisedHost
        return host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    /// The local port requests on `transport` say they come from.
    func localPort(for transport: SIPTransportKind) -> Int {
        transport == .tls ? (self.transport.tlsPort ?? self.transport.port) : self.transport.port
    }

    /// Where a request to `uri` goes: the outbound proxy, or the URI's own host.
    func target(for uri: String) throws(PluginError) -> SIPTarget {
        if let proxy = configuration.outboundProxy { return proxy }
        return try SIPTarget(uri: uri, fallback: configuration.transport)
    }

    /// Headers every request this agent starts carries.
    func newRequest(method: String, uri: String, to: String, callID: String, cseq: UInt32, fromTag: String) -> SIPMessage {
        var request = SIPMessage(startLine: .request(method: method, uri: uri))
        request.headers.append("Max-Forwards", "70")
        let identity = configuration.identity
        let from = SIPAddress(displayName: identity.displayName, uri: identity.impu)
        request.headers.append("From", from.text + ";tag=" + fromTag)
        request.headers.append("To", "<\(to)>")
        request.headers.append("Call-ID", callID)
        request.headers.append("CSeq", "\(cseq) \(method)")
        request.headers.append("User-Agent", "Switchyard")
        return request
    }

    /// Letters and digits for branches, tags and Call-IDs.
    static func randomToken(_ length: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<length).map { _ in alphabet.randomElement() ?? "x" })
    }

    /// The reason phrase of a response.
    static func reason(_ response: SIPMessage) -> String {
        if case .response(_, let reason) = response.startLine { return reason }
        return ""
    }
}
