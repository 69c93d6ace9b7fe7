public import SwitchyardCore

extension PluginConfiguration {
    /// The preferences an iiidea gives its action, from the `iiidea.preferences` header of the
    /// envelope it delivers (rendered over the service's output); nil when there are none or
    /// they are not these preferences.
    public init?(iiideaPreferencesOf envelope: Envelope) {
        guard let text = envelope.headers["iiidea.preferences"], let json = try? JSONValue(parsing: text),
            let preferences = try? Self(config: json)
        else { return nil }
        self = preferences
    }
}
