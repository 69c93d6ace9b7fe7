public import SwitchyardCore

extension PluginError {
    /// Reads a duration setting (`500ms`, `10s`, `5m`, or a number of seconds) named `name`;
    /// `fallback` when it is absent, a ``PluginError`` naming the setting when it is malformed.
    public static func duration(_ value: JSONValue?, _ name: String, default fallback: Duration) throws(PluginError) -> Duration {
        guard let value else { return fallback }
        guard let nanoseconds = DurationText.nanoseconds(value) else {
            throw PluginError("\(name): '\(value.text)' is not a duration like 500ms, 10s or 5m")
        }
        return .nanoseconds(Int64(clamping: nanoseconds))
    }
}
