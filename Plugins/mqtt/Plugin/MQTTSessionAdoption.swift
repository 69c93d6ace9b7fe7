import MQTTCodec
import NIOCore

/// Drains the session a lapsed member of a shared subscription left at the broker: a link of
/// its own connects under the member's client id with `clean_start: false`, so the broker
/// hands it what the member had been sent and not confirmed and what was queued for it since
/// (Mosquitto gives those to no other member, see docs/notes/mosquitto-shared-subscriptions.md).
/// It leaves the group at once (UNSUBSCRIBE: nothing new is queued for the id), passes every
/// publish through the instance's routes as the instance's own link would — confirmed only
/// once the router settled it, so an at-least-once route has spooled it — and ends the session
/// once nothing is left: a clean-start connection under the same id and a DISCONNECT.
///
/// "Nothing is left" is asked of the broker, not guessed from a quiet spell: when every
/// publish is settled and confirmed, a PINGREQ follows the confirmations; the broker answers
/// packets in order, and sends what it still queues as soon as a confirmation frees room, so
/// a PINGRESP with no publish before it means the session is empty.
///
/// An adoption connects once per step and never reconnects: a lost connection (the member
/// itself came back, or another router took the id) ends it as failed, and MQTTMembership
/// tries again later under the store's hold. Its state is confined to the link's event loop.
final class MQTTSessionAdoption: Sendable {
    /// How an adoption ended: drained (with the publishes the broker sent), or failed.
    enum Outcome: Sendable {
        case drained(publishes: Int)
        case failed(String)
    }

    private enum Step {
        /// Waiting for the CONNACK that resumes the member's session.
        case resuming
        /// Taking what the session holds; `barrier` is the publish count when the PINGREQ
        /// that asks whether more follows was sent.
        case draining(unsubscribed: Bool, barrier: Int?)
        /// The drained session's DISCONNECT is sent; a clean start ends it next.
        case ending
        /// The clean-start connection is closing: the session is gone.
        case ended
        case over
    }

    private struct State {
        var step = Step.resuming
        var publishes = 0
        weak var link: MQTTLink?
    }

    /// The member whose session this takes over.
    let memberID: String
    private let state: NIOLoopBoundBox<State>
    private let finished: @Sendable (Outcome) -> Void

    init(memberID: String, eventLoop: any EventLoop, finished: @escaping @Sendable (Outcome) -> Void) {
        self.memberID = memberID
        self.finished = finished
        state = .makeBoxSendingValue(State(), eventLoop: eventLoop)
    }

    /// The link that does the work (set once, before it starts).
    func attach(_ link: MQTTLink) {
        link.eventLoop.execute { self.state.value.link = link }
    }

    // MARK: Called by the link (event loop)

    func connected(sessionPresent: Bool, on channel: any Channel) {
        guard let link = state.value.link else { return }
        switch state.value.step {
        case .resuming where sessionPresent:
            state.value.step = .draining(unsubscribed: false, barrier: nil)
            let filters = link.configuration.subscriptions.map(\.filter)
            // An adoption publishes nothing, so every packet id is free.
            link.output.write(.unsubscribe(MQTTUnsubscribe(packetID: 1, topicFilters: filters)), on: channel)
        case .resuming:
            // The broker kept nothing (it expired, or was never made): end what this CONNECT made.
            end(on: channel, link)
        case .ending:
            state.value.step = .ended
            link.output.write(.disconnect(MQTTDisconnect()), on: channel)
            channel.close(mode: .output, promise: nil)
        case .draining, .ended, .over:
            channel.close(promise: nil)
        }
    }

    func publishArrived() { state.value.publishes += 1 }

    func unsubscribed() {
        guard case .draining(_, let barrier) = state.value.step else { return }
        state.value.step = .draining(unsubscribed: true, barrier: barrier)
        checkDrained()
    }

    /// Asks the broker whether more follows, once everything taken is settled and confirmed.
    func checkDrained() {
        // Not while the router stops: what it did not take stays in the session, for later.
        guard case .draining(true, nil) = state.value.step, let link = state.value.link, link.reading, link.inbound.isIdle,
            let channel = link.channel, link.connected
        else { return }
        state.value.step = .draining(unsubscribed: true, barrier: state.value.publishes)
        link.output.write(.pingreq, on: channel)
    }

    func pong() {
        guard case .draining(true, let barrier?) = state.value.step, let link = state.value.link, let channel = link.channel else { return }
        state.value.step = .draining(unsubscribed: true, barrier: nil)
        if barrier == state.value.publishes, link.reading, link.inbound.isIdle {
            end(on: channel, link)
        } else {
            checkDrained()
        }
    }

    /// The connection closed; the link does not reconnect an adoption on its own.
    func connectionEnded() {
        guard let link = state.value.link else { return }
        switch state.value.step {
        case .ending:
            // Clean start under the member's id: the broker discards the drained session.
            link.connectAs = (memberID, true)
            link.connect()
        case .ended:
            state.value.step = .over
            finished(.drained(publishes: state.value.publishes))
        case .resuming, .draining:
            state.value.step = .over
            finished(.failed("the connection to \(link.peer) ended before the session was drained"))
        case .over:
            break
        }
    }

    private func end(on channel: any Channel, _ link: MQTTLink) {
        state.value.step = .ending
        // After the confirmations still in the buffer; the broker closes its side next.
        link.output.write(.disconnect(MQTTDisconnect()), on: channel)
        channel.close(mode: .output, promise: nil)
    }
}
