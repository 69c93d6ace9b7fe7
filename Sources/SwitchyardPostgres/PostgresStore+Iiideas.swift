public import Logging
public import SwitchyardStore

/// iiideas' switches (``PostgresIiideaSwitches``), announced with NOTIFY: a switch set on one
/// router reaches every router watching the database (``IiideaSwitchWatch``) when it commits.
extension PostgresStore: IiideaSwitchStore {
    public func iiideaSwitches() throws(StoreError) -> [String: Bool] { try switches.iiideaSwitches() }

    public func setIiideaSwitch(_ id: String, enabled: Bool) throws(StoreError) { try switches.setIiideaSwitch(id, enabled: enabled) }

    /// Calls `switched` with an iiidea's id when another router (or this one) commits its
    /// switch, and with nil when notifications may have been missed (after the listening
    /// connection was lost and opened again): then every switch should be read again. Calls
    /// `catalogChanged` when obtained iiideas or preference overrides changed (or may have,
    /// after the connection was lost): the graph should be loaded again. Calls `oauthChanged`
    /// with a connection's name when its tokens changed, and with nil when any may have.
    /// The watch lasts until ``IiideaSwitchWatch/stop()``; the calls come on an event loop
    /// and must hand slow work elsewhere.
    public func watchIiideas(
        logger: Logger, switched: @escaping @Sendable (String?) -> Void, catalogChanged: @escaping @Sendable () -> Void,
        oauthChanged: @escaping @Sendable (String?) -> Void
    ) -> IiideaSwitchWatch {
        let watch = IiideaSwitchWatch(
            configuration: session.configuration, eventLoop: PostgresSession.eventLoops.next(), logger: logger,
            location: location, onChange: switched, onCatalogChange: catalogChanged, onOAuthChange: oauthChanged)
        watch.connect()
        return watch
    }
}
