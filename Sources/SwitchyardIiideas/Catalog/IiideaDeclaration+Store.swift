public import SwitchyardConfig
internal import SwitchyardCore
public import SwitchyardStore

extension IiideaDeclaration {
    /// Takes `preferences` from the store in place of the declared ones (each piece's whole
    /// preferences; a piece without stored ones keeps its own).
    mutating func apply(_ preferences: PiecePreferences, at location: SourceLocation) {
        if let service = preferences.service { servicePreferences = ConfigNode(json: service, location: location) }
        if let action = preferences.action { actionPreferences = ConfigNode(json: action, location: location) }
        hasPreferenceOverride = preferences.service != nil || preferences.action != nil
    }

    /// The preferences as JSON, as the pieces get them.
    public var preferences: PiecePreferences {
        PiecePreferences(service: servicePreferences?.json, action: actionPreferences?.json)
    }

    /// The preferences as the console and the API show them: values from the environment
    /// (secrets) masked.
    public var shownPreferences: PiecePreferences {
        PiecePreferences(service: servicePreferences?.maskedJSON, action: actionPreferences?.maskedJSON)
    }

    /// The pieces whose preferences hold values from the environment: they are shown masked
    /// and changed only in the route file (the store never holds a secret).
    public var lockedPieces: (service: Bool, action: Bool) {
        (servicePreferences?.isSecret ?? false, actionPreferences?.isSecret ?? false)
    }

    /// What the plugin pieces see of this iiidea: a change re-enables them.
    var pieceFingerprint: String {
        [
            trigger.value.description, action.value.description, remote?.value.description ?? "", piece.value,
            servicePreferences?.json.serialized() ?? "", actionPreferences?.json.serialized() ?? "",
        ].joined(separator: "\u{1F}")
    }
}
