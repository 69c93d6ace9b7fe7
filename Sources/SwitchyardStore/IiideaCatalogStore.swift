public import SwitchyardCore

/// Where the iiideas people obtained from the store's templates, and the preferences they
/// chose for iiideas of the route files, are kept: the router's spool by default, or a
/// PostgreSQL database several routers share. They are part of the graph: read at every load
/// and reload; a change made on one router of a shared store is announced to the others,
/// which reload.
public protocol IiideaCatalogStore: AnyObject, Sendable {
    /// Where the records live, for logs and errors.
    var location: String { get }

    /// Every obtained iiidea, oldest first.
    func obtainedIiideas() throws(StoreError) -> [ObtainedIiidea]

    /// Keeps a newly obtained `iiidea`; false (nothing written) when one with its id is kept
    /// already: two people obtaining the same id at once cannot overwrite each other.
    func addObtained(_ iiidea: ObtainedIiidea) throws(StoreError) -> Bool

    /// Keeps `iiidea` (replacing one with its id).
    func saveObtained(_ iiidea: ObtainedIiidea) throws(StoreError)

    /// Forgets obtained iiidea `id`, its switch and its preference override; false when it was
    /// not obtained. Its run history stays until pruned.
    @discardableResult
    func deleteObtained(_ id: String) throws(StoreError) -> Bool

    /// The preferences chosen for iiideas of the route files, by iiidea id.
    func preferenceOverrides() throws(StoreError) -> [String: PiecePreferences]

    /// Replaces the preferences of route-file iiidea `id`; nil removes the override.
    func setPreferenceOverride(_ id: String, to preferences: PiecePreferences?) throws(StoreError)
}

/// The preferences of an iiidea's service and action pieces; nil keeps the template's or the
/// route file's.
public struct PiecePreferences: Sendable, Equatable {
    /// The service piece's preferences.
    public var service: JSONValue?
    /// The action piece's preferences.
    public var action: JSONValue?

    /// Creates preferences.
    public init(service: JSONValue? = nil, action: JSONValue? = nil) {
        self.service = service
        self.action = action
    }

    /// These preferences with each piece `other` sets taken from `other`.
    public func overridden(by other: PiecePreferences) -> PiecePreferences {
        PiecePreferences(service: other.service ?? service, action: other.action ?? action)
    }
}

/// An iiidea a person obtained from a template of the store.
public struct ObtainedIiidea: Sendable, Equatable {
    /// Its id, unique among all iiideas.
    public var id: String
    /// The template it was made from.
    public var template: String
    /// Its title, when the person gave one (else the template's).
    public var title: String?
    /// The preferences the person chose.
    public var preferences: PiecePreferences
    /// The user or device it belongs to, when given.
    public var owner: String?

    /// Creates a record.
    public init(id: String, template: String, title: String?, preferences: PiecePreferences, owner: String? = nil) {
        self.id = id
        self.template = template
        self.title = title
        self.preferences = preferences
        self.owner = owner
    }
}
