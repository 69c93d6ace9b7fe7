public import SwitchyardCore

/// Emits from a thread of the plugin's own that may wait while a route is full: the emit that
/// gets ``EmitResult/full`` waits for the router's ``SwitchyardPlugin/resume(port:)`` (pass it
/// on to ``resumed()``) and tries again, instead of polling. ``stop()`` ends every wait.
///
/// Waiting holds the emitting thread, which is the backpressure: a reader thread that waits
/// leaves its socket or its DDS reader unread, so the far side slows down.
public final class SourceRoom: Sendable {
    private struct State {
        /// How many resumes came: an emit notes it before it tries, so a resume between the
        /// "full" and the wait still ends the wait.
        var resumes: UInt64 = 0
        var stopped = false
    }

    private let state = Locked(State())

    /// A room no one has resumed or stopped yet.
    public init() {}

    /// The router has room on a port of the instance again: every waiting emit tries again.
    public func resumed() {
        state.withLock { state in
            state.resumes &+= 1
            self.state.broadcast()
        }
    }

    /// The instance stops: every wait ends, and emits wait no more.
    public func stop() {
        state.withLock { state in
            state.stopped = true
            self.state.broadcast()
        }
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Emits `envelope` on `port`, waiting for a resume while the route is full, until
    /// `deadline` (nil: for as long as it takes). Answers the last emit's result:
    /// ``EmitResult/full`` once the deadline has passed, ``EmitResult/stopped`` when the room
    /// was stopped meanwhile.
    public func emit(
        _ envelope: Envelope, on port: String, through context: PluginContext, until deadline: ContinuousClock.Instant? = nil
    ) -> EmitResult {
        while true {
            let seen = state.withLock { $0.resumes }
            let result = context.emit(envelope, on: port)
            guard result == .full else { return result }
            let resumed = state.withLock(waitingUntil: { $0.stopped || $0.resumes != seen }, deadline: deadline) { state, ready in
                ready && !state.stopped
            }
            guard resumed else { return isStopped ? .stopped : .full }
        }
    }
}
