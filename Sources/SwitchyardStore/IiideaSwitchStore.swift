/// Where iiideas' switches live (enabled or disabled by a person, through the admin API, the
/// console or the CLI): the router's SQLite store by default, or a PostgreSQL database several
/// routers share, where a switch set on one router reaches the others.
public protocol IiideaSwitchStore: AnyObject, Sendable {
    /// Where the switches live, for logs and errors.
    var location: String { get }

    /// Every stored switch, by iiidea id (an iiidea never switched follows its declaration).
    func iiideaSwitches() throws(StoreError) -> [String: Bool]

    /// Stores the switch of iiidea `id`; committed (and announced to other routers, where
    /// the engine can) when it returns.
    func setIiideaSwitch(_ id: String, enabled: Bool) throws(StoreError)
}
