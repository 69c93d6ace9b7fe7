/// What the `http` service piece may reach: by default only public addresses, over `http` or
/// `https`, without following redirects — an iiidea cannot be turned against the network the
/// router runs in (its loopback admin port, a cloud metadata service, a printer on the LAN).
public struct HTTPPiecePolicy: Sendable, Equatable {
    /// Loopback, link-local, private, CGNAT and other non-public addresses may be called
    /// (`allow_private: true`; default false).
    public var allowPrivate: Bool
    /// How many redirects are followed (`max_redirects`; default 0: a redirect fails the run).
    /// Each hop is checked like the first.
    public var maximumRedirects: Int

    /// A policy; the defaults are the safe ones.
    public init(allowPrivate: Bool = false, maximumRedirects: Int = 0) {
        self.allowPrivate = allowPrivate
        self.maximumRedirects = maximumRedirects
    }

    /// The most `max_redirects` may be.
    public static let redirectLimit = 10
}
