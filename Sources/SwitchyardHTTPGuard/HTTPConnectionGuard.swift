import HTTPTypes
public import NIOCore
public import NIOHTTPTypes
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

/// The limits every connection of one HTTP server shares: how many may be open, how
/// many from one address, how long a client may take to send a request's head and its body.
///
/// At the cap, a new connection takes the place of the oldest one that is waiting for a
/// request head (a slow or idle client), which is closed; only when every open connection is in
/// the middle of a request is the new one refused. So clients that trickle heads cannot hold
/// every slot, and the per-address cap keeps one address from taking most of them.
public final class HTTPConnectionLimits: Sendable {
    let maximumConnections: Int
    let maximumPerPeer: Int
    let headerTimeout: TimeAmount
    let bodyTimeout: TimeAmount
    /// Where its log lines and metrics go (the plugin instance's, or the router's own).
    let reporter: any ConnectionGuardReporter
    /// What the server is called in logs and metric names (`webhook`, `enroll`).
    let name: String
    /// Connections open now (any event loop adds and subtracts).
    let open = Atomic<Int>(0)
    /// The gauges' names, made once rather than per connection.
    let openMetric: String
    let waitingMetric: String

    /// The connections waiting for a request head, by arrival, and the open ones per address.
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

    /// Limits for the server `name`, reporting to `reporter`. `maximumPerPeer` defaults to an
    /// eighth of `maximumConnections` (at least 1).
    public init(
        name: String, maximumConnections: Int, maximumPerPeer: Int? = nil, headerTimeout: Duration, bodyTimeout: Duration,
        reporter: any ConnectionGuardReporter
    ) {
        self.name = name
        self.maximumConnections = maximumConnections
        self.maximumPerPeer = maximumPerPeer ?? Self.defaultPerPeer(of: maximumConnections)
        self.headerTimeout = TimeAmount(headerTimeout)
        self.bodyTimeout = TimeAmount(bodyTimeout)
        self.reporter = reporter
        openMetric = "\(name)_connections_open"
        waitingMetric = "\(name)_connections_waiting"
    }

    /// The per-address cap when none is configured: an eighth of the connection cap.
    public static func defaultPerPeer(of maximumConnections: Int) -> Int { max(1, maximumConnections / 8) }

    /// A new connection from `peer`: its id, and whether that address is over its cap.
    func register(peer: String) -> (id: UInt64, overPeerCap: Bool) {
        registry.withLock { registry in
            registry.next += 1
            let count = registry.perPeer[peer, default: 0] + 1
            registry.perPeer[peer] = count
            return (registry.next, count > maximumPerPeer)
        }
    }

    func unregister(id: UInt64, peer: String) {
        let waiting = registry.withLock { registry in
            registry.waiting.removeValue(forKey: id)
            let count = registry.perPeer[peer, default: 1] - 1
            registry.perPeer[peer] = count > 0 ? count : nil
            return registry.waiting.count
        }
        reporter.gauge(waitingMetric, Double(waiting))
    }

    /// The connection `id` waits for a request head (`true`) or is in a request.
    func setWaiting(_ waiting: Bool, id: UInt64, channel: any Channel) {
        let count = registry.withLock { registry in
            if waiting { registry.waiting[id] = channel } else { registry.waiting.removeValue(forKey: id) }
            return registry.waiting.count
        }
        // How many connections wait for a request head now: slow or idle clients.
        reporter.gauge(waitingMetric, Double(count))
    }

    /// Takes the oldest connection waiting for a head (not `id`) out of the waiting set, to be
    /// closed; nil when every other connection is in a request.
    func evictOldestWaiting(besides id: UInt64) -> (any Channel)? {
        registry.withLock { registry in
            guard let oldest = registry.waiting.keys.lazy.filter({ $0 != id }).min() else { return nil }
            return registry.waiting.removeValue(forKey: oldest)
        }
    }

    /// Logs `line` unless ``logBurst`` lines were logged in the last second (then it is counted,
    /// and the next line logged says how many were not).
    func logBounded(_ line: String) {
        let unlogged: Int? = logGate.withLock { gate in
            let now = ContinuousClock.now
            if now - gate.window >= .seconds(1) { (gate.window, gate.logged) = (now, 0) }
            guard gate.logged < Self.logBurst else {
                gate.unlogged += 1
                return nil
            }
            gate.logged += 1
            defer { gate.unlogged = 0 }
            return gate.unlogged
        }
        guard let unlogged else { return }
        reporter.warning(unlogged > 0 ? "\(line) (and \(unlogged) more in the last second, not logged)" : line)
    }
}

/// Sits behind the HTTP codec of each connection of an HTTP server (a plugin's, the admin port) and keeps a client
/// from holding the server: over `max_connections` the oldest connection waiting for a request
/// head is closed to make room (``HTTPConnectionLimits``), and when none is, or over
/// `max_connections_per_peer`, the new one is answered `503` with `Retry-After` and closed;
/// a request head not complete within `header_timeout` is answered `408` and closed; a body
/// not complete within `body_timeout` closes the connection; and once a response is written
/// before the request's body was read (a `401` or `413` refusal), the rest of the body is not
/// read: the response is followed by a half close, and the connection closes a second later.
/// Each is counted (`<name>_connections_refused_total`, `<name>_timeouts_total`) and logged
/// with the client's address.
public final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    /// How long a refused request's connection stays half open, so the client reads the answer
    /// before the close.
    static let linger = TimeAmount.seconds(1)

    private let limits: HTTPConnectionLimits
    private var counted = false
    /// The connection's id in the limits' registry, and its peer's address.
    private var registered: (id: UInt64, peer: String)?
    /// Over the connection cap, or a response ended the exchange early: nothing more is read.
    private var closing = false
    /// A request head arrived and its end has not.
    private var requestOpen = false
    /// When the stage running now (head or body) times out; `nil` while a request waits for
    /// its answer.
    private var deadline: NIODeadline?
    /// Whether ``deadline`` is the head's (`header_timeout`) or the body's.
    private var deadlineIsHead = true
    /// The one timer of the connection and when it fires. Moving the deadline later does not
    /// touch it: when it fires early it sets itself again for the deadline. So a keep-alive
    /// connection schedules about one timer per `header_timeout`, not two per request.
    private var timer: (task: Scheduled<Void>, fires: NIODeadline)?

    /// A guard for one new connection.
    public init(limits: HTTPConnectionLimits) { self.limits = limits }

    public func channelActive(context: ChannelHandlerContext) {
        counted = true
        let peer = context.remoteAddress?.ipAddress ?? "unknown"
        let (id, overPeerCap) = limits.register(peer: peer)
        registered = (id, peer)
        let open = limits.open.add(1, ordering: .relaxed).newValue
        limits.reporter.gauge(limits.openMetric, Double(open))
        context.fireChannelActive()
        if overPeerCap {
            return refuseAtOnce(
                context, "connection refused: \(limits.maximumPerPeer) connections from this address are open (max_connections_per_peer)")
        }
        if open > limits.maximumConnections {
            // A slow or idle client's slot goes to the new one; only when all are busy is it refused.
            guard let victim = limits.evictOldestWaiting(besides: id) else {
                return refuseAtOnce(context, "connection refused: \(limits.maximumConnections) connections are open (max_connections)")
            }
            limits.reporter.count("\(limits.name)_connections_evicted_total")
            let victimPeer = victim.remoteAddress.map { "\($0)" } ?? "a client"
            limits.logBounded(
                "\(limits.name) connection from \(victimPeer) closed: it had sent no complete request head, and \(limits.maximumConnections) connections were open (max_connections)"
            )
            victim.close(promise: nil)
        }
        limits.setWaiting(true, id: id, channel: context.channel)
        arm(limits.headerTimeout, context: context)
    }

    /// Answers 503 with Retry-After and closes, counting and logging the refusal.
    private func refuseAtOnce(_ context: ChannelHandlerContext, _ reason: String) {
        closing = true
        refuse(context, reason)
        limits.reporter.count("\(limits.name)_connections_refused_total")
        respond(.serviceUnavailable, retryAfter: true, context: context)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) { release() }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        switch unwrapInboundIn(data) {
        case .head:
            requestOpen = true
            if let registered { limits.setWaiting(false, id: registered.id, channel: context.channel) }
            arm(limits.bodyTimeout, context: context)
        case .body:
            break
        case .end:
            requestOpen = false
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else { return context.write(data, promise: promise) }
        guard requestOpen, !closing else {
            context.write(data, promise: promise)
            // The exchange is over: the next request's head gets its own time, and the connection
            // may give its place to a new one while it waits.
            if !closing {
                if let registered { limits.setWaiting(true, id: registered.id, channel: context.channel) }
                arm(limits.headerTimeout, context: context)
            }
            return
        }
        // Answered before the body was read: the body is not wanted.
        closing = true
        disarm()
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.cascade(to: promise)
        context.writeAndFlush(data, promise: written)
        let channel = context.channel
        written.futureResult.whenComplete { _ in
            channel.close(mode: .output, promise: nil)
            channel.eventLoop.scheduleTask(in: Self.linger) { channel.close(promise: nil) }
        }
    }

    private func release() {
        disarm()
        guard counted else { return }
        counted = false
        let open = limits.open.subtract(1, ordering: .relaxed).newValue
        limits.reporter.gauge(limits.openMetric, Double(open))
        if let registered { limits.unregister(id: registered.id, peer: registered.peer) }
        registered = nil
    }

    /// Starts the head stage (`header_timeout`) or, with a request open, the body stage.
    private func arm(_ timeout: TimeAmount, context: ChannelHandlerContext) {
        let due = NIODeadline.now() + timeout
        deadline = due
        deadlineIsHead = !requestOpen
        // A timer that fires before the new deadline stays: it sets itself again when it fires.
        if let timer, timer.fires <= due { return }
        schedule(at: due, context: context)
    }

    private func schedule(at due: NIODeadline, context: ChannelHandlerContext) {
        timer?.task.cancel()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let task = context.eventLoop.scheduleTask(deadline: due) {
            let (handler, context) = loopBound.value
            handler.timerFired(context: context)
        }
        timer = (task, due)
    }

    private func disarm() {
        deadline = nil
        timer?.task.cancel()
        timer = nil
    }

    private func timerFired(context: ChannelHandlerContext) {
        timer = nil
        guard let deadline, !closing else { return }
        if deadline > .now() { return schedule(at: deadline, context: context) }
        timedOut(headStage: deadlineIsHead, context: context)
    }

    private func timedOut(headStage: Bool, context: ChannelHandlerContext) {
        deadline = nil
        closing = true
        limits.reporter.count("\(limits.name)_timeouts_total")
        if headStage {
            refuse(context, "closed: no complete request head within \(limits.headerTimeout.seconds)s (header_timeout)")
            respond(.requestTimeout, retryAfter: false, context: context)
        } else {
            refuse(context, "closed: the request body was not complete within \(limits.bodyTimeout.seconds)s (body_timeout)")
            context.close(promise: nil)
        }
    }

    /// Writes a bodiless response that ends the connection, then closes it.
    private func respond(_ status: HTTPResponse.Status, retryAfter: Bool, context: ChannelHandlerContext) {
        var fields: HTTPFields = [.connection: "close", .contentLength: "0"]
        if retryAfter { fields[.retryAfter] = "1" }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: fields))), promise: nil)
        // The handler and its context live on this event loop; so does the completion.
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    private func refuse(_ context: ChannelHandlerContext, _ reason: String) {
        let peer = context.remoteAddress.map { "\($0)" } ?? "a client"
        limits.logBounded("\(limits.name) connection from \(peer) \(reason)")
    }
}

extension TimeAmount {
    fileprivate var seconds: String {
        let value = Double(nanoseconds) / 1e9
        return value == value.rounded() ? String(Int64(value)) : String(value)
    }
}
