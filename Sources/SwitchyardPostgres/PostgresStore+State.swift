public import SwitchyardStore

/// Plugin instances' key-value state (``PostgresPluginState``): what every router sharing the
/// database sees.
extension PostgresStore: PluginStateStore {
    public func stateValue(of instance: String, key: [UInt8]) throws(StoreError) -> [UInt8]? {
        try pluginState.stateValue(of: instance, key: key)
    }

    public func setState(of instance: String, key: [UInt8], value: [UInt8]) throws(StoreError) {
        try pluginState.setState(of: instance, key: key, value: value)
    }

    public func removeState(of instance: String, key: [UInt8]) throws(StoreError) {
        try pluginState.removeState(of: instance, key: key)
    }

    public func stateEntries(
        of instance: String, prefix: [UInt8], after: [UInt8]?, limit: Int = PluginStateLimits.scanPage
    ) throws(StoreError) -> [(key: [UInt8], value: [UInt8])] {
        try pluginState.stateEntries(of: instance, prefix: prefix, after: after, limit: limit)
    }
}
