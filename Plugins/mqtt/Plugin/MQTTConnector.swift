import MQTTCodec
import NIOCore
import NIOPosix
import NIOSSL

/// Connects a link to its broker, and again after a failed attempt or a lost connection, with
/// exponential backoff and jitter: builds the channel (TLS, the packet decoder, the link's
/// handler), sends the CONNECT and gives the broker 10 s to answer it.
///
/// It owns what only connecting needs: the backoff delay, the scheduled reconnect, the reason
/// the last attempt failed and the identity the next CONNECT carries. The link, which dispatches
/// the broker's packets and keeps an accepted connection alive, tells it when a connection is
/// accepted or lost. The link is passed to each call rather than kept, so a link owning its
/// connector is no reference cycle (a pending reconnect keeps the link alive, as it did before).
///
/// Every field is confined to the event loop: a `NIOLoopBoundBox` each, checked at each access.
final class MQTTConnector: Sendable {
    /// Opens a connection for a link: a channel whose pipeline reads it for the link (the
    /// handlers of ``addHandlers(for:to:)``), connected. The seam where MQTTPluginTests play the
    /// broker on `EmbeddedChannel`s; without it (nil) the link dials its broker over TCP or TLS.
    typealias Dial = @Sendable (MQTTLink) -> EventLoopFuture<any Channel>

    private let shared: MQTTConnectionState
    /// How connections are opened: nil for the broker's socket (see ``Dial``).
    let dial: Dial?

    private let _reconnectDelay: NIOLoopBoundBox<UInt64>
    private let _reconnectTask: NIOLoopBoundBox<Scheduled<Void>?>
    private let _lastConnectFailure: NIOLoopBoundBox<String?>
    private let _connectAs: NIOLoopBoundBox<(clientID: String, cleanStart: Bool)>
    private let _clientIDAfterDisconnect: NIOLoopBoundBox<(@Sendable () -> String)?>

    private var reconnectDelay: UInt64 {
        get { _reconnectDelay.value }
        set { _reconnectDelay.value = newValue }
    }
    private var reconnectTask: Scheduled<Void>? {
        get { _reconnectTask.value }
        set { _reconnectTask.value = newValue }
    }
    /// Why the last attempt to connect failed, until one succeeds (logged once per reason).
    private var lastConnectFailure: String? {
        get { _lastConnectFailure.value }
        set { _lastConnectFailure.value = newValue }
    }
    /// The client id and clean start the next CONNECT carries: the configuration's, until a
    /// member whose session another router took over moves on to a fresh id (MQTTMembership).
    var connectAs: (clientID: String, cleanStart: Bool) {
        get { _connectAs.value }
        set { _connectAs.value = newValue }
    }
    /// With session takeover (MQTTMembership), the client id to reconnect under once an
    /// accepted connection is lost: a fresh one each time, so no id is used again after its
    /// session may have passed to another router. Set before start.
    var clientIDAfterDisconnect: (@Sendable () -> String)? {
        get { _clientIDAfterDisconnect.value }
        set { _clientIDAfterDisconnect.value = newValue }
    }

    private var configuration: MQTTLinkConfiguration { shared.configuration }

    /// A connector for the connection `shared` describes, opening it with `dial` (nil: a socket
    /// to the broker).
    init(shared: MQTTConnectionState, dial: Dial? = nil) {
        self.shared = shared
        self.dial = dial
        let configuration = shared.configuration
        let eventLoop = shared.eventLoop
        _reconnectDelay = .makeBoxSendingValue(configuration.initialReconnectDelay, as: UInt64.self, eventLoop: eventLoop)
        _reconnectTask = .makeBoxSendingValue(nil, as: Scheduled<Void>?.self, eventLoop: eventLoop)
        _lastConnectFailure = .makeBoxSendingValue(nil, as: String?.self, eventLoop: eventLoop)
        _connectAs = .makeBoxSendingValue(
            (configuration.clientID, configuration.cleanStart), as: (clientID: String, cleanStart: Bool).self, eventLoop: eventLoop)
        _clientIDAfterDisconnect = .makeBoxSendingValue(nil, as: (@Sendable () -> String)?.self, eventLoop: eventLoop)
    }

    // MARK: Event loop

    /// Opens a connection for `link` and sends the CONNECT; after a failure, tries again later.
    func connect(_ link: MQTTLink) {
        guard !shared.stopped else { return }
        let configuration = configuration
        let opening: EventLoopFuture<any Channel>
        if let dial {
            opening = dial(link)
        } else {
            let sslContext: NIOSSLContext?
            do {
                sslContext = try configuration.tls.map(MQTTBrokerText.makeSSLContext)
            } catch {
                shared.context.log(.error, "TLS configuration failed: \(error)")
                return scheduleReconnect(link)
            }
            opening = Self.bootstrap(for: link, sslContext: sslContext).connect(host: configuration.host, port: configuration.port)
        }
        opening.whenComplete { result in
            switch result {
            case .success(let channel):
                self.shared.channel = channel
                self.shared.output.connected(channel)
                self.sendConnect(on: channel)
            case .failure(let error):
                // Once per reason until a connection succeeds: a broker that is down for an hour
                // is one line, not one per attempt.
                let reason = MQTTBrokerText.connectFailure(error)
                if reason != self.lastConnectFailure {
                    self.lastConnectFailure = reason
                    self.shared.context.log(
                        .warning, "cannot connect to \(configuration.host):\(configuration.port): \(reason); trying again with backoff")
                }
                self.scheduleReconnect(link)
            }
        }
    }

    private func sendConnect(on channel: any Channel) {
        var properties = MQTTProperties()
        if configuration.version == .v5 {
            properties.sessionExpiryInterval = configuration.sessionExpiry
            properties.receiveMaximum = UInt16(clamping: configuration.receiveMaximum)
            properties.maximumPacketSize = UInt32(clamping: configuration.maximumPacketSize)
        }
        let connect = MQTTConnect(
            clientID: connectAs.clientID,
            cleanStart: connectAs.cleanStart,
            keepAlive: configuration.keepAlive,
            username: configuration.username,
            password: configuration.password,
            will: configuration.will,
            properties: properties
        )
        shared.output.write(.connect(connect), on: channel)
        // A broker that accepts TCP but never answers CONNECT must not hold the link forever.
        shared.eventLoop.scheduleTask(in: .seconds(10)) {
            guard self.shared.channel === channel, !self.shared.connected else { return }
            self.shared.context.log(.error, "no CONNACK within 10s: closing the connection")
            channel.close(promise: nil)
        }
    }

    /// Connects `link` again after the backoff delay, unless it stopped, a reconnect is already
    /// pending, or it drains an adoption (which decides what comes next).
    func scheduleReconnect(_ link: MQTTLink) {
        guard !shared.stopped, reconnectTask == nil else { return }
        // An adoption connects once per step; it decides what comes next.
        if let adoption = shared.adoption { return adoption.connectionEnded() }
        // Full jitter on the upper half: many routers restarting together do not reconnect in step.
        let delay = reconnectDelay / 2 + UInt64.random(in: 0...(reconnectDelay / 2))
        // Doubling cannot overflow: past half the ceiling the ceiling is next.
        let ceiling = configuration.maximumReconnectDelay
        reconnectDelay = reconnectDelay > ceiling / 2 ? ceiling : reconnectDelay * 2
        reconnectTask = shared.eventLoop.scheduleTask(in: .nanoseconds(Int64(clamping: delay))) {
            self.reconnectTask = nil
            self.connect(link)
        }
    }

    /// The broker accepted a connection: the backoff starts over, and a new failure is logged again.
    func connectionAccepted() {
        lastConnectFailure = nil
        reconnectDelay = configuration.initialReconnectDelay
    }

    /// The connection closed; `wasConnected` if the broker had accepted it. Call
    /// ``scheduleReconnect(_:)`` next.
    func connectionLost(wasConnected: Bool) {
        if wasConnected, !shared.stopped, let clientIDAfterDisconnect { connectAs.clientID = clientIDAfterDisconnect() }
    }

    /// The link stops: no reconnect follows.
    func stop() {
        reconnectTask?.cancel()
    }

    /// A client bootstrap for `link`'s broker: TLS when configured, the packet decoder and the
    /// link's handler, and the send buffer's water marks (see ``MQTTOutput``).
    private static func bootstrap(for link: MQTTLink, sslContext: NIOSSLContext?) -> ClientBootstrap {
        let configuration = link.configuration
        return ClientBootstrap(group: link.eventLoop)
            .connectTimeout(.seconds(10))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelOption(ChannelOptions.writeBufferWaterMark, value: MQTTOutput.writeBufferWaterMark)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        let serverName = configuration.tls?.serverName(connectingTo: configuration.host)
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    }
                    try MQTTConnector.addHandlers(for: link, to: channel)
                }
            }
    }

    /// Adds what reads a connection for `link` (after TLS, when there is TLS): the packet decoder
    /// and the link's handler. On the channel's event loop.
    static func addHandlers(for link: MQTTLink, to channel: any Channel) throws {
        let configuration = link.configuration
        try channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(
                MQTTPacketDecoder(version: configuration.version, maximumPacketSize: configuration.maximumPacketSize, link: link))
        )
        try channel.pipeline.syncOperations.addHandler(MQTTLinkHandler(link: link))
    }
}
