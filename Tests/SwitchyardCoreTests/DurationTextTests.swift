import SwitchyardCore
import Testing

@Suite struct DurationTextTests {
    @Test(arguments: [
        ("250ms", UInt64(250_000_000)),
        ("1s", 1_000_000_000),
        ("1.5s", 1_500_000_000),
        ("0s", 0),
        ("2m", 120_000_000_000),
        ("1h", 3_600_000_000_000),
        ("10us", 10_000),
        ("10µs", 10_000),
        ("5ns", 5),
        ("100", 100_000_000),
        ("0.5", 500_000),
    ])
    func parsesText(text: String, nanos: UInt64) {
        #expect(DurationText.nanoseconds(text) == nanos)
    }

    @Test(arguments: ["", "abc", "1x", "-1s", "-5", "s", "ms", "1 s", "nan", "1.2.3s"])
    func refusesNonDurations(text: String) {
        #expect(DurationText.nanoseconds(text) == nil)
    }

    @Test(arguments: [
        (JSONValue.int(250), UInt64?.some(250_000_000)),
        (.double(1.5), 1_500_000),
        (.string("2s"), 2_000_000_000),
        (.int(-1), nil),
        (.double(-0.5), nil),
        (.bool(true), nil),
        (.null, nil),
        (.array([1]), nil),
    ])
    func parsesJSON(value: JSONValue, nanos: UInt64?) {
        #expect(DurationText.nanoseconds(value) == nanos)
    }

    /// A duration too large for 64 bits of nanoseconds is not a duration; it must not trap.
    /// (Run in a child process so a trap fails only this test.)
    @Test func hugeOrInfiniteDurationsAreRefusedNotFatal() async {
        await #expect(processExitsWith: .success) {
            precondition(DurationText.nanoseconds("1e30s") == nil)
        }
        await #expect(processExitsWith: .success) {
            precondition(DurationText.nanoseconds("inf") == nil)
        }
        await #expect(processExitsWith: .success) {
            precondition(DurationText.nanoseconds(JSONValue.double(.infinity)) == nil)
        }
    }
}
