/// Qeo's 64-bit realm, user and device ids as text.
public enum QeoIdentifier {
    /// An id as users write it: decimal, or hex after `0x`.
    public static func parse(_ text: String) -> UInt64? {
        text.lowercased().hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
    }

    /// An id as Qeo wrote it (certificate names, participant names, policy sections): lowercase
    /// hex without a prefix.
    public static func hex(_ id: UInt64) -> String { String(id, radix: 16) }
}
