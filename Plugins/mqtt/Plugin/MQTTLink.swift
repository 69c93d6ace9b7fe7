import MQTTCodec
import NIOCore
import NIOPosix
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// One broker connection: subscribes, dispatches the broker's packets, pings, and stops cleanly.
///
/// Every mutable field (the connection state, the ping task) is confined to `eventLoop` (a
/// `NIOLoopBoundBox`, checked at each access); the entry points for the router's threads hop
/// onto it. Connecting and reconnecting with backoff are ``MQTTConnector``'s, publishes to the
/// broker ``MQTTPublisher``'s, inbound publishes ``MQTTInbound``'s, the socket writes
/// ``MQTTOutput``'s.
final class MQTTLink: Sendable {
    /// The connection's state that the inbound side and the publisher share with the link.
    let shared: MQTTConnectionState

    /// Connects to the broker, and again with backoff after a failure or a lost connection.
    let connector: MQTTConnector

    // Each field confined to the event loop has a box of its own (`NIOLoopBoundBox`, checked
    // at each access): one box for all would make any two overlapping accesses conflict.
    private let _pingTask: NIOLoopBoundBox<RepeatedTask?>
    private let _awaitingPong: NIOLoopBoundBox<Bool>

    private var pingTask: RepeatedTask? {
        get { _pingTask.value }
        set { _pingTask.value = newValue }
    }
    private var awaitingPong: Bool {
        get { _awaitingPong.value }
        set { _awaitingPong.value = newValue }
    }
    /// The client id and clean start the next CONNECT carries (see ``MQTTConnector/connectAs``).
    var connectAs: (clientID: String, cleanStart: Bool) {
        get { connector.connectAs }
        set { connector.connectAs = newValue }
    }
    /// Publishes from the broker to the router.
    let inbound: MQTTInbound
    /// Publishes from the router to the broker.
    let publisher: MQTTPublisher

    /// A link of instance `instance`. It runs on `eventLoop` and opens its connections with
    /// `dial`: the plugin's shared loop and a socket to the broker, unless a test hands in an
    /// `EmbeddedEventLoop` and `EmbeddedChannel`s (see ``MQTTConnector/Dial``).
    init(
        configuration: MQTTLinkConfiguration, context: PluginContext, instance: String, adoption: MQTTSessionAdoption? = nil,
        settleTokenBase: UInt64 = 0, eventLoop: any EventLoop = MQTTLink.sharedEventLoop, dial: MQTTConnector.Dial? = nil
    ) {
        shared = MQTTConnectionState(
            configuration: configuration, context: context, instance: instance, eventLoop: eventLoop, adoption: adoption,
            settleTokenBase: settleTokenBase)
        connector = MQTTConnector(shared: shared, dial: dial)
        _pingTask = .makeBoxSendingValue(nil, as: RepeatedTask?.self, eventLoop: eventLoop)
        _awaitingPong = .makeBoxSendingValue(false, as: Bool.self, eventLoop: eventLoop)
        inbound = MQTTInbound(link: shared)
        publisher = MQTTPublisher(link: shared, inbound: inbound)
    }

    // MARK: Entry points (any thread)

    /// With session takeover (MQTTMembership): where the client id to reconnect under comes
    /// from once an accepted connection is lost. Call it before ``start()``: both hop onto the
    /// event loop, in order, so no connection runs without it.
    func reconnect(as clientID: @escaping @Sendable () -> String) {
        eventLoop.execute { self.connector.clientIDAfterDisconnect = clientID }
    }

    func start() {
        // Not ready (the router's /readyz) until the broker accepted the connection.
        if adoption == nil { context.metric(.gauge, "ready", 0) }
        eventLoop.execute { self.connect() }
    }

    /// Stops taking inbound publishes (graceful shutdown): emits nothing more, and
    /// unsubscribes unless the broker keeps the session for this router alone. The socket
    /// stays read, because the drain still needs the broker's PUBACKs.
    func quiesce() {
        eventLoop.execute {
            self.reading = false
            // Unconfirmed, these stay the broker's (kept for the session).
            self.inbound.quiesce()
            // A kept session stays subscribed, so what is published while the router restarts
            // is queued for it; a shared one leaves the group, so the others take its share.
            let staysSubscribed = self.configuration.keepsSession && self.configuration.shareGroup == nil
            guard self.connected, let channel = self.channel, !self.configuration.subscriptions.isEmpty, !staysSubscribed else { return }
            _ = channel.setOption(ChannelOptions.autoRead, value: true)
            let filters = self.configuration.subscriptions.map(\.filter)
            self.output.write(.unsubscribe(MQTTUnsubscribe(packetID: self.publisher.nextID(), topicFilters: filters)), on: channel)
        }
    }

    /// Disconnects cleanly and fails what is still waiting, so the router can account for it.
    func stop() {
        let done = eventLoop.submit {
            self.shared.stopped = true
            self.connector.stop()
            self.pingTask?.cancel()
            self.inbound.stop()
            self.publisher.failAll()
            guard let channel = self.channel, self.connected else {
                return self.channel?.close() ?? self.eventLoop.makeSucceededVoidFuture()
            }
            self.output.write(.disconnect(MQTTDisconnect()), on: channel, flush: false)
            // A broker that does not read never takes the DISCONNECT: close after a grace period
            // (the broker then treats it as a lost connection and publishes the will).
            let giveUp = self.eventLoop.scheduleTask(in: Self.disconnectGrace) { channel.close(promise: nil) }
            // Half-close after the DISCONNECT and read on until the broker closes: closing with
            // unread input would send a reset, and a broker that has not yet read our last
            // PUBACKs drops them with the connection (it would deliver those messages again).
            _ = channel.setOption(ChannelOptions.autoRead, value: true)
            return self.output.flush(on: channel)
                .flatMap { channel.close(mode: .output) }
                .flatMap { channel.closeFuture }
                .flatMapError { _ in channel.close() }  // no half-close here: close at once
                .always { _ in giveUp.cancel() }
        }.flatMap { $0 }
        _ = try? done.wait()
    }

    /// The router has room again on the `messages` port (see ``MQTTInbound/resume()``).
    func resume() { inbound.resume() }

    /// The router has finished with an inbound publish (see ``MQTTInbound/settled(token:outcome:)``).
    func settled(token: UInt64, outcome: DeliveryOutcome) { inbound.settled(token: token, outcome: outcome) }

    /// Whether another publish fits (see ``MQTTPublisher/hasRoom``).
    var hasRoom: Bool { publisher.hasRoom }

    /// Takes a publish from the router (see ``MQTTPublisher/publish(_:delivery:)``).
    func publish(_ publish: MQTTPublish, delivery: Delivery) { publisher.publish(publish, delivery: delivery) }

    // MARK: Connection (event loop)

    /// Opens a connection and sends the CONNECT (see ``MQTTConnector/connect(_:)``).
    func connect() { connector.connect(self) }

    /// The channel closed (by either side or after an error).
    func channelInactive() {
        eventLoop.preconditionInEventLoop()
        let wasConnected = connected
        connected = false
        channel = nil
        output.connectionLost()
        // The closed socket's unsent bytes are gone with it: a router held back by them may
        // hand over publishes again (they wait in the window for the next connection).
        publisher.socketDrained()
        pingTask?.cancel()
        pingTask = nil
        awaitingPong = false
        publisher.connectionLost()
        // Inbound publishes not yet settled stay: the router still holds them, and how a late
        // settlement is handled depends on whether the next connection resumes the session.
        inbound.connectionLost()
        connector.connectionLost(wasConnected: wasConnected)
        if adoption == nil {
            if wasConnected, !stopped { context.log(.warning, "connection to \(configuration.host):\(configuration.port) lost") }
            context.metric(.gauge, "mqtt_connected", 0)
            context.metric(.gauge, "ready", 0)
        }
        connector.scheduleReconnect(self)
    }

    /// The socket's send buffer crossed a water mark.
    func writabilityChanged(_ writable: Bool) {
        eventLoop.preconditionInEventLoop()
        output.writabilityChanged(writable)
        if writable { publisher.socketDrained() }
    }

    /// How long a stopping link waits for the broker to take its DISCONNECT.
    static let disconnectGrace = TimeAmount.seconds(2)

    /// A decoding or transport error; the handler closes the channel next.
    func failed(_ error: any Error) {
        if let error = error as? MQTTCodecError {
            context.metric(.counter, "mqtt_bad_packets_total", 1)
            context.log(.error, "closing the connection to \(peer): \(error)")
            // MQTT 5: say why before closing (0x81 malformed, 0x82 protocol error, 0x95 too large).
            if let channel { sendDisconnect(reasonCode: error.kind.reasonCode, on: channel) }
        } else {
            context.log(.error, "connection error: \(error)")
        }
    }

    // MARK: Packets from the broker (event loop)

    func received(_ packet: MQTTPacket) {
        eventLoop.preconditionInEventLoop()
        guard let channel else { return }
        switch packet {
        case .connack(let connack):
            connectionAcknowledged(connack, on: channel)
        case .publish(let publish):
            // This client announces no Topic Alias Maximum, so it is 0: any alias is an error
            // (and an empty topic would otherwise reach the router).
            if let alias = publish.properties.topicAlias {
                return protocolViolation(
                    "PUBLISH with Topic Alias \(alias), but this client allows none (Topic Alias Maximum 0)", channel, reasonCode: 0x94)
            }
            adoption?.publishArrived()
            guard inbound.admit(publish) else {
                return protocolViolation(
                    "more than \(configuration.receiveMaximum) QoS 1/2 publishes unconfirmed, past the Receive Maximum this client announced",
                    channel, reasonCode: 0x93)
            }
            inbound.receivedPublish(publish, on: channel)
        case .puback(let ack):
            publisher.complete(ack.packetID, reasonCode: ack.reasonCode, stage: "PUBACK")
        case .pubrec(let ack):
            guard publisher.received(ack, on: channel) else {
                return protocolViolation("PUBREC for unknown packet id \(ack.packetID)", channel)
            }
        case .pubcomp(let ack):
            publisher.complete(ack.packetID, reasonCode: ack.reasonCode, stage: "PUBCOMP")
        case .pubrel(let ack):
            inbound.released(ack.packetID)
            output.write(.pubcomp(MQTTAck(packetID: ack.packetID)), on: channel, flush: false)
        case .suback(let suback):
            for (index, code) in suback.reasonCodes.enumerated() where code >= 0x80 {
                let filter = index < configuration.subscriptions.count ? configuration.subscriptions[index].filter : "?"
                context.log(.error, "broker refused subscription '\(filter)' (reason 0x\(String(code, radix: 16)))")
            }
        case .pingresp:
            awaitingPong = false
            adoption?.pong()
        case .disconnect(let disconnect):
            context.log(
                .warning,
                "broker disconnected (reason 0x\(String(disconnect.reasonCode, radix: 16)))\(MQTTBrokerText.reasonText(disconnect.properties))"
            )
            channel.close(promise: nil)
        case .unsuback:
            adoption?.unsubscribed()
        case .auth:
            break
        case .connect, .subscribe, .unsubscribe, .pingreq:
            protocolViolation("the broker sent a \(packet.name) packet, which only clients send", channel)
        }
    }

    private func connectionAcknowledged(_ connack: MQTTConnAck, on channel: any Channel) {
        guard connack.reasonCode == 0 else {
            context.metric(.counter, "mqtt_connect_refused_total", 1)
            context.log(
                .error,
                "broker refused the connection: \(MQTTBrokerText.connectReason(connack.reasonCode, version: configuration.version))\(MQTTBrokerText.reasonText(connack.properties))"
            )
            channel.close(promise: nil)
            return
        }
        connected = true
        connector.connectionAccepted()
        sessionResumed = connack.sessionPresent
        connectionNumber &+= 1
        if let adoption { return adoption.connected(sessionPresent: connack.sessionPresent, on: channel) }
        context.metric(.gauge, "mqtt_connected", 1)
        context.metric(.gauge, "ready", 1)
        context.log(
            .info, "connected to \(configuration.host):\(configuration.port) (MQTT \(configuration.version == .v5 ? "5" : "3.1.1"))")
        let keepAlive = connack.properties.serverKeepAlive ?? configuration.keepAlive
        if keepAlive > 0 {
            pingTask = eventLoop.scheduleRepeatedTask(initialDelay: .seconds(Int64(keepAlive)), delay: .seconds(Int64(keepAlive))) { task in
                guard self.connected, let channel = self.channel else { return task.cancel() }
                // While inbound publishes are held the socket is not read, so no PINGRESP can
                // arrive: the broker is not the one that is late.
                if self.awaitingPong, !self.inbound.holdingInbound {
                    self.context.log(.warning, "no PINGRESP within \(keepAlive)s: closing the connection")
                    channel.close(promise: nil)
                    return
                }
                self.awaitingPong = true
                self.output.write(.pingreq, on: channel)
            }
        }
        if reading, !configuration.subscriptions.isEmpty {
            // MQTT 5 Retain As Published: a message published retained arrives retained, so a
            // route to another broker keeps it retained there, as Mosquitto's own bridge does
            // (without it the broker clears the flag on everything but its stored messages).
            let v5 = configuration.version == .v5
            let subscriptions = configuration.subscriptions.map {
                MQTTSubscription(topicFilter: $0.filter, qos: $0.qos, noLocal: v5 && $0.noLocal, retainAsPublished: v5)
            }
            output.write(.subscribe(MQTTSubscribe(packetID: publisher.nextID(), subscriptions: subscriptions)), on: channel)
        }
        publisher.connected(receiveMaximum: connack.properties.receiveMaximum)
        inbound.heldAcrossReconnect(on: channel)
    }

    /// The broker, as logs name it.
    var peer: String { "\(configuration.host):\(configuration.port)" }
}
