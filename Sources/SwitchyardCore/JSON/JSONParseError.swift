/// Why a byte sequence is not JSON, and where.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the problem, from 0.
    public var offset: Int
    /// What is wrong there.
    public var reason: String

    /// The problem and its offset, as error messages say it.
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}
