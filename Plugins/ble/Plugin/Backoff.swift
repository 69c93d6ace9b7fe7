/// Exponential backoff with ±20 % jitter: the first wait is about `initial`, each later one
/// twice the one before, never over `maximum` (plus its jitter). Jitter spreads the retries of
/// many instances (or routers) that lost the same bus at the same moment.
struct Backoff: Sendable {
    let initial: Duration
    let maximum: Duration
    private var base: Duration

    init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = maximum
        base = min(initial, maximum)
    }

    /// The next wait, with its jitter; the one after will be twice as long (bounded).
    mutating func next() -> Duration {
        let wait = base * Double.random(in: 0.8...1.2)
        base = min(base * 2, maximum)
        return wait
    }

    /// Starts over from `initial` (after a success).
    mutating func reset() { base = min(initial, maximum) }

    /// A wait as people read it: `850ms`, `1.2s`.
    static func text(_ wait: Duration) -> String {
        let (seconds, attoseconds) = wait.components
        let milliseconds = seconds.multipliedReportingOverflow(by: 1000).partialValue &+ attoseconds / 1_000_000_000_000_000
        return milliseconds < 1000 ? "\(milliseconds)ms" : "\(milliseconds / 1000).\(milliseconds % 1000 / 100)s"
    }
}
