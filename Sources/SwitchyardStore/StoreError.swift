/// A store engine's failure, worded for the operator: where (the store's location, never a
/// password) and what the engine said.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// The store: a file path or a URL without its password.
    public let location: String
    /// What failed, as the engine said it.
    public let detail: String

    /// A failure of the store at `location`.
    public init(location: String, detail: String) {
        self.location = location
        self.detail = detail
    }

    public var description: String { "store '\(location)': \(detail)" }
}
