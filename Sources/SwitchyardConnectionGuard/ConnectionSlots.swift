import Dispatch
public import NIOCore
import Synchronization

/// Where a guard's log lines and metrics go: a plugin's server reports as its instance, the
/// admin port as the router.
public protocol ConnectionGuardReporter: Sendable {
    /// Logs a warning.
    func warning(_ line: String)
    /// Adds one to the counter `name`.
    func count(_ name: String)
    /// Sets the gauge `name`.
    func gauge(_ name: String, _ value: Double)
}

/// The connection slots of one listener, whatever its protocol: how many connections may be
/// open, and how many from one address.
///
/// At the cap, a new connection takes the place of the oldest one that is *waiting* — one that
/// has not completed a request (an HTTP head, a SIP message) since it opened or since its last
/// one: a slow or idle client — which is closed; only when every open connection is in the
/// middle of its work is the new one refused. So clients that trickle bytes cannot hold every
/// slot, and the per-address cap keeps one address from taking most of them. Every refusal and
/// eviction is counted (`<name>_connections_refused_total`, `<name>_connections_evicted_total`)
/// and logged at a bounded rate; `<name>_connections_open` and `<name>_connections_waiting` are
/// gauges.
public final class ConnectionSlots: Sendable {
    /// The cap on open connections (`max_connections`).
    public let maximumConnections: Int
    /// The cap on open connections from one address (`max_connections_per_peer`).
    public let maximumPerPeer: Int
    /// Where its log lines and metrics go (the plugin instance's, or the router's own).
    public let reporter: any ConnectionGuardReporter
    /// What the listener is called in logs and metric names (`webhook`, `admin`, `tcp`).
    public let name: String
    /// What a waiting connection has not completed, for the log (`request head`, `message`).
    let unit: String
    /// Connections open now (any event loop adds and subtracts).
    private let open = Atomic<Int>(0)
    /// The gauges' names, made once rather than per connection.
    private let openMetric: String
    private let waitingMetric: String

    /// The waiting connections, by arrival, and the open ones per address.
    private struct Registry {
        var next: UInt64 = 0
        var waiting: [UInt64: any Channel] = [:]
        var perPeer: [String: Int] = [:]
    }

    private let registry = Mutex(Registry())
    /// Refusals and evictions are logged at most ``logBurst`` a second, then counted: the next
    /// line says how many were not logged.
    private let logGate = Mutex<(window: ContinuousClock.Instant, logged: Int, unlogged: Int)>((.now, 0, 0))
    static let logBurst = 5

    /// Slots for the listener `name`, reporting to `reporter`; a waiting connection is one that
    /// has not completed a `unit`. `maximumPerPeer` defaults to an eighth of `maximumConnections`.
    public init(
        name: String, unit: String, maximumConnections: Int, maximumPerPeer: Int? = nil, reporter: any ConnectionGuardReporter
    ) {
        self.name = name
        self.unit = unit
        self.maximumConnections = maximumConnections
        self.maximumPerPeer = maximumPerPeer ?? Self.defaultPerPeer(of: maximumConnections)
        self.reporter = reporter
        openMetric = "\(name)_connections_open"
        waitingMetric = "\(name)_connections_waiting"
    }

    /// The per-address cap when none is configured: an eighth of the connection cap.
    public static func defaultPerPeer(of maximumConnections: Int) -> Int { max(1, maximumConnections / 8) }

    /// One admitted connection's place: give it back with ``release(_:)``.
    public struct Slot: Sendable {
        let id: UInt64
        let peer: String
    }

    /// Takes a slot for `channel`, which starts out waiting. At the cap, the oldest waiting
    /// connection is closed to make room. `refusal` says why the connection must be closed
    /// instead (already counted and logged); the slot is taken either way and must be released.
    public func admit(_ channel: any Channel) -> (slot: Slot, refusal: String?) {
        let peer = channel.remoteAddress?.ipAddress ?? "unknown"
        let (id, overPeerCap) = registry.withLock { registry in
            registry.next += 1
            let count = registry.perPeer[peer, default: 0] + 1
            registry.perPeer[peer] = count
            return (registry.next, count > maximumPerPeer)
        }
        let slot = Slot(id: id, peer: peer)
        let openNow = open.add(1, ordering: .relaxed).newValue
        reporter.gauge(openMetric, Double(openNow))
        if overPeerCap {
            return (slot, refuse(channel, "\(maximumPerPeer) connections from this address are open (max_connections_per_peer)"))
        }
        if openNow > maximumConnections {
            // A slow or idle client's slot goes to the new one; only when all are busy is it refused.
            guard let victim = evictOldestWaiting(besides: id) else {
                return (slot, refuse(channel, "\(maximumConnections) connections are open (max_connections)"))
            }
            reporter.count("\(name)_connections_evicted_total")
            logBounded(
                "\(name) connection from \(Self.describe(victim.remoteAddress)) closed: it had sent no complete \(unit), and \(maximumConnections) connections were open (max_connections)"
            )
            victim.close(promise: nil)
        }
        setWaiting(true, slot: slot, channel: channel)
        return (slot, nil)
    }

    private func refuse(_ channel: any Channel, _ reason: String) -> String {
        reporter.count("\(name)_connections_refused_total")
        let reason = "connection refused: \(reason)"
        logBounded("\(name) connection from \(Self.describe(channel.remoteAddress)) \(reason)")
        return reason
    }

    /// Gives back the slot of a connection that closed.
    public func release(_ slot: Slot) {
        let openNow = open.subtract(1, ordering: .relaxed).newValue
        reporter.gauge(openMetric, Double(openNow))
        let waiting = registry.withLock { registry in
            registry.waiting.removeValue(forKey: slot.id)
            let count = registry.perPeer[slot.peer, default: 1] - 1
            registry.perPeer[slot.peer] = count > 0 ? count : nil
            return registry.waiting.count
        }
        reporter.gauge(waitingMetric, Double(waiting))
    }

    /// The connection in `slot` waits for a request (`true`: it may be closed to make room) or
    /// is in the middle of one.
    public func setWaiting(_ waiting: Bool, slot: Slot, channel: any Channel) {
        let count = registry.withLock { registry in
            if waiting { registry.waiting[slot.id] = channel } else { registry.waiting.removeValue(forKey: slot.id) }
            return registry.waiting.count
        }
        // How many connections wait now: slow or idle clients.
        reporter.gauge(waitingMetric, Double(count))
    }

    /// Takes the oldest waiting connection (not `id`) out of the waiting set, to be closed; nil
    /// when every other connection is in a request.
    private func evictOldestWaiting(besides id: UInt64) -> (any Channel)? {
        registry.withLock { registry in
            guard let oldest = registry.waiting.keys.lazy.filter({ $0 != id }).min() else { return nil }
            return registry.waiting.removeValue(forKey: oldest)
        }
    }

    /// A peer's address as a person writes it (`192.0.2.7:51234`, `[2001:db8::7]:51234`).
    public static func describe(_ address: SocketAddress?) -> String {
        guard let address, let ip = address.ipAddress else { return "an unknown address" }
        let port = address.port.map { ":\($0)" } ?? ""
        return ip.contains(":") ? "[\(ip)]\(port)" : ip + port
    }

    /// Logs `line` unless ``logBurst`` lines were logged in the last second (then it is counted,
    /// and the next line logged says how many were not; when no line comes within a second, a
    /// line of its own says it, so every event is in the log or in such a count).
    public func logBounded(_ line: String) {
        let (unlogged, startsSuppressing): (Int?, Bool) = logGate.withLock { gate in
            let now = ContinuousClock.now
            if now - gate.window >= .seconds(1) { (gate.window, gate.logged) = (now, 0) }
            guard gate.logged < Self.logBurst else {
                gate.unlogged += 1
                return (nil, gate.unlogged == 1)
            }
            gate.logged += 1
            defer { gate.unlogged = 0 }
            return (gate.unlogged, false)
        }
        if startsSuppressing {
            DispatchQueue.global().asyncAfter(deadline: .now() + 1.1) { [self] in flushUnlogged() }
        }
        guard let unlogged else { return }
        reporter.warning(unlogged > 0 ? "\(line) (and \(unlogged) more in the last second, not logged)" : line)
    }

    /// Logs how many lines were held back, when no later line said it.
    private func flushUnlogged() {
        let unlogged = logGate.withLock { gate in
            defer { gate.unlogged = 0 }
            return gate.unlogged
        }
        guard unlogged > 0 else { return }
        reporter.warning("\(name) listener: \(unlogged) more refused, evicted or timed-out connections in the last second, not logged")
    }
}
