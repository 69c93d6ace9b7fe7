import NIOCore
import NIOTLS
import SIPCodec
import SwitchyardConnectionGuard

// The channel handlers of ``SIPTransport``'s sockets: datagrams, framed streams, and the TLS
// handshake's deadline.

/// Parses each datagram on its own (RFC 3261 §18.3).
final class DatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let transport: SIPTransport

    init(transport: SIPTransport) { self.transport = transport }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let datagram = unwrapInboundIn(data)
        transport.receive(datagram: Array(datagram.data.readableBytesView), from: datagram.remoteAddress)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP port unreachable surfaces here on a connected socket; the UDP socket stays open.
    }
}

/// Frames a TCP or TLS stream by Content-Length (RFC 3261 §18.3).
final class StreamHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    /// What an accepted connection answers for: its slot, and how long it may stay silent
    /// (``IdleStateHandler`` tells) or take over one message.
    struct Admitted {
        var slots: ConnectionSlots
        var slot: ConnectionSlots.Slot
        var idleTimeout: Duration
        var messageTimeout: TimeAmount
    }

    private let transport: SIPTransport
    private let kind: SIPTransportKind
    private let key: String
    private var decoder: SIPStreamDecoder
    /// Set for an accepted connection, nil for one this agent opened.
    private let admitted: Admitted?
    /// Whether the connection may make room for another: it is in the middle of a message, or
    /// has not completed one yet.
    private var waiting = true
    /// When the message now in progress began.
    private var messageBegan: NIODeadline?
    /// The message deadline's timer. A later message does not move it: when it fires early it
    /// sets itself again, so a busy connection schedules about one timer per `message_timeout`.
    private var timer: Scheduled<Void>?

    init(transport: SIPTransport, kind: SIPTransportKind, key: String, admitted: Admitted? = nil) {
        self.transport = transport
        self.kind = kind
        self.key = key
        self.admitted = admitted
        decoder = SIPStreamDecoder(limits: transport.limits)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let admitted, let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            transport.limited(.idle(admitted.idleTimeout), key)
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        decoder.append(buffer.readableBytesView)
        guard let address = context.channel.remoteAddress else { return }
        let peer = SIPPeer(transport: kind, address: address, connection: context.channel)
        var completed = false
        while true {
            do throws(SIPParseError) {
                guard let message = try decoder.next() else { break }
                completed = true
                transport.deliver(message, from: peer)
            } catch {
                transport.reject([], error, from: peer)
                context.close(promise: nil)
                return
            }
        }
        if let admitted { track(completed: completed, admitted, context: context) }
    }

    /// Notes where the connection stands after a read: whether a message is in progress (its
    /// deadline runs) and whether it may be closed to make room.
    private func track(completed: Bool, _ admitted: Admitted, context: ChannelHandlerContext) {
        let partial = decoder.holdsPartialMessage
        if !partial {
            messageBegan = nil
        } else if completed || messageBegan == nil {
            messageBegan = .now()
            if timer == nil { schedule(at: .now() + admitted.messageTimeout, admitted, context: context) }
        }
        let waitingNow = partial || (waiting && !completed)
        if waitingNow != waiting {
            waiting = waitingNow
            admitted.slots.setWaiting(waitingNow, slot: admitted.slot, channel: context.channel)
        }
    }

    private func schedule(at due: NIODeadline, _ admitted: Admitted, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: due) {
            let (handler, context) = loopBound.value
            handler.timerFired(admitted, context: context)
        }
    }

    private func timerFired(_ admitted: Admitted, context: ChannelHandlerContext) {
        timer = nil
        guard let messageBegan else { return }
        let due = messageBegan + admitted.messageTimeout
        if due > .now() { return schedule(at: due, admitted, context: context) }
        transport.limited(.messageTimeout(.nanoseconds(admitted.messageTimeout.nanoseconds)), key)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        transport.connectionClosed(key)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Closes an accepted TLS connection whose handshake has not completed within `timeout`
/// (a peer that opens connections and never speaks holds no slot for long).
final class TLSHandshakeDeadline: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    private let timeout: Duration
    private let expired: (Duration) -> Void
    private var deadline: Scheduled<Void>?

    init(timeout: Duration, expired: @escaping (Duration) -> Void) {
        self.timeout = timeout
        self.expired = expired
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let (timeout, expired) = (timeout, expired)
        // Runs on the channel's event loop, where this handler lives.
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(timeout)) {
            expired(timeout)
            channel.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            deadline?.cancel()
            deadline = nil
            // Done with: the stream handler gets the channel to itself.
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        context.fireChannelInactive()
    }
}
