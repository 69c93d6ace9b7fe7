public import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Sits on a listening socket and tells when accepting fails for want of descriptors or
/// memory (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`): the first failure of a run is logged with
/// the open-file limit, each one is counted (`<name>_accept_failures_total`), and the first
/// connection accepted after it is logged too. Runs that start within a minute of a logged one
/// are counted, not logged: a listener at the edge of its descriptors flaps. Accepting resumes by itself: NIO's server
/// bootstrap stops reading the socket for a second after such a failure, then tries again.
public final class AcceptFailureMonitor: ChannelInboundHandler {
    public typealias InboundIn = NIOAny
    private let slots: ConnectionSlots
    /// Accepting failed, and no connection was accepted since.
    private var failing = false
    /// When a run of failures was last logged, and whether the current run was.
    private var lastLogged: NIODeadline?
    private var runLogged = false
    static let quietPeriod = TimeAmount.minutes(1)

    /// A monitor that reports as the listener of `slots`.
    public init(slots: ConnectionSlots) { self.slots = slots }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if failing {
            failing = false
            if runLogged { slots.reporter.warning("\(slots.name) listener accepts connections again") }
        }
        context.fireChannelRead(data)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errnoCode) {
            slots.reporter.count("\(slots.name)_accept_failures_total")
            if !failing {
                failing = true
                let now = NIODeadline.now()
                runLogged = lastLogged.map { now - $0 >= Self.quietPeriod } ?? true
                guard runLogged else { return context.fireErrorCaught(error) }
                lastLogged = now
                var limit = rlimit()
                let figure = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 ? " (the open-file limit is \(limit.rlim_cur))" : ""
                slots.reporter.warning(
                    "\(slots.name) listener cannot accept connections: \(Self.reason(error.errnoCode))\(figure); it tries again every second"
                )
            }
        }
        context.fireErrorCaught(error)
    }

    private static func reason(_ code: Int32) -> String {
        switch code {
        case EMFILE: "the router has no file descriptor left"
        case ENFILE: "the system has no file descriptor left"
        default: "the system is out of socket memory"
        }
    }
}
