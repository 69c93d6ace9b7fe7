/// Checks an `Authorization: Bearer …` header against the expected token in time that does not
/// depend on where they differ.
public enum BearerToken {
    /// Whether `header` is `Bearer <expected>`.
    public static func matches(header: String?, expected: String) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.utf8.dropFirst("Bearer ".count))
        let wanted = Array(expected.utf8)
        var difference = UInt8(given.count == wanted.count ? 0 : 1)
        for index in wanted.indices {
            difference |= wanted[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }
}
