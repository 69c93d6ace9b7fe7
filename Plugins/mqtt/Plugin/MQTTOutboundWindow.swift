import DequeModule
import MQTTCodec
import SwitchyardPluginKit

/// The link's publishes to the broker: those waiting for a connection or for room in the
/// inflight window, and the QoS ≥ 1 ones sent and not yet completed, in send order, by packet
/// id. Owned by the link and only touched on its event loop.
struct MQTTOutboundWindow {
    /// A publish the router handed over, with the delivery to acknowledge when the broker has it.
    struct Outbound {
        var publish: MQTTPublish
        var delivery: Delivery
        /// Set once PUBREC arrived (QoS 2): the PUBREL stage.
        var released = false
        /// The packet id it was last sent with, before the connection was lost.
        var previousPacketID: UInt16?
    }

    /// The inflight window in force: the configured one, capped by the broker.
    var limit: Int
    private var nextPacketID: UInt16 = 0
    /// QoS ≥ 1 publishes sent and not yet completed, in send order.
    private var inflight: [UInt16: Outbound] = [:]
    private var inflightOrder: Deque<UInt16> = []
    /// Publishes waiting for a connection or for room in the inflight window.
    private var pending: Deque<Outbound> = []

    init(limit: Int) {
        self.limit = limit
    }

    /// Queues a QoS ≥ 1 publish behind the others.
    mutating func enqueue(_ outbound: Outbound) {
        pending.append(outbound)
    }

    /// The next waiting publish if the window has room, with its packet id assigned and
    /// counted as in flight. Resending into a resumed session: same packet id, DUP set (MQTT
    /// 4.4). Into a new session it is a first attempt again.
    mutating func nextToSend(sessionResumed: Bool) -> MQTTPublish? {
        guard !pending.isEmpty, inflight.count < limit else { return nil }
        var outbound = pending.removeFirst()
        let resend = sessionResumed ? outbound.previousPacketID.flatMap { inflight[$0] == nil ? $0 : nil } : nil
        let id = resend ?? nextID()
        outbound.publish.dup = resend != nil
        outbound.publish.packetID = id
        inflight[id] = outbound
        inflightOrder.append(id)
        return outbound.publish
    }

    /// Whether `packetID` is a publish in flight.
    func isInflight(_ packetID: UInt16) -> Bool { inflight[packetID] != nil }

    /// PUBREC arrived for `packetID` (QoS 2): it is in the PUBREL stage.
    mutating func markReleased(_ packetID: UInt16) {
        inflight[packetID]?.released = true
    }

    /// Takes the completed publish `packetID` out of the window; nil when none has that id.
    mutating func complete(_ packetID: UInt16) -> Outbound? {
        guard let outbound = inflight.removeValue(forKey: packetID) else { return nil }
        // Acknowledgements come nearly in order: drop completed ids from the front only.
        while let first = inflightOrder.first, inflight[first] == nil { inflightOrder.removeFirst() }
        return outbound
    }

    /// The connection was lost: what the broker had not confirmed goes again, first, in the
    /// order it was sent, remembering the packet id it had.
    mutating func requeueUnconfirmed() {
        let unconfirmed = inflightOrder.compactMap { inflight[$0] }.map { outbound -> Outbound in
            var again = outbound
            again.previousPacketID = outbound.publish.packetID
            return again
        }
        inflight.removeAll()
        inflightOrder.removeAll()
        pending.insert(contentsOf: unconfirmed, at: 0)
    }

    /// Empties the window (the link stops): what was waiting, and what was sent and not
    /// confirmed, each in order.
    mutating func removeAll() -> (pending: [Outbound], unconfirmed: [Outbound]) {
        let taken = (Array(pending), inflightOrder.compactMap { inflight[$0] })
        pending.removeAll()
        inflight.removeAll()
        inflightOrder.removeAll()
        return taken
    }

    /// A packet id no publish in flight uses (1…65535, round robin).
    mutating func nextID() -> UInt16 {
        repeat {
            nextPacketID = nextPacketID == UInt16.max ? 1 : nextPacketID + 1
        } while inflight[nextPacketID] != nil
        return nextPacketID
    }
}
