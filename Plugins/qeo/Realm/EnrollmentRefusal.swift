public import Foundation

/// Why an enrollment or a renewal was refused. Each has its own HTTP status and counter.
public enum EnrollmentRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// No code like this was issued (or it was forgotten long ago).
    case unknownCode
    /// The code expired at this time.
    case expiredCode(Date)
    /// The code was already exchanged at this time.
    case usedCode(Date)
    /// The member (the code's user, or the renewing device or its user) was revoked.
    case revoked
    /// The request itself is wrong: not a PKCS #10 request, a wrong key type, an unknown device.
    case invalid(String)
    /// The realm's own files failed (unreadable, full disk): not the requester's fault.
    case failed(String)

    /// The refusal as the endpoint's answer and log say it.
    public var description: String {
        switch self {
        case .unknownCode: "unknown code"
        case .expiredCode(let time): "the code expired at \(time.formatted(.iso8601))"
        case .usedCode(let time): "the code was already used at \(time.formatted(.iso8601))"
        case .revoked: "this member was revoked"
        case .invalid(let reason): reason
        case .failed(let reason): "the realm could not complete this: \(reason)"
        }
    }
}
