import Dispatch
import Foundation
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// Session takeover for a shared subscription (`share:` without a `client_id`): the routers
/// sharing a store keep each other's MQTT sessions from being lost with a router.
///
/// - Each start connects under a fresh client id (``MQTTLinkConfiguration/freshClientID(instance:)``)
///   with a session the broker keeps, and registers it in the instance's state as
///   `members/<id>`, under the store's hold `member <id>` — held for as long as the router
///   lives and reaches the store (a PostgreSQL session whose keepalive is the heartbeat; a
///   router that is killed loses it at once, one that is cut off within about 11 s).
/// - Every ``scanInterval`` each router reads the members and waits for the hold of every
///   member but itself. A grant means that member lapsed: the router drains its session
///   (``MQTTSessionAdoption``) and then removes the member. The hold decides who takes over,
///   so two routers never drain one id at once.
/// - A router that loses its own hold (the store connection broke) may have its session taken
///   over from then on: it never connects under that id again, and moves to a fresh id at its
///   next connection (at once when the broker says Session Taken Over, 0x8E). So a takeover
///   never ping-pongs, and a router that comes back carries on with a fresh session.
/// Without a shared store the router's own spool keeps the members, and the next start drains
/// what the last one left.
///
/// State and control work run on `queue` (state calls block on the store); `state` is locked.
final class MQTTMembership: Sendable {
    private struct State {
        var ownID: String
        var ownHold: PluginHold?
        var registered = false
        var linkStarted = false
        /// Holds asked for on other members: granted when the member lapsed.
        var watches: [String: PluginHold] = [:]
        /// Sessions being drained, by member id, with the link's number.
        var adoptions: [String: (link: MQTTLink, number: UInt64)] = [:]
        var lastAdoptionNumber: UInt64 = 0
        var stopped = false
    }

    /// How often the members are read (new members are watched from then on).
    static let scanInterval = DispatchTimeInterval.seconds(5)
    /// How long a start waits for its own hold before it connects without it.
    static let registrationPatience = DispatchTimeInterval.seconds(5)
    static let memberPrefix = "members/"

    private let link: MQTTLink
    private let context: PluginContext
    private let instance: String
    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "switchyard.mqtt.members")

    init(link: MQTTLink, instance: String) {
        self.link = link
        context = link.context
        self.instance = instance
        state = Mutex(State(ownID: link.configuration.clientID))
    }

    // MARK: Life cycle (the plugin's entries)

    /// Registers this router's id, then starts the instance's link (or after
    /// ``registrationPatience`` without it), and begins watching the other members.
    func start() {
        context.metric(.gauge, "ready", 0)
        queue.async {
            self.claim(self.state.withLock { $0.ownID })
            self.scan()
        }
        queue.asyncAfter(deadline: .now() + Self.registrationPatience) {
            guard self.startLinkOnce() else { return }
            self.context.log(
                .warning,
                "could not register MQTT session \(self.state.withLock { $0.ownID }) in the store within 5s; connected anyway (until it registers, no other router can take it over)"
            )
        }
    }

    func quiesce() {
        for adoption in state.withLock({ $0.adoptions.values.map(\.link) }) { adoption.quiesce() }
    }

    /// Stops the adoptions (their sessions stay at the broker, registered) and gives every
    /// hold up: another router takes over what this one's session still holds.
    func stop() {
        let (links, holds) = state.withLock { state in
            state.stopped = true
            defer {
                state.adoptions.removeAll()
                state.watches.removeAll()
                state.ownHold = nil
            }
            return (state.adoptions.values.map(\.link), Array(state.watches.values) + [state.ownHold].compactMap { $0 })
        }
        for adoption in links { adoption.stop() }
        for hold in holds { hold.release() }
    }

    func resume() {
        for adoption in state.withLock({ $0.adoptions.values.map(\.link) }) { adoption.resume() }
    }

    /// A settlement for a publish an adoption emitted (its token's top 16 bits are the link's number).
    func settled(token: UInt64, outcome: DeliveryOutcome) {
        let number = token >> 48
        let adoption = state.withLock { $0.adoptions.values.first { $0.number == number }?.link }
        adoption?.settled(token: token, outcome: outcome)
    }

    /// The broker handed this router's session to another client: the id is given up, and the
    /// next connection uses the fresh one this returns. On the link's event loop.
    func sessionTakenOver() -> String {
        forfeit(reason: "the broker says another client took over its session (0x8E)")
    }

    // MARK: This router's id (queue)

    private func claim(_ id: String) {
        do {
            let hold = try context.hold("member \(id)") { held in
                self.queue.async { held ? self.ownHoldGranted(id) : self.ownHoldLost(id) }
            }
            let kept = state.withLock { state in
                guard !state.stopped, state.ownID == id else { return false }
                state.ownHold = hold
                return true
            }
            if !kept { hold.release() }
        } catch {
            context.log(.error, "cannot register MQTT session \(id) for takeover: \(error.message)")
            _ = startLinkOnce()
        }
    }

    private func ownHoldGranted(_ id: String) {
        guard state.withLock({ !$0.stopped && $0.ownID == id }) else { return }
        register(id)
        _ = startLinkOnce()
    }

    private func register(_ id: String) {
        let record: JSONValue = [
            "host": .string(MQTTLinkConfiguration.hostName()), "pid": .int(Int(getpid())),
            "since": .string(Date.now.formatted(.iso8601)),
        ]
        do {
            try context.state.setValue(record.serializedBytes(), forKey: Self.memberPrefix + id)
            state.withLock { if $0.ownID == id { $0.registered = true } }
        } catch {
            context.log(.warning, "cannot register MQTT session \(id) in the store (trying again): \(error.message)")
        }
    }

    private func ownHoldLost(_ id: String) {
        guard state.withLock({ !$0.stopped && $0.ownID == id }) else { return }
        let next = forfeit(reason: "the store's hold on it was lost")
        link.eventLoop.execute { self.link.connectAs.clientID = next }
    }

    /// Gives up the current id for a fresh one (claimed in the background); returns the new id.
    private func forfeit(reason: String) -> String {
        let fresh = MQTTLinkConfiguration.freshClientID(instance: instance)
        let (old, hold) = state.withLock { state in
            defer {
                state.ownID = fresh
                state.ownHold = nil
                state.registered = false
            }
            return (state.ownID, state.ownHold)
        }
        context.log(.warning, "MQTT session \(old): \(reason); another router may take it over, and this one connects as \(fresh) from its next connection")
        queue.async {
            hold?.release()
            self.claim(fresh)
        }
        return fresh
    }

    /// Starts the instance's link unless it has started; true when this call started it.
    private func startLinkOnce() -> Bool {
        let start = state.withLock { state in
            defer { state.linkStarted = true }
            return !state.linkStarted && !state.stopped
        }
        if start { link.start() }
        return start
    }

    // MARK: Other members (queue)

    private func scan() {
        defer {
            if !state.withLock({ $0.stopped }) { queue.asyncAfter(deadline: .now() + Self.scanInterval) { self.scan() } }
        }
        let members: [String]
        do {
            members = try context.state.values(withPrefix: Self.memberPrefix).map { String($0.key.dropFirst(Self.memberPrefix.count)) }
        } catch {
            return  // the store is away: the next scan tries again (the state service logs it)
        }
        let (own, registered) = state.withLock { ($0.ownID, $0.registered) }
        if !registered, state.withLock({ $0.ownHold != nil }) { register(own) }
        let listed = Set(members)
        let (released, toWatch) = state.withLock { state in
            // A member another router drained is gone from the list: stop waiting for it.
            let gone = state.watches.keys.filter { !listed.contains($0) && state.adoptions[$0] == nil }
            let released = gone.compactMap { state.watches.removeValue(forKey: $0) }
            let toWatch = members.filter { $0 != own && state.watches[$0] == nil && state.adoptions[$0] == nil }
            return (released, toWatch)
        }
        for hold in released { hold.release() }
        for member in toWatch { watch(member) }
    }

    private func watch(_ member: String) {
        do {
            let hold = try context.hold("member \(member)") { held in
                self.queue.async { held ? self.lapsed(member) : self.watchLost(member) }
            }
            let kept = state.withLock { state in
                guard !state.stopped, state.watches[member] == nil else { return false }
                state.watches[member] = hold
                return true
            }
            if !kept { hold.release() }
        } catch {
            context.log(.error, "cannot watch MQTT session \(member) for takeover: \(error.message)")
        }
    }

    /// This router holds `member`'s hold: the member lapsed. Its session is drained unless
    /// another router did so already.
    private func lapsed(_ member: String) {
        guard !state.withLock({ $0.stopped }) else { return }
        let present: Bool
        do {
            present = try context.state.value(forKey: Self.memberPrefix + member) != nil
        } catch {
            return unwatch(member)  // tried again at the next scan
        }
        guard present else { return unwatch(member) }
        let adoption = MQTTSessionAdoption(memberID: member, eventLoop: link.eventLoop) { outcome in
            self.queue.async { self.adoptionEnded(member, outcome) }
        }
        let number = state.withLock { state in
            state.lastAdoptionNumber = state.lastAdoptionNumber % 0xFFFF + 1
            return state.lastAdoptionNumber
        }
        let adopter = MQTTLink(
            configuration: link.configuration.adopting(member), context: context, instance: instance, adoption: adoption,
            settleTokenBase: number << 48)
        adoption.attach(adopter)
        guard state.withLock({ state in
            guard !state.stopped else { return false }
            state.adoptions[member] = (adopter, number)
            return true
        })
        else { return }
        context.log(.notice, "MQTT session \(member) lapsed (its router is gone or cut off from the store): taking it over")
        adopter.start()
    }

    private func adoptionEnded(_ member: String, _ outcome: MQTTSessionAdoption.Outcome) {
        let adopter = state.withLock { $0.adoptions.removeValue(forKey: member)?.link }
        adopter?.stop()
        switch outcome {
        case .drained(let publishes):
            do {
                try context.state.removeValue(forKey: Self.memberPrefix + member)
            } catch {
                context.log(.warning, "took over MQTT session \(member) but cannot remove it from the store: \(error.message)")
            }
            context.metric(.counter, "mqtt_sessions_taken_over_total", 1)
            context.metric(.counter, "mqtt_taken_over_publishes_total", Double(publishes))
            context.log(.notice, "took over MQTT session \(member): \(publishes) publishes passed on, session ended")
        case .failed(let reason):
            context.log(.warning, "taking over MQTT session \(member) failed: \(reason); trying again later")
        }
        unwatch(member)
    }

    /// The hold on `member` broke (this router's store connection): whatever it was draining
    /// stays at the broker for the router that holds it next.
    private func watchLost(_ member: String) {
        let adopter = state.withLock { state in
            state.watches.removeValue(forKey: member)
            return state.adoptions.removeValue(forKey: member)?.link
        }
        adopter?.stop()
    }

    private func unwatch(_ member: String) {
        state.withLock { $0.watches.removeValue(forKey: member) }?.release()
    }
}
