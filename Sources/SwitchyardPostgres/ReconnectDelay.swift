import NIOCore

/// How long a connection that listens or waits for a lock waits before it connects again:
/// a second after it was last connected, doubling to 30 s while attempts fail.
struct ReconnectDelay {
    private var next = TimeAmount.seconds(1)

    /// The delay before this attempt; the next one waits twice as long, up to 30 s.
    mutating func take() -> TimeAmount {
        defer { next = min(next * 2, .seconds(30)) }
        return next
    }

    /// A connection succeeded: the next failure waits a second again.
    mutating func reset() { next = .seconds(1) }
}
