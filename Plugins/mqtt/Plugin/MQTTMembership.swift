import Dispatch
import Foundation
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// Session takeover for a shared subscription (`share:` without a `client_id`): the routers
/// sharing a store keep each other's MQTT sessions from being lost with a router.
///
/// - Each connection is made under a client id used for no other (``MQTTLinkConfiguration/freshClientID(instance:)``),
///   with a session the broker keeps, registered beforehand in the instance's state as
///   `members/<id>` under the store's hold `member <id>` — held for as long as the router lives
///   and reaches the store (a PostgreSQL session whose keepalive is the heartbeat; a router
///   that is killed loses it at once, one that is cut off within about 11 s).
/// - Every ``scanInterval`` each router reads the members and waits for the hold of every
///   member but its current id. A grant means that member lapsed: the router drains its
///   session (``MQTTSessionAdoption``) and then removes the member. The hold decides who takes
///   over, so two routers never drain one id at once.
/// - When a connection is lost, the link reconnects under a spare id registered in advance
///   and gives the old id's hold up: the old session (what it had been sent and not
///   confirmed) is drained like a lapsed member's. No id is connected under again once its
///   session may have passed to another router, so a takeover never ping-pongs, and a router
///   that comes back carries on with a fresh session.
/// Without a shared store the router's own spool keeps the members and the router its holds:
/// the next start drains what the last one left.
///
/// Store calls run on `queue` (they block on the store); `state` is locked.
final class MQTTMembership: Sendable {
    /// One of this router's ids, with its hold and whether it is registered.
    private struct Claim {
        let id: String
        var hold: PluginHold?
        var registered = false
    }

    private struct State {
        /// The id the link connects under now.
        var current: Claim
        /// The id the link moves to when its connection is lost, registered in advance.
        var spare: Claim?
        var linkStarted = false
        /// Holds asked for on other members: granted when the member lapsed.
        var watches: [String: PluginHold] = [:]
        /// Sessions being drained, by member id, with the link's number.
        var adoptions: [String: (link: MQTTLink, number: UInt64)] = [:]
        var lastAdoptionNumber: UInt64 = 0
        var stopped = false

        /// The claim for `id`, if it is this router's current or spare id.
        subscript(own id: String) -> Claim? {
            get { current.id == id ? current : spare?.id == id ? spare : nil }
            set {
                guard let newValue else { return }
                if current.id == id { current = newValue } else if spare?.id == id { spare = newValue }
            }
        }
    }

    /// How often the members are read (new members are watched from then on).
    static let scanInterval = DispatchTimeInterval.seconds(5)
    /// How long a start waits for its id to be registered before it connects without.
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
        state = Mutex(State(current: Claim(id: link.configuration.clientID)))
    }

    // MARK: Life cycle (the plugin's entries)

    /// Registers this router's id, then starts the instance's link (or after
    /// ``registrationPatience`` without it), and begins watching the other members.
    func start() {
        context.metric(.gauge, "ready", 0)
        queue.async {
            self.claim(self.state.withLock { $0.current.id })
            self.claimSpare()
            self.scan()
        }
        queue.asyncAfter(deadline: .now() + Self.registrationPatience) {
            guard self.startLinkOnce() else { return }
            self.context.log(
                .warning,
                "could not register MQTT session \(self.state.withLock { $0.current.id }) in the store within 5s; connected anyway (until it registers, no other router can take it over)"
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
            let holds = Array(state.watches.values) + [state.current.hold, state.spare?.hold].compactMap { $0 }
            let links = state.adoptions.values.map(\.link)
            state.adoptions.removeAll()
            state.watches.removeAll()
            state.current.hold = nil
            state.spare = nil
            return (links, holds)
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

    /// The link lost an accepted connection: the id to reconnect under — the spare when it is
    /// registered, else a fresh one registered as soon as the store answers. The old id's hold
    /// is given up, so its session is drained like a lapsed member's. On the link's event loop.
    func nextClientID() -> String {
        let (old, next, spareTaken) = state.withLock { state in
            let old = state.current
            let spareTaken = state.spare?.registered == true
            if spareTaken, let spare = state.spare {
                state.current = spare
                state.spare = nil
            } else {
                state.current = Claim(id: MQTTLinkConfiguration.freshClientID(instance: instance))
            }
            return (old, state.current.id, spareTaken)
        }
        context.log(.info, "reconnecting as MQTT session \(next); the session of \(old.id) is drained by whichever router takes it over")
        queue.async {
            old.hold?.release()
            if !spareTaken { self.claim(next) }
            self.claimSpare()
        }
        return next
    }

    // MARK: This router's ids (queue)

    private func claim(_ id: String) {
        do {
            let hold = try context.hold("member \(id)") { held in
                self.queue.async { held ? self.ownHoldGranted(id) : self.ownHoldLost(id) }
            }
            let kept = state.withLock { state in
                guard !state.stopped, var claim = state[own: id] else { return false }
                claim.hold = hold
                state[own: id] = claim
                return true
            }
            if !kept { hold.release() }
        } catch {
            context.log(.error, "cannot register MQTT session \(id) for takeover: \(error.message)")
            _ = startLinkOnce()
        }
    }

    private func claimSpare() {
        let id = MQTTLinkConfiguration.freshClientID(instance: instance)
        let claiming = state.withLock { state in
            guard !state.stopped, state.spare == nil else { return false }
            state.spare = Claim(id: id)
            return true
        }
        if claiming { claim(id) }
    }

    private func ownHoldGranted(_ id: String) {
        guard state.withLock({ !$0.stopped && $0[own: id] != nil }) else { return }
        register(id)
        if state.withLock({ $0.current.id == id }) { _ = startLinkOnce() }
    }

    private func register(_ id: String) {
        let record: JSONValue = [
            "host": .string(MQTTLinkConfiguration.hostName()), "pid": .int(Int(getpid())), "since": .string(Date.now.formatted(.iso8601)),
        ]
        do {
            try context.state.setValue(record.serializedBytes(), forKey: Self.memberPrefix + id)
            state.withLock { state in
                guard var claim = state[own: id] else { return }
                claim.registered = true
                state[own: id] = claim
            }
        } catch {
            context.log(.warning, "cannot register MQTT session \(id) in the store (trying again): \(error.message)")
        }
    }

    /// The store's hold on one of this router's ids broke: another router may take that
    /// session over from now on. The link stays connected until then (the broker hands the
    /// session over and closes this connection; the link then moves to its spare).
    private func ownHoldLost(_ id: String) {
        // nil: not one of this router's ids (any more); true: the spare, which is replaced.
        let wasSpare: Bool? = state.withLock { state in
            guard !state.stopped, state[own: id] != nil else { return nil }
            guard state.current.id != id else {
                state.current.hold = nil
                return false
            }
            state.spare = nil
            return true
        }
        guard let wasSpare else { return }
        context.log(
            .warning, "lost the store's hold on MQTT session \(id) (\(wasSpare ? "spare" : "current")): another router may take it over")
        if wasSpare { claimSpare() }
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
        // An id whose hold came but whose registration failed is registered now.
        let unregistered = state.withLock { state in
            [state.current, state.spare].compactMap { $0 }.filter { $0.hold != nil && !$0.registered }.map(\.id)
        }
        for id in unregistered { register(id) }
        let own = state.withLock { [$0.current.id, $0.spare?.id].compactMap { $0 } }
        let listed = Set(members)
        let (released, toWatch) = state.withLock { state in
            // A member another router drained is gone from the list: stop waiting for it.
            let gone = state.watches.keys.filter { !listed.contains($0) && state.adoptions[$0] == nil }
            let released = gone.compactMap { state.watches.removeValue(forKey: $0) }
            let toWatch = members.filter { !own.contains($0) && state.watches[$0] == nil && state.adoptions[$0] == nil }
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
        // Where the instance's own link runs and connects, so do its adopters.
        let adopter = MQTTLink(
            configuration: link.configuration.adopting(member), context: context, instance: instance, adoption: adoption,
            settleTokenBase: number << 48, eventLoop: link.eventLoop, dial: link.connector.dial)
        adoption.attach(adopter)
        guard
            state.withLock({ state in
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
