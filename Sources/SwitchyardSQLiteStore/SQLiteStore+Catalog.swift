public import SwitchyardStore

/// The iiideas a person obtained from the store's templates, and the preferences they chose
/// for iiideas of the route files (``SQLiteIiideaCatalog``).
extension SQLiteStore: IiideaCatalogStore {
    /// Every obtained iiidea, oldest first.
    public func obtainedIiideas() throws(StoreError) -> [ObtainedIiidea] { try catalog.obtainedIiideas() }

    /// Keeps a newly obtained `iiidea`; false (nothing written) when one with its id is kept
    /// already: two people obtaining the same id at once cannot overwrite each other.
    public func addObtained(_ iiidea: ObtainedIiidea) throws(StoreError) -> Bool { try catalog.addObtained(iiidea) }

    /// Keeps `iiidea` (replacing one with its id).
    public func saveObtained(_ iiidea: ObtainedIiidea) throws(StoreError) { try catalog.saveObtained(iiidea) }

    /// Forgets obtained iiidea `id`, its switch and its preference override; false when it was
    /// not obtained. Its run history stays until pruned.
    @discardableResult
    public func deleteObtained(_ id: String) throws(StoreError) -> Bool { try catalog.deleteObtained(id) }

    /// The preferences chosen for iiideas of the route files, by iiidea id.
    public func preferenceOverrides() throws(StoreError) -> [String: PiecePreferences] { try catalog.preferenceOverrides() }

    /// Replaces the preferences of route-file iiidea `id`; nil removes the override.
    public func setPreferenceOverride(_ id: String, to preferences: PiecePreferences?) throws(StoreError) {
        try catalog.setPreferenceOverride(id, to: preferences)
    }
}
