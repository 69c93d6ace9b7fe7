/// A service piece failed; the run ends there.
package struct ServiceError: Error, CustomStringConvertible {
    /// What went wrong, as the run history shows it.
    package var description: String
    /// The piece refused to do what it was asked (an `http` URL its policy does not allow).
    package var refused = false

    /// A failure described by `description`.
    package init(description: String, refused: Bool = false) {
        self.description = description
        self.refused = refused
    }
}

/// An OAuth connection could not do what was asked: not declared, not connected, its tokens
/// not kept. `reason` is a sentence a person reads (the admin API answers with it).
public struct OAuthError: Error, Sendable, CustomStringConvertible {
    /// Why.
    public var reason: String

    /// An error saying `reason`.
    package init(_ reason: String) { self.reason = reason }

    public var description: String { "oauth: \(reason)" }
}
