/// What the router refused or could not do, about one instance (it could not be created or
/// started) or one iiidea (it cannot run, or does not exist).
public struct RouterError: Error, Sendable, CustomStringConvertible {
    /// The instance (or the iiidea, for errors about one).
    public var instance: String
    /// Why.
    public var reason: String
    /// What `instance` names: "instance" or "iiidea".
    public var subject = "instance"

    /// An error about instance `instance`.
    public init(instance: String, reason: String) {
        self.instance = instance
        self.reason = reason
    }

    /// An error about iiidea `iiidea`.
    public init(iiidea: String, reason: String) {
        self.init(instance: iiidea, reason: reason)
        subject = "iiidea"
    }

    public var description: String { "\(subject) '\(instance)': \(reason)" }
}
