/// Where plugin instances keep their durable key-value state (the host's `state_*` service):
/// the router's SQLite store by default, or a PostgreSQL database that several routers share.
///
/// Keys and values are bytes. The key space belongs to the instance name, so it survives
/// restarts and reloads, and every router of a deployment sees the same keys of an instance.
/// Calls block until the engine has committed or answered; they are made from plugin threads,
/// never from the router's event loops.
public protocol PluginStateStore: AnyObject, Sendable {
    /// Where the state lives, for logs and errors (a path, or a URL without its password).
    var location: String { get }

    /// The value of `instance` under `key`, or nil when there is none.
    func stateValue(of instance: String, key: [UInt8]) throws(StoreError) -> [UInt8]?

    /// Stores `value` under `key` for `instance`, replacing any; committed when it returns.
    func setState(of instance: String, key: [UInt8], value: [UInt8]) throws(StoreError)

    /// Removes `key` of `instance`; nothing happens when there is none.
    func removeState(of instance: String, key: [UInt8]) throws(StoreError)

    /// Up to `limit` entries of `instance` whose key starts with `prefix` and sorts after
    /// `after` (nil: from the first), in bytewise key order. A large scan pages with the last
    /// key of each page, so no scan holds the store or memory for long.
    func stateEntries(of instance: String, prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [(
        key: [UInt8], value: [UInt8]
    )]
}

/// The limits every engine holds plugin state to (the ABI's `SY_STATE_MAX_*`).
public enum PluginStateLimits {
    /// The most bytes in a key (`SY_STATE_MAX_KEY`).
    public static let maximumKey = 1024
    /// The most bytes in a value (`SY_STATE_MAX_VALUE`).
    public static let maximumValue = 1024 * 1024
    /// The most entries one ``PluginStateStore/stateEntries(of:prefix:after:limit:)`` page returns.
    public static let scanPage = 64

    /// The smallest byte string greater than every string starting with `prefix`; nil when
    /// there is none (the prefix is all 0xFF). A prefix scan is then `key >= prefix AND key < end`.
    public static func successor(of prefix: [UInt8]) -> [UInt8]? {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return nil
    }
}
