/// RFC 3261 timer values (§17.1.1.1, table 4), configurable per instance.
public struct SIPTimers: Sendable, Equatable {
    /// Round-trip estimate; 500 ms by default.
    public var t1: Duration
    /// Longest retransmit interval for non-INVITE requests and INVITE responses; 4 s.
    public var t2: Duration
    /// Longest time a message stays in the network; 5 s.
    public var t4: Duration

    /// Creates timer values (the defaults are RFC 3261's).
    public init(t1: Duration = .milliseconds(500), t2: Duration = .seconds(4), t4: Duration = .seconds(5)) {
        self.t1 = t1
        self.t2 = t2
        self.t4 = t4
    }
}

/// The transaction timers, named as in RFC 3261.
public enum SIPTimer: Sendable, Equatable, Hashable {
    /// Client: retransmit the request (unreliable transports).
    case e
    /// Client: give up.
    case f
    /// Client: stop absorbing response retransmissions.
    case k
    /// Server: stop absorbing request retransmissions.
    case j
}

/// A non-INVITE client transaction (RFC 3261 §17.1.2) as a pure state machine: events in,
/// actions out; the owner sends, schedules and cancels. Used for REGISTER and MESSAGE.
public struct SIPClientTransaction: Sendable {
    /// Where it is (figure 6).
    public enum State: Sendable, Equatable {
        /// The request was sent; no response yet.
        case trying
        /// A provisional response came.
        case proceeding
        /// A final response came; retransmissions of it are absorbed.
        case completed
        /// Over.
        case terminated
    }

    /// What happened.
    public enum Event: Sendable, Equatable {
        /// A timer the owner scheduled fired.
        case timer(SIPTimer)
        /// A response matched to this transaction (by branch and method).
        case response(status: Int)
        /// The request could not be sent.
        case transportError
    }

    /// What the owner must do.
    public enum Action: Sendable, Equatable {
        /// (Re)send the request.
        case sendRequest
        /// Start (or restart) a timer.
        case schedule(SIPTimer, after: Duration)
        /// Stop a timer.
        case cancel(SIPTimer)
        /// Pass the response to the transaction user.
        case deliver(status: Int)
        /// Timer F fired: the request timed out (408 for the user).
        case timedOut
        /// The transport failed (503 for the user).
        case failed
        /// The transaction is over: forget it.
        case terminate
    }

    /// The current state.
    public private(set) var state: State = .trying
    private let timers: SIPTimers
    private let reliable: Bool
    private var interval: Duration

    /// A transaction over a reliable (TCP, TLS) or unreliable (UDP) transport.
    public init(timers: SIPTimers = SIPTimers(), reliable: Bool) {
        self.timers = timers
        self.reliable = reliable
        interval = timers.t1
    }

    /// Starts it: send the request, arm F (and E on UDP).
    public mutating func start() -> [Action] {
        var actions: [Action] = [.sendRequest, .schedule(.f, after: timers.t1 * 64)]
        if !reliable { actions.append(.schedule(.e, after: interval)) }
        return actions
    }

    /// Handles an event.
    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.trying, .timer(.e)), (.proceeding, .timer(.e)):
            // Doubling up to T2 while trying; at T2 once a provisional response came.
            interval = state == .trying ? min(interval * 2, timers.t2) : timers.t2
            return [.sendRequest, .schedule(.e, after: interval)]
        case (.trying, .timer(.f)), (.proceeding, .timer(.f)):
            state = .terminated
            return [.cancel(.e), .timedOut, .terminate]
        case (.trying, .transportError), (.proceeding, .transportError):
            state = .terminated
            return [.cancel(.e), .cancel(.f), .failed, .terminate]
        case (.trying, .response(let status)) where status < 200, (.proceeding, .response(let status)) where status < 200:
            state = .proceeding
            return [.deliver(status: status)]
        case (.trying, .response(let status)), (.proceeding, .response(let status)):
            state = .completed
            var actions: [Action] = [.cancel(.e), .cancel(.f), .deliver(status: status)]
            if reliable {
                state = .terminated
                actions.append(.terminate)
            } else {
                actions.append(.schedule(.k, after: timers.t4))
            }
            return actions
        case (.completed, .timer(.k)):
            state = .terminated
            return [.terminate]
        default:
            // Retransmitted final responses in Completed are absorbed; stale timers are ignored.
            return []
        }
    }
}

/// A non-INVITE server transaction (RFC 3261 §17.2.2): absorbs request retransmissions by
/// resending the last response, so the transaction user sees each request once.
public struct SIPServerTransaction: Sendable {
    /// Where it is (figure 8).
    public enum State: Sendable, Equatable {
        /// The request arrived; the user has not answered.
        case trying
        /// The user sent a provisional response.
        case proceeding
        /// The user sent a final response; request retransmissions get it again.
        case completed
        /// Over.
        case terminated
    }

    /// What the owner must do.
    public enum Action: Sendable, Equatable {
        /// Send this response (the transaction user's, or the last one again).
        case sendResponse(status: Int)
        /// Start a timer.
        case schedule(SIPTimer, after: Duration)
        /// The transaction is over: forget it.
        case terminate
    }

    /// The current state.
    public private(set) var state: State = .trying
    private let timers: SIPTimers
    private let reliable: Bool
    private var lastResponse: Int?

    /// A transaction for a request that arrived over a reliable or unreliable transport.
    public init(timers: SIPTimers = SIPTimers(), reliable: Bool) {
        self.timers = timers
        self.reliable = reliable
    }

    /// The transaction user answers.
    public mutating func respond(status: Int) -> [Action] {
        guard state == .trying || state == .proceeding else { return [] }
        lastResponse = status
        if status < 200 {
            state = .proceeding
            return [.sendResponse(status: status)]
        }
        if reliable {
            state = .terminated
            return [.sendResponse(status: status), .terminate]
        }
        state = .completed
        return [.sendResponse(status: status), .schedule(.j, after: timers.t1 * 64)]
    }

    /// The same request arrived again: resend what was last sent (nothing while trying).
    public mutating func retransmission() -> [Action] {
        guard state == .proceeding || state == .completed, let lastResponse else { return [] }
        return [.sendResponse(status: lastResponse)]
    }

    /// Timer J fired.
    public mutating func timerJ() -> [Action] {
        guard state == .completed else { return [] }
        state = .terminated
        return [.terminate]
    }
}
