public import SwitchyardStore

/// Obtained iiideas and preference overrides (``PostgresIiideaCatalog``). Each change commits
/// with a NOTIFY that every router watching the database reloads on, so they all run the same
/// iiideas.
extension PostgresStore: IiideaCatalogStore {
    public func obtainedIiideas() throws(StoreError) -> [ObtainedIiidea] { try catalog.obtainedIiideas() }

    public func addObtained(_ iiidea: ObtainedIiidea) throws(StoreError) -> Bool { try catalog.addObtained(iiidea) }

    public func saveObtained(_ iiidea: ObtainedIiidea) throws(StoreError) { try catalog.saveObtained(iiidea) }

    @discardableResult
    public func deleteObtained(_ id: String) throws(StoreError) -> Bool { try catalog.deleteObtained(id) }

    public func preferenceOverrides() throws(StoreError) -> [String: PiecePreferences] { try catalog.preferenceOverrides() }

    public func setPreferenceOverride(_ id: String, to preferences: PiecePreferences?) throws(StoreError) {
        try catalog.setPreferenceOverride(id, to: preferences)
    }
}
