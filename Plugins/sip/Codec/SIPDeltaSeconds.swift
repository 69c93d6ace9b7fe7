/// `delta-seconds` (RFC 3261 §25.1: `1*DIGIT`), the unit of `Expires`, `Min-Expires`,
/// `Retry-After` and a Contact's `expires` parameter, read so that no value a peer writes can
/// overflow the arithmetic done on it: digits only, clamped to ``maximum``.
public enum SIPDeltaSeconds {
    /// The largest value taken, 2³¹−1 s (68 years): RFC 3261 §20.19 and §10.2.1.1 let a
    /// recipient treat larger values as the largest it supports.
    public static let maximum = Int(Int32.max)

    /// The number of seconds in `text` (surrounding spaces and tabs ignored), clamped to
    /// ``maximum``; nil when it is empty or holds anything but digits (a sign included).
    public static func parse(_ text: some StringProtocol) -> Int? {
        let digits = String(text).trimmingWhitespace().utf8
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        var value = 0
        // value ≤ maximum before each step, so value · 10 + 9 cannot overflow.
        for digit in digits { value = min(value * 10 + Int(digit - UInt8(ascii: "0")), maximum) }
        return value
    }

    /// The leading delta-seconds of a `Retry-After` value (`120 (in a meeting);duration=60`).
    public static func parseLeading(_ text: some StringProtocol) -> Int? {
        parse(String(text).trimmingWhitespace().prefix { $0 != " " && $0 != "\t" && $0 != "(" && $0 != ";" })
    }
}
