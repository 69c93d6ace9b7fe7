/// Bounds how many lines one instance may log per window, so a peer that provokes an error per
/// packet cannot fill the disk: past the budget, lines are counted, not written, and the next
/// line after the window says how many were held back.
struct LogThrottle: Sendable {
    /// Lines written per window before the rest are only counted.
    static let budget = 100
    /// The window.
    static let window: Duration = .seconds(10)

    private var windowStart: ContinuousClock.Instant
    private var written = 0
    private var suppressed = 0
    private var firstSuppressed: String?

    init(now: ContinuousClock.Instant = .now) { windowStart = now }

    /// What to do with one line.
    enum Verdict: Equatable {
        /// Write it.
        case write
        /// Write a summary of the `count` lines held back in the window that ended (the first
        /// of them was `first`), then the line.
        case summarizeThenWrite(count: Int, first: String)
        /// Count it only.
        case suppress
    }

    mutating func admit(_ line: String, now: ContinuousClock.Instant = .now) -> Verdict {
        var verdict = Verdict.write
        if now - windowStart >= Self.window {
            if suppressed > 0, let first = firstSuppressed { verdict = .summarizeThenWrite(count: suppressed, first: first) }
            windowStart = now
            written = 0
            suppressed = 0
            firstSuppressed = nil
        }
        guard written < Self.budget else {
            suppressed += 1
            if firstSuppressed == nil { firstSuppressed = String(line.prefix(200)) }
            return .suppress
        }
        written += 1
        return verdict
    }
}
