import MQTTCodec
import NIOCore
import SwitchyardPluginKit
import Synchronization

/// Publishes from the router to the broker: taken from any thread in batches, sent in order
/// with an inflight window (QoS ≥ 1 publishes wait for PUBACK, or PUBREC then PUBCOMP), and
/// acknowledged to the router only once the broker confirmed them. The window is confined to
/// the link's event loop; `outstanding` is atomic and the inbox a ``Handoff``.
final class MQTTPublisher: Sendable {
    private struct State {
        /// Publishes to the broker: waiting, and sent and not yet completed.
        var window: MQTTOutboundWindow
        /// The batch taken from `inbox`, kept so its storage is reused.
        var inboxBatch: [(MQTTPublish, Delivery)] = []
    }

    unowned let link: MQTTConnectionState
    /// The link's inbound side: it remembers what is published, to recognise echoes.
    let inbound: MQTTInbound
    private let state: NIOLoopBoundBox<State>
    /// Publishes taken from the router and not yet acknowledged to it (any thread reads it).
    private let outstanding = Atomic<Int>(0)
    /// Publishes handed over by the router, waiting for the event loop.
    private let inbox = Handoff<(MQTTPublish, Delivery)>()

    init(link: MQTTConnectionState, inbound: MQTTInbound) {
        self.inbound = inbound
        self.link = link
        state = .makeBoxSendingValue(State(window: MQTTOutboundWindow(limit: link.configuration.inflightWindow)), eventLoop: link.eventLoop)
    }

    // MARK: Any thread

    /// Whether another publish fits: QoS ≥ 1 publishes wait (in order) for the broker, at
    /// most `max_pending` of them, and the socket's send buffer must be below its high water
    /// mark; otherwise the router holds back.
    var hasRoom: Bool {
        outstanding.load(ordering: .relaxed) < link.configuration.maximumPending && link.output.isWritable
    }

    /// How many publishes may still be outstanding when the router is told of room again
    /// after it was held back at `max_pending`: a quarter of them must have been confirmed, so
    /// the route comes back for a batch rather than for one publish per PUBACK.
    private var roomAgainAt: Int {
        let limit = link.configuration.maximumPending
        return limit - max(1, limit / 4)
    }

    /// The socket drained below its low water mark: room again, unless `max_pending` still
    /// holds the router back (then the PUBACKs announce it).
    func socketDrained() {
        if outstanding.load(ordering: .relaxed) < link.configuration.maximumPending { link.context.sinkHasRoom() }
    }

    /// Takes a publish from the router. Publishes are handed to the event loop in batches:
    /// only the first of a batch wakes it, so a stream does not cost a wake-up per message.
    /// On the event loop itself (a route delivering inline from a link's read) a QoS 0 publish
    /// with none waiting before it is written at once, without a turn through the loop's task
    /// queue. QoS ≥ 1 publishes keep the batch: the window sends them once per turn, and taking
    /// them one by one measured no better (Benchmarks/RESULTS.md, tenth session).
    func publish(_ publish: MQTTPublish, delivery: Delivery) {
        outstanding.add(1, ordering: .relaxed)
        if publish.qos == .atMostOnce, link.eventLoop.inEventLoop, state.value.inboxBatch.isEmpty {
            // With a batch in hand (an ack made during `takeInbox` led the router back here),
            // the rest of that batch goes first: this one takes the inbox.
            guard !inbox.addBehindWaiting((publish, delivery)) else { return }
            take(publish, delivery: delivery)
            sendPending()
        } else if inbox.add((publish, delivery)) {
            link.eventLoop.execute { self.takeInbox() }
        }
    }

    // MARK: Event loop

    /// The next packet id for a SUBSCRIBE or UNSUBSCRIBE (the window keeps one free).
    func nextID() -> UInt16 { state.value.window.nextID() }

    /// The broker's Receive Maximum caps how many QoS ≥ 1 publishes may await it.
    func connected(receiveMaximum: UInt16?) {
        state.value.window.limit = min(link.configuration.inflightWindow, Int(receiveMaximum ?? UInt16.max))
        sendPending()
    }

    /// The connection is gone: what was sent and not confirmed goes again, first, with DUP.
    func connectionLost() { state.value.window.requeueUnconfirmed() }

    /// The link stops: everything waiting is failed back to the router (it retries).
    func failAll() {
        let (pending, unconfirmed) = state.value.window.removeAll()
        for outbound in pending { finish(outbound.delivery, .retry, reason: "mqtt link stopped") }
        for outbound in unconfirmed { finish(outbound.delivery, .retry, reason: "mqtt link stopped before the broker confirmed") }
    }

    /// PUBREC: false for a packet id that is not in flight (a protocol violation).
    func received(_ ack: MQTTAck, on channel: any Channel) -> Bool {
        guard state.value.window.isInflight(ack.packetID) else { return false }
        if ack.reasonCode >= 0x80 {
            complete(ack.packetID, reasonCode: ack.reasonCode, stage: "PUBREC")
            return true
        }
        state.value.window.markReleased(ack.packetID)
        link.output.write(.pubrel(MQTTAck(packetID: ack.packetID)), on: channel, flush: false)
        return true
    }

    /// PUBACK or PUBCOMP: the publish is done, confirmed or refused by the broker.
    func complete(_ packetID: UInt16, reasonCode: UInt8, stage: String) {
        guard let completed = state.value.window.complete(packetID) else {
            link.context.log(.warning, "\(stage) for unknown packet id \(packetID) ignored")
            return
        }
        if reasonCode >= 0x80 {
            finish(completed.delivery, .reject, reason: "broker answered \(stage) with reason 0x\(String(reasonCode, radix: 16))")
        } else {
            finish(completed.delivery, .ok)
        }
        sendPending()
    }

    private func sendPending() {
        guard link.connected, let channel = link.channel else { return }
        while let publish = state.value.window.nextToSend(sessionResumed: link.sessionResumed) {
            inbound.remember(publish)
            link.output.write(.publish(publish), on: channel, flush: false)
        }
    }

    private func takeInbox() {
        inbox.takeAll(into: &state.value.inboxBatch)
        for (publish, delivery) in state.value.inboxBatch { take(publish, delivery: delivery) }
        state.value.inboxBatch.removeAll(keepingCapacity: true)
        sendPending()
    }

    private func take(_ publish: MQTTPublish, delivery: Delivery) {
        guard !link.stopped else { return finish(delivery, .retry, reason: "mqtt link stopped") }
        guard publish.qos == .atMostOnce else {
            state.value.window.enqueue(MQTTOutboundWindow.Outbound(publish: publish, delivery: delivery))
            return
        }
        guard link.connected, let channel = link.channel else {
            return finish(delivery, .retry, reason: "not connected to the broker (QoS 0 is not kept)")
        }
        inbound.remember(publish)
        // QoS 0 is at most once: handed to the socket in order is as delivered as it gets, and
        // a future per message would cost more than the message.
        link.output.write(.publish(publish), on: channel, flush: false)
        finish(delivery, .ok)
    }

    /// Acknowledges a delivery to the router and frees its place; the router, if it was held
    /// back, hears of the room once there is enough (``roomAgainAt``) and the socket takes bytes.
    private func finish(_ delivery: Delivery, _ outcome: DeliveryOutcome, reason: String = "") {
        let left = outstanding.subtract(1, ordering: .relaxed).newValue
        delivery.ack(outcome, reason: reason)
        if left <= roomAgainAt, link.output.isWritable { link.context.sinkHasRoom() }
    }
}
