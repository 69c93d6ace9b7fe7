import SwitchyardCore
import SwitchyardPluginKit

/// A section that may also be written `true` (on, with its defaults) or `false` (off), as
/// `register:` and `history:` are.
protocol SwitchableSection: ConfigurationValue {
    /// Whether the section is on.
    var enabled: Bool { get set }
    /// The section on, with its defaults.
    init()
    /// Reads a section written out (on).
    init(settingsFrom decoder: any Decoder) throws
}

extension SwitchableSection {
    /// The section off.
    static var off: Self {
        var section = Self()
        section.enabled = false
        return section
    }

    init(from decoder: any Decoder) throws {
        if let flag = try ConfigurationJSON(from: decoder).value.boolValue {
            self.init()
            enabled = flag
            return
        }
        try self.init(settingsFrom: decoder)
    }

    static var configurationSchema: JSONValue { ConfigurationSchema.of(Self.self, orAlso: "boolean") }
    static var schemaPlaceholder: Self { Self() }
}
