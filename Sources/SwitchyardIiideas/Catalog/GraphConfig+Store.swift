public import SwitchyardConfig
public import SwitchyardCore
internal import SwitchyardSpool
public import SwitchyardStore

extension GraphConfig {
    /// Whether the router's store (the spool database) should be open: iiideas keep their
    /// state there, templates their obtained iiideas, and a `spool.path` asks for it.
    public var wantsStore: Bool { !iiideas.isEmpty || !iiideaTemplates.isEmpty || spoolPath != nil }

    /// The configuration with what the store holds: every obtained iiidea made from its
    /// template with the person's preferences, and the preferences chosen for iiideas of the
    /// route files. A record that cannot apply (its template is gone, its id is taken) is
    /// left out and named in `skipped` with the reason.
    public func applying(obtained: [ObtainedIiidea], overrides: [String: PiecePreferences]) -> (
        config: GraphConfig, skipped: [(id: String, reason: String)]
    ) {
        var config = self
        var skipped: [(id: String, reason: String)] = []
        for index in config.iiideas.indices {
            guard let preferences = overrides[config.iiideas[index].id] else { continue }
            config.iiideas[index].apply(preferences, at: Self.storeLocation(of: config.iiideas[index].id))
        }
        for record in obtained {
            guard let template = iiideaTemplates.first(where: { $0.id == record.template }) else {
                skipped.append((record.id, "its template '\(record.template)' is no longer in the route files"))
                continue
            }
            if let taken = config.iiideas.first(where: { $0.id == record.id }) {
                skipped.append((record.id, "its id is taken by the iiidea at \(taken.location)"))
                continue
            }
            var iiidea = template.declaration
            iiidea.id = record.id
            iiidea.title = record.title ?? iiidea.title
            iiidea.origin = .obtained(template: template.id)
            iiidea.owner = record.owner
            iiidea.apply(record.preferences, at: Self.storeLocation(of: record.id))
            iiidea.hasPreferenceOverride = false
            config.iiideas.append(iiidea)
        }
        return (config, skipped)
    }

    /// Where problems with stored preferences point: no file, the store and the iiidea.
    public static func storeLocation(of id: String) -> SourceLocation {
        SourceLocation(file: "<store: iiidea \(id)>", line: 1, column: 1)
    }

    /// The iiidea whose stored preferences a problem at `location` is about, if it is one.
    public static func storedIiidea(at location: SourceLocation?) -> String? {
        guard let file = location?.file, file.hasPrefix("<store: iiidea "), file.hasSuffix(">") else { return nil }
        return String(file.dropFirst("<store: iiidea ".count).dropLast())
    }
}
