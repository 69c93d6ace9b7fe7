import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Time in the forms envelopes need.
public enum Clock {
    /// Nanoseconds since the Unix epoch, from the real-time clock.
    public static func nowUnixNanos() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// Nanoseconds from a monotonic clock, for durations.
    public static func monotonicNanos() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// RFC 3339 UTC text with milliseconds, e.g. `2026-11-22T04:46:46.123Z`.
    public static func rfc3339(unixNanos: Int64) -> String {
        var seconds = time_t(unixNanos / 1_000_000_000)
        let millis = Int((unixNanos % 1_000_000_000) / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}

/// Monotonic ULIDs (https://github.com/ulid/spec): 48 bits of milliseconds, 80 random bits,
/// incremented within one millisecond so ids from one process sort in creation order.
public enum ULID {
    /// The last id's parts, and where the next random parts come from.
    struct State {
        var millis: UInt64 = 0
        var high: UInt16 = 0
        var low: UInt64 = 0
        var entropy = EntropyPool()

        /// The parts of the id after the last one, for a clock reading of `millis`: new random
        /// bits in a new millisecond, the last id plus one otherwise. A time older than the last
        /// id's (another thread read the clock first) reuses the last id's time, so ids stay in
        /// creation order.
        mutating func advance(to millis: UInt64) -> (millis: UInt64, high: UInt16, low: UInt64) {
            if millis > self.millis {
                self.millis = millis
                high = UInt16(truncatingIfNeeded: entropy.next())
                // Leave headroom so increments within one millisecond do not overflow.
                low = entropy.next() >> 1
            } else {
                low &+= 1
                if low == 0 { high &+= 1 }
            }
            return (self.millis, high, low)
        }
    }

    private static let state = Mutex(State())
    /// A literal, not an array: reading it needs no lazy initialisation on the hot path.
    private static let alphabet: StaticString = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

    /// The next ULID as 26 characters of Crockford base 32.
    public static func next() -> String { next(unixNanos: Clock.nowUnixNanos()) }

    /// The next ULID for a time the caller already read (saves a clock read per envelope).
    public static func next(unixNanos: Int64) -> String {
        let millis = UInt64(max(0, unixNanos) / 1_000_000)
        let parts = state.withLock { $0.advance(to: millis) }
        return encode(millis: parts.millis, high: parts.high, low: parts.low)
    }

    static func encode(millis: UInt64, high: UInt16, low: UInt64) -> String {
        // 128 bits (48 time | 16 high | 64 low) as 26 base-32 digits, least significant last.
        var value = UInt128(millis) << 80 | UInt128(high) << 64 | UInt128(low)
        return String(unsafeUninitializedCapacity: 26) { buffer in
            for position in stride(from: 25, through: 0, by: -1) {
                buffer[position] = alphabet.utf8Start[Int(truncatingIfNeeded: value & 31)]
                value >>= 5
            }
            return 26
        }
    }
}

/// Random words from the kernel's generator, drawn 256 bytes at a time.
///
/// A source emitting a few thousand envelopes a second starts a new millisecond with nearly
/// every one, and `SystemRandomNumberGenerator` makes one `getrandom` system call per word: two
/// per envelope, measured in a paced MQTT bridge. One `getentropy` call fills 32 words, so the
/// ids keep the kernel's randomness with one call where there were 32.
struct EntropyPool {
    /// `getentropy` refuses more than 256 bytes a call.
    static let capacity = 32
    private var words = [UInt64](repeating: 0, count: capacity)
    private var used = capacity

    /// The next random word, refilling the pool from the kernel when it is spent.
    mutating func next() -> UInt64 {
        if used == Self.capacity { refill() }
        defer { used += 1 }
        return words[used]
    }

    private mutating func refill() {
        let filled = words.withUnsafeMutableBytes { getentropy($0.baseAddress, $0.count) } == 0
        if !filled {
            // getentropy fails only where getrandom is missing (kernels before 3.17); the
            // standard library's generator has its own fallback there.
            var generator = SystemRandomNumberGenerator()
            for index in words.indices { words[index] = generator.next() }
        }
        used = 0
    }
}
