import HTTPTypes
public import NIOCore
public import NIOHTTPTypes

/// The limits every connection of one HTTP server shares: its ``ConnectionSlots`` (how many
/// may be open, how many from one address, who makes room at the cap), and how long a client
/// may take to send a request's head and its body.
public final class HTTPConnectionLimits: Sendable {
    /// The server's connection slots.
    public let slots: ConnectionSlots
    let headerTimeout: TimeAmount
    let bodyTimeout: TimeAmount

    /// Limits for the server `name`, reporting to `reporter`. `maximumPerPeer` defaults to an
    /// eighth of `maximumConnections` (at least 1).
    public init(
        name: String, maximumConnections: Int, maximumPerPeer: Int? = nil, headerTimeout: Duration, bodyTimeout: Duration,
        reporter: any ConnectionGuardReporter
    ) {
        slots = ConnectionSlots(
            name: name, unit: "request head", maximumConnections: maximumConnections, maximumPerPeer: maximumPerPeer, reporter: reporter)
        self.headerTimeout = TimeAmount(headerTimeout)
        self.bodyTimeout = TimeAmount(bodyTimeout)
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
    /// The connection's place among the server's, until it closes.
    private var slot: ConnectionSlots.Slot?
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
        let (slot, refusal) = limits.slots.admit(context.channel)
        self.slot = slot
        context.fireChannelActive()
        if refusal != nil {
            closing = true
            return respond(.serviceUnavailable, retryAfter: true, context: context)
        }
        arm(limits.headerTimeout, context: context)
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
            if let slot { limits.slots.setWaiting(false, slot: slot, channel: context.channel) }
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
                if let slot { limits.slots.setWaiting(true, slot: slot, channel: context.channel) }
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
        if let slot { limits.slots.release(slot) }
        slot = nil
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
        limits.slots.reporter.count("\(limits.slots.name)_timeouts_total")
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
        let peer = ConnectionSlots.describe(context.remoteAddress)
        limits.slots.logBounded("\(limits.slots.name) connection from \(peer) \(reason)")
    }
}

extension TimeAmount {
    fileprivate var seconds: String {
        let value = Double(nanoseconds) / 1e9
        return value == value.rounded() ? String(Int64(value)) : String(value)
    }
}
