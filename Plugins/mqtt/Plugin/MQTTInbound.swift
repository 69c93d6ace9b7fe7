import DequeModule
import MQTTCodec
import NIOCore
import SwitchyardCore
import SwitchyardPluginKit

/// Inbound publishes: handed to the router, confirmed to the broker once the router settled
/// them, and held unconfirmed — then offered again — when the router answers retry (an
/// at-least-once route whose spool cannot write, a sink that is down on an at-most-once route).
/// Nothing is confirmed to the broker that the router did not take.
///
/// Every mutable field is confined to the link's event loop (a `NIOLoopBoundBox`, checked at
/// each access); the entry points for the router's threads hop onto it, and settlements come
/// through a ``Handoff`` (which locks itself).
final class MQTTInbound: Sendable {
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

    /// First pause before a handed-back publish is offered again, and the ceiling it doubles to.
    static let redeliveryBackoff = TimeAmount.milliseconds(100)...TimeAmount.seconds(5)

    unowned let link: MQTTConnectionState
    // Each field confined to the event loop has a box of its own (`NIOLoopBoundBox`, checked
    // at each access): one box for all would make any two overlapping accesses conflict. They
    // are used as `field.value` directly: a forwarding property would nest two accessor
    // coroutines, which a debug build allocates for on every envelope.
    /// Inbound publishes the router could not take yet (`on_full: block`).
    private let blockedInbound: NIOLoopBoundBox<Deque<Inbound>>
    /// Settle tokens of inbound QoS ≥ 1 publishes → the publish, kept until the router
    /// settles it: confirmed then, or offered again when the router answers retry. Kept
    /// across reconnects, so a late settlement still finds its publish (the router holds at
    /// most its queues' worth, and the broker's receive maximum bounds what it sends unconfirmed).
    private let nextSettleToken: NIOLoopBoundBox<UInt64>
    private let unsettled: NIOLoopBoundBox<[UInt64: Inbound]>
    /// Numbers inbound publishes in arrival order.
    private let inboundSequence: NIOLoopBoundBox<UInt64>
    /// Offers the oldest handed-back publish to the router again.
    private let redeliveryTimer: NIOLoopBoundBox<Scheduled<Void>?>
    /// The pause before the next offer: doubles from ``redeliveryBackoff`` up to its ceiling.
    private let redeliveryDelay: NIOLoopBoundBox<TimeAmount>
    /// The token of a handed-back publish offered again alone, as a probe: when it is
    /// taken, the others follow.
    private let probeToken: NIOLoopBoundBox<UInt64?>
    /// QoS 2 packet ids received and acknowledged with PUBREC, awaiting PUBREL.
    private let receivedQoS2: NIOLoopBoundBox<Set<UInt16>>
    /// Packet ids of QoS ≥ 1 publishes received on this connection and not yet confirmed
    /// (PUBACK, or PUBCOMP for QoS 2): what counts against the Receive Maximum announced.
    private let unconfirmedFromBroker: NIOLoopBoundBox<Set<UInt16>>
    /// MQTT 3.1.1 has no no-local: what this link published lately, so the broker's echo of
    /// it through the link's own subscriptions can be recognised and dropped.
    private let recentPublishes: NIOLoopBoundBox<EchoMemory>
    /// The batch taken from `settledTokens`, kept so its storage is reused.
    private let settledBatch: NIOLoopBoundBox<[(token: UInt64, outcome: DeliveryOutcome)]>

    /// Settle tokens of inbound publishes the router has finished with, waiting for the event loop.
    private let settledTokens = Handoff<(token: UInt64, outcome: DeliveryOutcome)>()

    init(link: MQTTConnectionState) {
        self.link = link
        blockedInbound = .makeBoxSendingValue([], as: Deque<Inbound>.self, eventLoop: link.eventLoop)
        nextSettleToken = .makeBoxSendingValue(link.settleTokenBase, as: UInt64.self, eventLoop: link.eventLoop)
        unsettled = .makeBoxSendingValue([:], as: [UInt64: Inbound].self, eventLoop: link.eventLoop)
        inboundSequence = .makeBoxSendingValue(0, as: UInt64.self, eventLoop: link.eventLoop)
        redeliveryTimer = .makeBoxSendingValue(nil, as: Scheduled<Void>?.self, eventLoop: link.eventLoop)
        redeliveryDelay = .makeBoxSendingValue(MQTTInbound.redeliveryBackoff.lowerBound, as: TimeAmount.self, eventLoop: link.eventLoop)
        probeToken = .makeBoxSendingValue(nil, as: UInt64?.self, eventLoop: link.eventLoop)
        receivedQoS2 = .makeBoxSendingValue([], as: Set<UInt16>.self, eventLoop: link.eventLoop)
        unconfirmedFromBroker = .makeBoxSendingValue([], as: Set<UInt16>.self, eventLoop: link.eventLoop)
        recentPublishes = .makeBoxSendingValue(EchoMemory(), as: EchoMemory.self, eventLoop: link.eventLoop)
        settledBatch = .makeBoxSendingValue([], as: [(token: UInt64, outcome: DeliveryOutcome)].self, eventLoop: link.eventLoop)
    }

    // MARK: Entry points (any thread)

    /// The router has room again on the `messages` port: everything held is offered again.
    func resume() {
        link.eventLoop.execute {
            self.redeliveryTimer.value?.cancel()
            self.redeliveryTimer.value = nil
            self.offerHeld(probing: false)
        }
    }

    /// The router has finished with an inbound publish. Delivered (or refused for good, which
    /// is counted in `mqtt_unconfirmed_deliveries_total`): confirmed to the broker. Retry: held
    /// unconfirmed and offered again (`mqtt_redelivered_to_router_total`).
    func settled(token: UInt64, outcome: DeliveryOutcome) {
        // Settlements are handed to the event loop in batches, like publishes.
        if settledTokens.add((token, outcome)) { link.eventLoop.execute { self.takeSettlements() } }
    }

    // MARK: Event loop

    /// Shutting down: what is held stays unconfirmed, the broker's (kept for the session).
    func quiesce() {
        blockedInbound.value.removeAll()
        redeliveryTimer.value?.cancel()
        redeliveryTimer.value = nil
    }

    func stop() {
        redeliveryTimer.value?.cancel()
    }

    /// The connection is gone: QoS 2 packet ids awaiting PUBREL mean nothing on the next one.
    func connectionLost() {
        receivedQoS2.value.removeAll()
        unconfirmedFromBroker.value.removeAll()
    }

    /// PUBREL: the QoS 2 exchange of `packetID` is over (the link answers PUBCOMP).
    func released(_ packetID: UInt16) {
        receivedQoS2.value.remove(packetID)
        unconfirmedFromBroker.value.remove(packetID)
    }

    /// Counts a QoS ≥ 1 publish against the Receive Maximum; false when the broker sent more
    /// unconfirmed publishes than it was allowed (MQTT 5 §4.9: a protocol error, 0x93).
    func admit(_ publish: MQTTPublish) -> Bool {
        guard link.configuration.version == .v5, publish.qos != .atMostOnce, let id = publish.packetID else { return true }
        unconfirmedFromBroker.value.insert(id)
        return unconfirmedFromBroker.value.count <= link.configuration.receiveMaximum
    }

    var suppressesEchoes: Bool {
        link.configuration.version == .v3_1_1 && link.configuration.echoSuppression && !link.configuration.subscriptions.isEmpty
    }

    /// Remembers a publish the link sends, to recognise the broker's echo of it.
    func remember(_ publish: MQTTPublish) {
        guard suppressesEchoes else { return }
        recentPublishes.value.insert(topic: publish.topic, payload: publish.payload, at: .now())
    }

    /// Whether nothing waits for room in the router and nothing taken waits for its settlement.
    var isIdle: Bool { unsettled.value.isEmpty && blockedInbound.value.isEmpty && probeToken.value == nil }

    /// Whether inbound publishes wait in the link (the socket is not read meanwhile).
    var holdingInbound: Bool { !blockedInbound.value.isEmpty || probeToken.value != nil }

    func receivedPublish(_ publish: MQTTPublish, on channel: any Channel) {
        // After quiesce nothing more is taken: unacknowledged, the broker keeps it for the
        // session (or drops it with a clean start), and nothing accepted is lost.
        guard link.reading else { return }
        if suppressesEchoes, recentPublishes.value.remove(topic: publish.topic, payload: publish.payload, now: .now()) {
            link.context.metric(.counter, "mqtt_echoes_dropped_total", 1)
            confirmWithoutTaking(publish, on: channel)
            return
        }
        if publish.qos == .exactlyOnce, let id = publish.packetID, receivedQoS2.value.contains(id) {
            // A resend before PUBREL: already taken once, only acknowledge again.
            link.output.write(.pubrec(MQTTAck(packetID: id)), on: channel)
            return
        }
        inboundSequence.value &+= 1
        let inbound = Inbound(publish: publish, sequence: inboundSequence.value, connection: link.connectionNumber)
        // Later publishes wait behind held ones, so the router sees them in arrival order.
        if holdingInbound {
            blockedInbound.value.append(inbound)
            return
        }
        if emit(inbound) == nil {
            blockedInbound.value.append(inbound)
            _ = channel.setOption(ChannelOptions.autoRead, value: false)
        }
    }

    /// Emits an inbound publish: nil when the router is full (nothing was taken), otherwise
    /// the settle token it was emitted with (0: nothing to confirm).
    private func emit(_ inbound: Inbound) -> UInt64? {
        let publish = inbound.publish
        // A packet id means something only on the connection it came with.
        let confirmable = publish.qos != .atMostOnce && publish.packetID != nil && inbound.connection == link.connectionNumber
        var token: UInt64 = 0
        if confirmable, let id = publish.packetID {
            nextSettleToken.value &+= 1
            token = nextSettleToken.value
            unsettled.value[token] = inbound
            if publish.qos == .exactlyOnce { receivedQoS2.value.insert(id) }
        }
        // MQTT Connect hook: the profile types a phone's payload and takes its session object.
        let envelope = MQTTEnvelopes.envelope(for: publish, version: link.configuration.version, connect: link.configuration.connect)
        if let forgotten = link.configuration.connect?.takeForgotten(), forgotten > 0 {
            link.context.metric(.counter, "mqttconnect_sessions_forgotten_total", Double(forgotten))
        }
        let result = link.context.emit(envelope, on: "messages", settleToken: token)
        if result != .ok, token != 0 {
            // Not taken: unconfirmed, so the broker sends it again (a QoS 2 resend must then
            // be taken, not only answered).
            unsettled.value.removeValue(forKey: token)
            if let id = publish.packetID { receivedQoS2.value.remove(id) }
        }
        switch result {
        case .ok:
            if inbound.handedBack { link.context.metric(.counter, "mqtt_redelivered_to_router_total", 1) }
            return token
        case .full:
            return nil
        case .stopped:
            // The router is shutting down and takes nothing more; neither does this link (and
            // an adoption leaves the rest of the session to the broker).
            link.reading = false
            return 0
        case let refusal:
            // Refused for good: confirmed like a failed delivery, or the broker would send it
            // again after every reconnect.
            link.context.metric(.counter, "mqtt_unconfirmed_deliveries_total", 1)
            link.context.log(.error, "router refused a publish on \(publish.topic): \(refusal); confirmed to the broker anyway")
            if confirmable, let channel = link.channel { confirmWithoutTaking(publish, on: channel) }
            return 0
        }
    }

    /// Confirms an inbound QoS ≥ 1 publish that goes nowhere: PUBACK, or PUBREC with the id
    /// remembered until PUBREL (a resend before then is only answered).
    private func confirmWithoutTaking(_ publish: MQTTPublish, on channel: any Channel) {
        guard let id = publish.packetID, publish.qos != .atMostOnce else { return }
        let ack = MQTTAck(packetID: id)
        if publish.qos == .exactlyOnce { receivedQoS2.value.insert(id) } else { unconfirmedFromBroker.value.remove(id) }
        link.output.write(publish.qos == .exactlyOnce ? .pubrec(ack) : .puback(ack), on: channel, flush: false)
    }

    /// Offers held publishes to the router, oldest first, until it is full. `probing` offers
    /// only the oldest when it was handed back: while it is not taken for good, neither would
    /// the others be, and offering them all every time would only churn.
    private func offerHeld(probing: Bool) {
        while let first = blockedInbound.value.first {
            guard let token = emit(first) else { return }  // full: the router calls resume()
            blockedInbound.value.removeFirst()
            if probing, first.handedBack, token != 0 {
                probeToken.value = token
                return
            }
        }
        guard probeToken.value == nil else { return }
        _ = link.channel?.setOption(ChannelOptions.autoRead, value: true)
        link.channel?.read()
    }

    private func takeSettlements() {
        settledTokens.takeAll(into: &settledBatch.value)
        defer { settledBatch.value.removeAll(keepingCapacity: true) }
        for (token, outcome) in settledBatch.value {
            guard let inbound = unsettled.value.removeValue(forKey: token) else { continue }
            let probe = token == probeToken.value
            if probe { probeToken.value = nil }
            if outcome == .retry {
                handBack(inbound)
                continue
            }
            if outcome == .ok {
                redeliveryDelay.value = Self.redeliveryBackoff.lowerBound
            } else {
                link.context.metric(.counter, "mqtt_unconfirmed_deliveries_total", 1)
                link.context.log(
                    .warning, "an inbound publish on \(inbound.publish.topic) was refused for good (\(outcome)); confirmed to the broker")
            }
            confirm(inbound)
            // The probe was taken: the route takes again, so the rest follow.
            if probe { offerHeld(probing: false) }
        }
        link.adoption?.checkDrained()
    }

    /// PUBACK or PUBREC, on the connection the publish came with (on another one its packet
    /// id means something else: the broker redelivers it there, unconfirmed, if it kept the session).
    private func confirm(_ inbound: Inbound) {
        guard link.connected, inbound.connection == link.connectionNumber, let channel = link.channel, let id = inbound.publish.packetID
        else { return }
        let ack = MQTTAck(packetID: id)
        if inbound.publish.qos == .atLeastOnce { unconfirmedFromBroker.value.remove(id) }
        link.output.write(inbound.publish.qos == .exactlyOnce ? .pubrec(ack) : .puback(ack), on: channel, flush: false)
    }

    /// The router settled an inbound publish with retry: it is not confirmed, and it goes back
    /// in front of later publishes, to be offered again after a pause (or at once when the
    /// router calls resume()).
    private func handBack(_ inbound: Inbound) {
        let current = inbound.connection == link.connectionNumber
        if current, inbound.publish.qos == .exactlyOnce, let id = inbound.publish.packetID { receivedQoS2.value.remove(id) }
        // Shutting down: unconfirmed, it stays the broker's.
        guard link.reading else { return }
        // From an earlier connection into a resumed session: the broker sends it again itself.
        if !current, link.connected, link.sessionResumed { return }
        var held = inbound
        held.handedBack = true
        let index = blockedInbound.value.firstIndex { $0.sequence > held.sequence } ?? blockedInbound.value.endIndex
        blockedInbound.value.insert(held, at: index)
        _ = link.channel?.setOption(ChannelOptions.autoRead, value: false)
        link.context.metric(.counter, "mqtt_handed_back_total", 1)
        if redeliveryTimer.value == nil, probeToken.value == nil {
            let delay = redeliveryDelay.value
            redeliveryDelay.value = min(Self.redeliveryBackoff.upperBound, redeliveryDelay.value * 2)
            // Jitter over the upper half, as for reconnects.
            let jittered = TimeAmount.nanoseconds(delay.nanoseconds / 2 + Int64.random(in: 0...(delay.nanoseconds / 2)))
            if delay == Self.redeliveryBackoff.lowerBound {
                link.context.log(
                    .notice,
                    "the router could not take a publish on \(inbound.publish.topic) yet (retry): held unconfirmed, offered again with backoff"
                )
            }
            redeliveryTimer.value = link.eventLoop.scheduleTask(in: jittered) {
                self.redeliveryTimer.value = nil
                self.offerHeld(probing: true)
            }
        }
    }

    /// A new connection was accepted: publishes held from an earlier one are dropped when the
    /// session was resumed (the broker sends them again), and otherwise offered without a
    /// confirmation (the broker forgot them; they are the only copy).
    func heldAcrossReconnect(on channel: any Channel) {
        if link.sessionResumed {
            blockedInbound.value.removeAll { $0.connection != link.connectionNumber && $0.publish.qos != .atMostOnce }
        }
        guard !blockedInbound.value.isEmpty else { return }
        _ = channel.setOption(ChannelOptions.autoRead, value: false)
        if redeliveryTimer.value == nil { offerHeld(probing: false) }
    }
}
