import Testing

@testable import SwitchyardRuntime

/// A flood of log lines from one instance is bounded per window and summarised after it.
@Suite struct LogThrottleTests {
    @Test func linesPastTheBudgetAreCountedAndSummarisedInTheNextWindow() {
        let start = ContinuousClock.now
        var throttle = LogThrottle(now: start)
        var written = 0
        for index in 0..<10_000 where throttle.admit("peer error \(index)", now: start) == .write { written += 1 }
        #expect(written == LogThrottle.budget)
        #expect(throttle.admit("still flooding", now: start + .seconds(5)) == .suppress)
        let next = throttle.admit("after the window", now: start + LogThrottle.window)
        #expect(next == .summarizeThenWrite(count: 10_000 - LogThrottle.budget + 1, first: "peer error \(LogThrottle.budget)"))
        #expect(throttle.admit("quiet again", now: start + LogThrottle.window + .seconds(1)) == .write)
    }
}
