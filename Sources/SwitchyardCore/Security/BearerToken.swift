/// Checks an `Authorization: Bearer …` header against the expected token in time that does not
/// depend on where they differ: the admin port and the push webhook both use it.
public enum BearerToken {
    /// Whether `header` is exactly `Bearer <expected>`.
    public static func matches(header: String?, expected: String) -> Bool {
        constantTimeEquals(Array((header ?? "").utf8), Array(("Bearer " + expected).utf8))
    }

    /// Compares without an early exit, so the time taken does not tell how much of a guess matched.
    public static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        // The lengths are compared apart: folded into a byte, lengths 256 apart would agree.
        var difference: UInt8 = 0
        for index in 0..<max(lhs.count, rhs.count) {
            difference |= (index < lhs.count ? lhs[index] : 0) ^ (index < rhs.count ? rhs[index] : 0)
        }
        return difference == 0 && lhs.count == rhs.count
    }
}
