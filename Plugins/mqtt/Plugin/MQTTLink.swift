import DequeModule
import MQTTCodec
import NIOCore
import NIOPosix
import NIOSSL
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// One broker connection: connects, subscribes, publishes with an inflight window, answers
/// the broker's acknowledgements, pings, and reconnects with exponential backoff and jitter.
///
/// Every mutable field is only touched on `eventLoop`; the public entry points hop onto it.
final class MQTTLink: @unchecked Sendable {
    /// A publish the router handed over, with the delivery to acknowledge when the broker has it.
    struct Outbound {
        var publish: MQTTPublish
        var delivery: Delivery
        /// Set once PUBREC arrived (QoS 2): the PUBREL stage.
        var released = false
        /// The packet id it was last sent with, before the connection was lost.
        var previousPacketID: UInt16?
    }

    /// An inbound publish waiting for room in the router, or for its settlement.
    struct Inbound {
        var publish: MQTTPublish
        /// Arrival order: a publish the router hands back goes in front of later ones.
        var sequence: UInt64
        /// The connection (``MQTTLink/connectionNumber``) it arrived on: its packet id can be
        /// confirmed on that connection only.
        var connection: UInt64
        /// The router settled it with retry once already (it is being offered again).
        var handedBack = false
    }

    let configuration: MQTTLinkConfiguration
    let context: PluginContext
    let instance: String
    let eventLoop: any EventLoop

    var channel: (any Channel)?
    var connected = false
    private var stopped = false
    var reading = true
    private var reconnectDelay: UInt64
    private var reconnectTask: Scheduled<Void>?
    private var pingTask: RepeatedTask?
    private var awaitingPong = false
    private var nextPacketID: UInt16 = 0
    /// QoS ≥ 1 publishes sent and not yet completed, in send order.
    private var inflight: [UInt16: Outbound] = [:]
    private var inflightOrder: Deque<UInt16> = []
    /// Publishes waiting for a connection or for room in the inflight window.
    private var pending: Deque<Outbound> = []
    /// Inbound publishes the router could not take yet (`on_full: block`).
    var blockedInbound: Deque<Inbound> = []
    /// Settle tokens of inbound QoS ≥ 1 publishes → the publish, kept until the router
    /// settles it: confirmed then, or offered again when the router answers retry. Kept
    /// across reconnects, so a late settlement still finds its publish (the router holds at
    /// most its queues' worth, and the broker's receive maximum bounds what it sends unconfirmed).
    var nextSettleToken: UInt64 = 0
    var unsettled: [UInt64: Inbound] = [:]
    /// Numbers inbound publishes in arrival order.
    var inboundSequence: UInt64 = 0
    /// Counts accepted connections (CONNACK), so a packet id is confirmed only on its own.
    var connectionNumber: UInt64 = 0
    /// Offers the oldest handed-back publish to the router again (see MQTTLink+Inbound.swift).
    var redeliveryTimer: Scheduled<Void>?
    /// The pause before the next offer: doubles from ``redeliveryBackoff`` up to its ceiling.
    var redeliveryDelay = MQTTLink.redeliveryBackoff.lowerBound
    /// The token of a handed-back publish offered again alone, as a probe: when it is
    /// taken, the others follow.
    var probeToken: UInt64?
    /// QoS 2 packet ids received and acknowledged with PUBREC, awaiting PUBREL.
    var receivedQoS2: Set<UInt16> = []
    /// MQTT 3.1.1 has no no-local: what this link published lately, so the broker's echo of
    /// it through the link's own subscriptions can be recognised and dropped.
    var recentPublishes = EchoMemory()
    /// Publishes taken from the router and not yet acknowledged to it (any thread reads it).
    private let outstanding = Atomic<Int>(0)
    /// False while the socket has more unsent bytes than the high water mark (a broker that
    /// does not keep up): QoS 0 publishes are finished once buffered, so without this a
    /// stream to a stalled broker would buffer without bound (any thread reads it).
    private let socketWritable = Atomic<Bool>(true)
    /// Times the socket stopped being writable (for the log; the metric is the counter).
    private let writeStalls = Atomic<Int>(0)
    private var flushScheduled = false
    /// Packets encoded for the current channel and not yet handed to it (see ``write(_:on:flush:)``).
    private var outgoing = ByteBuffer()
    /// Writes handed to the channel that the socket has not taken completely yet.
    private var unfinishedFlushes = 0
    /// Publishes handed over by the router, waiting for the event loop.
    private let inbox = Handoff<(MQTTPublish, Delivery)>()
    /// Settle tokens of inbound publishes the router has finished with, waiting for the event loop.
    let settledTokens = Handoff<(token: UInt64, outcome: DeliveryOutcome)>()
    /// Whether the broker kept the session (CONNACK session present).
    var sessionResumed = false
    /// The inflight window in force: the configured one, capped by the broker.
    private var inflightWindow: Int

    init(configuration: MQTTLinkConfiguration, context: PluginContext, instance: String) {
        self.configuration = configuration
        self.context = context
        self.instance = instance
        eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        reconnectDelay = configuration.initialReconnectDelay
        inflightWindow = configuration.inflightWindow
    }

    // MARK: Entry points (any thread)

    func start() {
        // Not ready (the router's /readyz) until the broker accepted the connection.
        context.metric(.gauge, "ready", 0)
        eventLoop.execute { self.connect() }
    }

    /// Stops taking inbound publishes (graceful shutdown): unsubscribes, and emits nothing
    /// more. The socket stays read, because the drain still needs the broker's PUBACKs.
    func quiesce() {
        eventLoop.execute {
            self.reading = false
            // Unconfirmed, these stay the broker's (kept for the session).
            self.blockedInbound.removeAll()
            self.redeliveryTimer?.cancel()
            self.redeliveryTimer = nil
            guard self.connected, let channel = self.channel, !self.configuration.subscriptions.isEmpty else { return }
            _ = channel.setOption(ChannelOptions.autoRead, value: true)
            let filters = self.configuration.subscriptions.map(\.filter)
            self.write(.unsubscribe(MQTTUnsubscribe(packetID: self.nextID(), topicFilters: filters)), on: channel)
        }
    }

    /// Disconnects cleanly and fails what is still waiting, so the router can account for it.
    func stop() {
        let done = eventLoop.submit {
            self.stopped = true
            self.reconnectTask?.cancel()
            self.pingTask?.cancel()
            self.redeliveryTimer?.cancel()
            for outbound in self.pending { self.finish(outbound.delivery, .retry, reason: "mqtt link stopped") }
            for id in self.inflightOrder {
                guard let outbound = self.inflight[id] else { continue }
                self.finish(outbound.delivery, .retry, reason: "mqtt link stopped before the broker confirmed")
            }
            self.pending.removeAll()
            self.inflight.removeAll()
            self.inflightOrder.removeAll()
            guard let channel = self.channel, self.connected else {
                return self.channel?.close() ?? self.eventLoop.makeSucceededVoidFuture()
            }
            self.write(.disconnect(MQTTDisconnect()), on: channel, flush: false)
            // A broker that does not read never takes the DISCONNECT: close after a grace period
            // (the broker then treats it as a lost connection and publishes the will).
            let giveUp = self.eventLoop.scheduleTask(in: Self.disconnectGrace) { channel.close(promise: nil) }
            // Half-close after the DISCONNECT and read on until the broker closes: closing with
            // unread input would send a reset, and a broker that has not yet read our last
            // PUBACKs drops them with the connection (it would deliver those messages again).
            _ = channel.setOption(ChannelOptions.autoRead, value: true)
            return self.flushOutgoing(on: channel)
                .flatMap { channel.close(mode: .output) }
                .flatMap { channel.closeFuture }
                .flatMapError { _ in channel.close() }  // no half-close here: close at once
                .always { _ in giveUp.cancel() }
        }.flatMap { $0 }
        _ = try? done.wait()
    }

    /// Whether another publish fits: QoS ≥ 1 publishes wait (in order) for the broker, at
    /// most `max_pending` of them, and the socket's send buffer must be below its high water
    /// mark; otherwise the router holds back.
    var hasRoom: Bool {
        outstanding.load(ordering: .relaxed) < configuration.maximumPending && socketWritable.load(ordering: .relaxed)
    }

    /// Acknowledges a delivery to the router and frees its place.
    private func finish(_ delivery: Delivery, _ outcome: DeliveryOutcome, reason: String = "") {
        outstanding.subtract(1, ordering: .relaxed)
        delivery.ack(outcome, reason: reason)
    }

    /// Takes a publish from the router. Publishes are handed to the event loop in batches:
    /// only the first of a batch wakes it, so a stream does not cost a wake-up per message.
    func publish(_ publish: MQTTPublish, delivery: Delivery) {
        outstanding.add(1, ordering: .relaxed)
        if inbox.add((publish, delivery)) { eventLoop.execute { self.takeInbox() } }
    }

    private func takeInbox() {
        for (publish, delivery) in inbox.takeAll() { take(publish, delivery: delivery) }
        sendPending()
    }

    private func take(_ publish: MQTTPublish, delivery: Delivery) {
        guard !stopped else { return finish(delivery, .retry, reason: "mqtt link stopped") }
        guard publish.qos == .atMostOnce else {
            pending.append(Outbound(publish: publish, delivery: delivery))
            return
        }
        guard connected, let channel else {
            return finish(delivery, .retry, reason: "not connected to the broker (QoS 0 is not kept)")
        }
        remember(publish)
        // QoS 0 is at most once: handed to the socket in order is as delivered as it gets, and
        // a future per message would cost more than the message.
        write(.publish(publish), on: channel, flush: false)
        finish(delivery, .ok)
    }

    // MARK: Connection (event loop)

    private func connect() {
        guard !stopped else { return }
        let configuration = configuration
        let sslContext: NIOSSLContext?
        do {
            sslContext = try configuration.tls.map(Self.makeSSLContext)
        } catch {
            context.log(.error, "TLS configuration failed: \(error)")
            return scheduleReconnect()
        }
        let link = self
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(10))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelOption(ChannelOptions.writeBufferWaterMark, value: Self.writeBufferWaterMark)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        let serverName = configuration.tls?.serverName(connectingTo: configuration.host)
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(
                            MQTTPacketDecoder(
                                version: configuration.version, maximumPacketSize: configuration.maximumPacketSize, link: link))
                    )
                    try channel.pipeline.syncOperations.addHandler(MQTTLinkHandler(link: link))
                }
            }
        bootstrap.connect(host: configuration.host, port: configuration.port).whenComplete { result in
            switch result {
            case .success(let channel):
                self.channel = channel
                self.outgoing = channel.allocator.buffer(capacity: Self.outgoingCapacity)
                self.sendConnect(on: channel)
            case .failure(let error):
                self.context.log(.warning, "cannot connect to \(configuration.host):\(configuration.port): \(error)")
                self.scheduleReconnect()
            }
        }
    }

    private func sendConnect(on channel: any Channel) {
        var properties = MQTTProperties()
        if configuration.version == .v5 {
            properties.sessionExpiryInterval = configuration.sessionExpiry
            properties.receiveMaximum = UInt16(clamping: 65535)
            properties.maximumPacketSize = UInt32(clamping: configuration.maximumPacketSize)
        }
        let connect = MQTTConnect(
            clientID: configuration.clientID,
            cleanStart: configuration.cleanStart,
            keepAlive: configuration.keepAlive,
            username: configuration.username,
            password: configuration.password,
            will: configuration.will,
            properties: properties
        )
        write(.connect(connect), on: channel)
        // A broker that accepts TCP but never answers CONNECT must not hold the link forever.
        eventLoop.scheduleTask(in: .seconds(10)) {
            guard self.channel === channel, !self.connected else { return }
            self.context.log(.error, "no CONNACK within 10s: closing the connection")
            channel.close(promise: nil)
        }
    }

    private func scheduleReconnect() {
        guard !stopped, reconnectTask == nil else { return }
        // Full jitter on the upper half: many routers restarting together do not reconnect in step.
        let delay = reconnectDelay / 2 + UInt64.random(in: 0...(reconnectDelay / 2))
        // Doubling cannot overflow: past half the ceiling the ceiling is next.
        let ceiling = configuration.maximumReconnectDelay
        reconnectDelay = reconnectDelay > ceiling / 2 ? ceiling : reconnectDelay * 2
        reconnectTask = eventLoop.scheduleTask(in: .nanoseconds(Int64(clamping: delay))) {
            self.reconnectTask = nil
            self.connect()
        }
    }

    /// The channel closed (by either side or after an error).
    func channelInactive() {
        eventLoop.preconditionInEventLoop()
        let wasConnected = connected
        connected = false
        channel = nil
        socketWritable.store(true, ordering: .relaxed)  // publishes wait in `pending` until reconnected
        outgoing = ByteBuffer()  // encoded for the lost connection: what matters is resent from `inflight`
        pingTask?.cancel()
        pingTask = nil
        awaitingPong = false
        // What the broker had not confirmed goes again, first, in the order it was sent.
        let unconfirmed = inflightOrder.compactMap { inflight[$0] }.map { outbound -> Outbound in
            var again = outbound
            again.previousPacketID = outbound.publish.packetID
            return again
        }
        inflight.removeAll()
        inflightOrder.removeAll()
        pending.insert(contentsOf: unconfirmed, at: 0)
        // `unsettled` stays: the router still holds those publishes, and how a late settlement
        // is handled depends on whether the next connection resumes the session.
        receivedQoS2.removeAll()
        if wasConnected, !stopped { context.log(.warning, "connection to \(configuration.host):\(configuration.port) lost") }
        context.metric(.gauge, "mqtt_connected", 0)
        context.metric(.gauge, "ready", 0)
        scheduleReconnect()
    }

    /// The socket's send buffer crossed a water mark.
    func writabilityChanged(_ writable: Bool) {
        eventLoop.preconditionInEventLoop()
        socketWritable.store(writable, ordering: .relaxed)
        guard !writable else { return }
        let stalls = writeStalls.add(1, ordering: .relaxed).newValue
        context.metric(.counter, "mqtt_write_stalls_total", 1)
        if stalls == 1 || stalls.isMultiple(of: 1000) {
            context.log(
                .notice,
                "the broker is not reading fast enough: over \(Self.writeBufferWaterMark.high) bytes unsent, publishing paused (mqtt_write_stalls_total=\(stalls))"
            )
        }
    }

    /// How long a stopping link waits for the broker to take its DISCONNECT.
    static let disconnectGrace = TimeAmount.seconds(2)

    /// How many bytes may wait unsent before the link stops taking publishes, and how few
    /// before it takes them again.
    static let writeBufferWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 256 * 1024, high: 1024 * 1024)

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
            receivedPublish(publish, on: channel)
        case .puback(let ack):
            complete(ack.packetID, reasonCode: ack.reasonCode, stage: "PUBACK")
        case .pubrec(let ack):
            guard var outbound = inflight[ack.packetID] else {
                return protocolViolation("PUBREC for unknown packet id \(ack.packetID)", channel)
            }
            if ack.reasonCode >= 0x80 { return complete(ack.packetID, reasonCode: ack.reasonCode, stage: "PUBREC") }
            outbound.released = true
            inflight[ack.packetID] = outbound
            write(.pubrel(MQTTAck(packetID: ack.packetID)), on: channel, flush: false)
        case .pubcomp(let ack):
            complete(ack.packetID, reasonCode: ack.reasonCode, stage: "PUBCOMP")
        case .pubrel(let ack):
            receivedQoS2.remove(ack.packetID)
            write(.pubcomp(MQTTAck(packetID: ack.packetID)), on: channel, flush: false)
        case .suback(let suback):
            for (index, code) in suback.reasonCodes.enumerated() where code >= 0x80 {
                let filter = index < configuration.subscriptions.count ? configuration.subscriptions[index].filter : "?"
                context.log(.error, "broker refused subscription '\(filter)' (reason 0x\(String(code, radix: 16)))")
            }
        case .pingresp:
            awaitingPong = false
        case .disconnect(let disconnect):
            context.log(
                .warning,
                "broker disconnected (reason 0x\(String(disconnect.reasonCode, radix: 16)))\(Self.reasonText(disconnect.properties))")
            channel.close(promise: nil)
        case .unsuback, .auth:
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
                "broker refused the connection: \(Self.connectReason(connack.reasonCode, version: configuration.version))\(Self.reasonText(connack.properties))"
            )
            channel.close(promise: nil)
            return
        }
        connected = true
        sessionResumed = connack.sessionPresent
        connectionNumber &+= 1
        // The broker's Receive Maximum caps how many QoS ≥ 1 publishes may await it.
        inflightWindow = min(configuration.inflightWindow, Int(connack.properties.receiveMaximum ?? UInt16.max))
        reconnectDelay = configuration.initialReconnectDelay
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
                if self.awaitingPong, !self.holdingInbound {
                    self.context.log(.warning, "no PINGRESP within \(keepAlive)s: closing the connection")
                    channel.close(promise: nil)
                    return
                }
                self.awaitingPong = true
                self.write(.pingreq, on: channel)
            }
        }
        if reading, !configuration.subscriptions.isEmpty {
            let subscriptions = configuration.subscriptions.map {
                MQTTSubscription(topicFilter: $0.filter, qos: $0.qos, noLocal: configuration.version == .v5 && $0.noLocal)
            }
            write(.subscribe(MQTTSubscribe(packetID: nextID(), subscriptions: subscriptions)), on: channel)
        }
        sendPending()
        heldAcrossReconnect(on: channel)
    }

    var suppressesEchoes: Bool {
        configuration.version == .v3_1_1 && configuration.echoSuppression && !configuration.subscriptions.isEmpty
    }

    private func remember(_ publish: MQTTPublish) {
        guard suppressesEchoes else { return }
        recentPublishes.insert(topic: publish.topic, payload: publish.payload, at: .now())
    }

    // MARK: Publishing (event loop)

    private func sendPending() {
        guard connected, let channel else { return }
        while !pending.isEmpty, inflight.count < inflightWindow {
            var outbound = pending.removeFirst()
            // Resending into a resumed session: same packet id, DUP set (MQTT 4.4). Into a new
            // session it is a first attempt again.
            let resend = sessionResumed ? outbound.previousPacketID.flatMap { inflight[$0] == nil ? $0 : nil } : nil
            let id = resend ?? nextID()
            outbound.publish.dup = resend != nil
            outbound.publish.packetID = id
            inflight[id] = outbound
            inflightOrder.append(id)
            remember(outbound.publish)
            write(.publish(outbound.publish), on: channel, flush: false)
        }
    }

    private func complete(_ packetID: UInt16, reasonCode: UInt8, stage: String) {
        guard let outbound = inflight.removeValue(forKey: packetID) else {
            context.log(.warning, "\(stage) for unknown packet id \(packetID) ignored")
            return
        }
        // Acknowledgements come nearly in order: drop completed ids from the front only.
        while let first = inflightOrder.first, inflight[first] == nil { inflightOrder.removeFirst() }
        if reasonCode >= 0x80 {
            finish(outbound.delivery, .reject, reason: "broker answered \(stage) with reason 0x\(String(reasonCode, radix: 16))")
        } else {
            finish(outbound.delivery, .ok)
        }
        sendPending()
    }

    private func nextID() -> UInt16 {
        repeat {
            nextPacketID = nextPacketID == UInt16.max ? 1 : nextPacketID + 1
        } while inflight[nextPacketID] != nil
        return nextPacketID
    }

    /// Encodes a packet into the connection's output buffer. With `flush: false` the buffer
    /// goes to the socket once for everything written in this turn of the event loop, so a
    /// burst of publishes costs one write and no promise per packet. A failed write closes the
    /// channel, and ``channelInactive()`` deals with what the broker had not confirmed.
    func write(_ packet: MQTTPacket, on channel: any Channel, flush: Bool = true) {
        do {
            try MQTTCodec.encode(packet, version: configuration.version, into: &outgoing)
        } catch {
            context.log(.error, "cannot encode \(packet.name): \(error)")
            return
        }
        if flush {
            _ = flushOutgoing(on: channel)
        } else if !flushScheduled {
            flushScheduled = true
            eventLoop.execute {
                self.flushScheduled = false
                guard self.channel === channel else { return }
                _ = self.flushOutgoing(on: channel)
            }
        }
    }

    /// Hands what the output buffer holds to the socket; the future completes when it is written.
    private func flushOutgoing(on channel: any Channel) -> EventLoopFuture<Void> {
        guard outgoing.readableBytes > 0 else { return eventLoop.makeSucceededVoidFuture() }
        let written: EventLoopFuture<Void>
        if unfinishedFlushes == 0 {
            // Usually the socket takes it all at once, the channel lets go of the storage, and
            // clear() below reuses it.
            written = channel.writeAndFlush(outgoing)
        } else {
            // The socket is behind: this write will wait too, so it gets storage of its own
            // size rather than holding on to the whole output buffer (the water mark counts
            // bytes, not capacity).
            var compact = channel.allocator.buffer(capacity: outgoing.readableBytes)
            compact.writeImmutableBuffer(outgoing)
            written = channel.writeAndFlush(compact)
        }
        unfinishedFlushes += 1
        written.whenComplete { _ in self.unfinishedFlushes -= 1 }
        outgoing.clear()
        return written
    }

    /// The output buffer's initial capacity: a loop turn's worth of small publishes.
    private static let outgoingCapacity = 16 * 1024

    /// Closes the connection after a broker broke the protocol, with a DISCONNECT saying why
    /// (MQTT 5; `reasonCode` 0x82 Protocol Error unless a more precise one applies).
    private func protocolViolation(_ reason: String, _ channel: any Channel, reasonCode: UInt8 = 0x82) {
        context.metric(.counter, "mqtt_bad_packets_total", 1)
        context.log(.error, "closing the connection to \(peer): protocol violation: \(reason)")
        sendDisconnect(reasonCode: reasonCode, on: channel)
        channel.close(promise: nil)
    }

    /// An MQTT 5 DISCONNECT with `reasonCode`, written at once (the connection closes next).
    private func sendDisconnect(reasonCode: UInt8, on channel: any Channel) {
        guard configuration.version == .v5, connected, self.channel === channel else { return }
        write(.disconnect(MQTTDisconnect(reasonCode: reasonCode)), on: channel)
    }

    /// The broker, as logs name it.
    var peer: String { "\(configuration.host):\(configuration.port)" }

    // MARK: Helpers

    static func makeSSLContext(_ tls: TLSSettings) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile = tls.caFile { configuration.trustRoots = .file(caFile) }
        if let certificateFile = tls.certificateFile, let keyFile = tls.keyFile {
            configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) }
            configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
        }
        configuration.certificateVerification = tls.verify ? .fullVerification : .none
        return try NIOSSLContext(configuration: configuration)
    }

    static func reasonText(_ properties: MQTTProperties) -> String {
        properties.reasonString.map { ": \($0)" } ?? ""
    }

    static func connectReason(_ code: UInt8, version: MQTTVersion) -> String {
        switch (version, code) {
        case (.v3_1_1, 1): "unacceptable protocol version (1)"
        case (.v3_1_1, 2): "client identifier rejected (2)"
        case (.v3_1_1, 3): "server unavailable (3)"
        case (.v3_1_1, 4): "bad user name or password (4)"
        case (.v3_1_1, 5): "not authorized (5)"
        case (.v5, 0x86): "bad user name or password (0x86)"
        case (.v5, 0x87): "not authorized (0x87)"
        case (.v5, 0x84): "unsupported protocol version (0x84)"
        case (.v5, 0x85): "client identifier not valid (0x85)"
        case (.v5, 0x88): "server unavailable (0x88)"
        case (.v5, 0x89): "server busy (0x89)"
        case (.v5, 0x8A): "banned (0x8a)"
        default: "reason 0x\(String(code, radix: 16))"
        }
    }
}

/// Frames bytes from the broker into packets with ``MQTTCodec`` and hands each to the link
/// directly: sending packets down the pipeline would box every one in an `NIOAny`.
struct MQTTPacketDecoder: ByteToMessageDecoder {
    typealias InboundOut = Never

    let version: MQTTVersion
    let maximumPacketSize: Int
    let link: MQTTLink

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let packet = try MQTTCodec.decode(from: &buffer, version: version, maximumPacketSize: maximumPacketSize) else {
            return .needMoreData
        }
        link.received(packet)
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

/// Hands connection events to the link (``MQTTPacketDecoder`` hands it the packets).
final class MQTTLinkHandler: ChannelInboundHandler {
    typealias InboundIn = Never

    let link: MQTTLink

    init(link: MQTTLink) { self.link = link }

    func channelInactive(context: ChannelHandlerContext) {
        link.channelInactive()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        link.writabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        link.failed(error)
        context.close(promise: nil)
    }
}

/// A bounded memory of recent publishes (topic and payload digest), for recognising the
/// broker's echo of a link's own publish. Entries expire after `lifetime`; at most `capacity`
/// are kept, oldest dropped first.
struct EchoMemory {
    static let capacity = 4096
    static let lifetime = TimeAmount.seconds(30)

    private var entries: [(digest: Int, at: NIODeadline)] = []
    private var counts: [Int: Int] = [:]

    mutating func insert(topic: String, payload: [UInt8], at now: NIODeadline) {
        expire(now: now)
        if entries.count >= Self.capacity { drop(first: 1) }
        let digest = Self.digest(topic, payload)
        entries.append((digest, now))
        counts[digest, default: 0] += 1
    }

    /// Whether a matching publish was remembered (and forgets one of them).
    mutating func remove(topic: String, payload: [UInt8], now: NIODeadline) -> Bool {
        expire(now: now)
        let digest = Self.digest(topic, payload)
        guard let count = counts[digest], count > 0 else { return false }
        counts[digest] = count == 1 ? nil : count - 1
        if let index = entries.firstIndex(where: { $0.digest == digest }) { entries.remove(at: index) }
        return true
    }

    private mutating func expire(now: NIODeadline) {
        let expired = entries.prefix(while: { $0.at + Self.lifetime < now }).count
        if expired > 0 { drop(first: expired) }
    }

    private mutating func drop(first count: Int) {
        for entry in entries.prefix(count) {
            let left = (counts[entry.digest] ?? 1) - 1
            counts[entry.digest] = left > 0 ? left : nil
        }
        entries.removeFirst(count)
    }

    static func digest(_ topic: String, _ payload: [UInt8]) -> Int {
        var hasher = Hasher()
        hasher.combine(topic)
        hasher.combine(payload)
        return hasher.finalize()
    }
}
