internal import Logging
internal import SwitchyardABI
internal import SwitchyardBridge
internal import SwitchyardStore
import Synchronization

/// The host's state service (ABI version 2, `state_*`) for one instance: its keys in the
/// router's state store — the shared one of `store.url`, else the spool database (see
/// SQLiteStore+PluginState). A router without either (no at-least-once route, no iiidea, no `spool:` or
/// `store:` setting) answers SY_ERR_FAILED and says so once per instance in the log.
///
/// Separate from ``InstanceRuntime`` because nothing on the delivery path touches it: it owns
/// only what the state calls need (whether the missing store was logged, how many calls failed).
final class InstanceStateService: Sendable {
    /// The instance whose keys these are.
    let instance: String
    unowned let router: Router
    let logger: Logger
    /// Whether the log already says this instance's state calls fail for want of a store.
    private let unavailableLogged = Atomic<Bool>(false)
    /// State calls the store failed: the first few are worth a line each.
    private let failures = Atomic<Int>(0)

    init(instance: String, router: Router, logger: Logger) {
        self.instance = instance
        self.router = router
        self.logger = logger
    }

    /// The host's `state_get`.
    func get(key: sy_bytes, into value: sy_writer) -> Int32 {
        guard let write = value.write else { return SY_ERR_INVALID }
        return withStore(key: key) { store, key throws(StoreError) in
            guard let stored = try store.stateValue(of: instance, key: key) else { return SY_ERR_NOT_FOUND }
            return stored.withUnsafeBufferPointer { write(value.target, sy_bytes($0)) }
        }
    }

    /// The host's `state_put`.
    func put(key: sy_bytes, value: sy_bytes) -> Int32 {
        guard value.length <= PluginStateLimits.maximumValue else { return SY_ERR_TOO_LARGE }
        guard value.length == 0 || value.data != nil else { return SY_ERR_INVALID }
        return withStore(key: key) { store, key throws(StoreError) in
            try store.setState(of: instance, key: key, value: value.array)
            return SY_OK
        }
    }

    /// The host's `state_delete`.
    func delete(key: sy_bytes) -> Int32 {
        withStore(key: key) { store, key throws(StoreError) in
            try store.removeState(of: instance, key: key)
            return SY_OK
        }
    }

    /// The host's `state_scan`: visits the entries page by page, with no lock held while the
    /// visitor runs.
    func scan(prefix: sy_bytes, visit: sy_state_visitor, user: UnsafeMutableRawPointer?) -> Int32 {
        withStore(key: prefix, emptyAllowed: true) { store, prefix throws(StoreError) in
            var after: [UInt8]?
            while true {
                let page = try store.stateEntries(of: instance, prefix: prefix, after: after, limit: PluginStateLimits.scanPage)
                for (key, value) in page {
                    let stop = key.withUnsafeBufferPointer { keyBuffer in
                        value.withUnsafeBufferPointer { valueBuffer in visit(user, sy_bytes(keyBuffer), sy_bytes(valueBuffer)) }
                    }
                    if stop != 0 { return SY_OK }
                }
                guard page.count == PluginStateLimits.scanPage, let last = page.last else { return SY_OK }
                after = last.key
            }
        }
    }

    /// Checks `key` against the ABI's limits and runs `body` with the router's store; a store
    /// error is logged, counted (`state_failures_total`) and answered SY_ERR_FAILED.
    private func withStore(
        key: sy_bytes, emptyAllowed: Bool = false, _ body: (any PluginStateStore, [UInt8]) throws(StoreError) -> Int32
    ) -> Int32 {
        guard key.length <= PluginStateLimits.maximumKey else { return SY_ERR_TOO_LARGE }
        guard key.length > 0 || emptyAllowed, key.length == 0 || key.data != nil else { return SY_ERR_INVALID }
        guard let store = router.stateStore else {
            if !unavailableLogged.exchange(true, ordering: .relaxed) {
                logger.error(
                    "the plugin asked for its durable state, but the router has no store: set spool.path (or store.url) in the route file; state calls fail until then"
                )
            }
            return SY_ERR_FAILED
        }
        do {
            return try body(store, key.array)
        } catch {
            router.record(metric: "state_failures_total", instance: instance, kind: SY_METRIC_COUNTER, value: 1)
            let failures = failures.add(1, ordering: .relaxed).newValue
            if failures <= 10 || failures.isMultiple(of: 1000) {
                logger.error(
                    "plugin state: the store failed", metadata: ["store": .string(store.location), "error": .string("\(error.detail)")])
            }
            return SY_ERR_FAILED
        }
    }
}
