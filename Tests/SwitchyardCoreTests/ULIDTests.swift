import Testing

@testable import SwitchyardCore

private let crockford = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

/// Decodes the 10-character time part of a ULID back to milliseconds.
private func millis(of ulid: String) -> UInt64? {
    var value: UInt64 = 0
    for character in ulid.prefix(10) {
        guard let digit = crockford.firstIndex(of: character) else { return nil }
        value = value * 32 + UInt64(digit)
    }
    return value
}

@Suite struct ULIDTests {
    @Test func specExampleTimestamp() {
        let text = ULID.encode(millis: 1_469_918_176_385, high: 0, low: 0)
        #expect(text.hasPrefix("01ARYZ6S41"))
        #expect(text == "01ARYZ6S41" + String(repeating: "0", count: 16))
    }

    @Test func extremes() {
        #expect(ULID.encode(millis: 0, high: 0, low: 0) == String(repeating: "0", count: 26))
        #expect(
            ULID.encode(millis: (1 << 48) - 1, high: .max, low: .max) == "7" + String(repeating: "Z", count: 25)
        )
    }

    @Test func randomPartPlacement() {
        // low is the last 64 bits; high the 16 bits above it (2^64 = 16 * 32^12).
        #expect(ULID.encode(millis: 0, high: 0, low: 1) == String(repeating: "0", count: 25) + "1")
        #expect(ULID.encode(millis: 0, high: 0, low: 31) == String(repeating: "0", count: 25) + "Z")
        #expect(ULID.encode(millis: 0, high: 0, low: 32) == String(repeating: "0", count: 24) + "10")
        #expect(ULID.encode(millis: 0, high: 1, low: 0) == String(repeating: "0", count: 13) + "G" + String(repeating: "0", count: 12))
        #expect(ULID.encode(millis: 1, high: 0, low: 0) == String(repeating: "0", count: 9) + "1" + String(repeating: "0", count: 16))
    }

    @Test func timeRoundTrips() {
        for value: UInt64 in [0, 1, 1_469_918_176_385, 1_700_000_000_000, (1 << 48) - 1] {
            #expect(millis(of: ULID.encode(millis: value, high: 0xBEEF, low: 0x1234_5678_9ABC_DEF0)) == value)
        }
    }

    @Test func nextHasLengthAlphabetAndCurrentTime() throws {
        let before = UInt64(Clock.nowUnixNanos() / 1_000_000)
        let id = ULID.next()
        let after = UInt64(Clock.nowUnixNanos() / 1_000_000)
        #expect(id.count == 26)
        #expect(id.allSatisfy { crockford.contains($0) })
        #expect(id.first.map { "01234567".contains($0) } == true)
        let stamp = try #require(millis(of: id))
        #expect(stamp >= before && stamp <= after)
    }

    @Test func consecutiveIdsAreStrictlyIncreasing() {
        var previous = ULID.next()
        for _ in 0..<5000 {
            let next = ULID.next()
            #expect(next > previous, "\(next) should sort after \(previous)")
            if next <= previous { break }
            previous = next
        }
    }

    @Test func idsAreUnique() {
        let ids = (0..<2000).map { _ in ULID.next() }
        #expect(Set(ids).count == ids.count)
    }

    @Test func entropyPoolRefillsWithFreshWordsWhenSpent() {
        var pool = EntropyPool()
        // Three pools' worth: a refill that handed out the first fill's words again, or words
        // it never wrote, would repeat values.
        let words = (0..<(3 * EntropyPool.capacity)).map { _ in pool.next() }
        #expect(Set(words).count == words.count)
    }

    @Test func aNewMillisecondDrawsNewRandomPartsAndTheSameOneCountsOn() {
        // A state of its own: the process-wide one also serves the other tests' ids.
        var state = ULID.State()
        let first = state.advance(to: 1_000)
        let again = state.advance(to: 1_000)
        let late = state.advance(to: 999)  // another thread's older clock reading
        let next = state.advance(to: 1_001)
        #expect(again.millis == 1_000 && again.high == first.high && again.low == first.low + 1)
        #expect(late.millis == 1_000 && late.low == first.low + 2)
        #expect(next.millis == 1_001)
        // New random bits, not the count going on (a 2^-63 chance of a false failure).
        #expect(next.low != first.low + 3)
        #expect(next.low <= UInt64.max >> 1, "the low part keeps its headroom for increments")
    }

    @Test func monotonicNanosDoesNotGoBack() {
        let first = Clock.monotonicNanos()
        let second = Clock.monotonicNanos()
        #expect(second >= first)
        #expect(first > 0)
    }
}
