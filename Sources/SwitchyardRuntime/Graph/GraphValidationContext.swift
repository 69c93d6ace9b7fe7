internal import SwitchyardConfig
internal import SwitchyardCore

/// What every check of one ``GraphValidator/validate(_:)`` run shares: the configuration being
/// checked, the loaded plugins, and the diagnostics found so far.
///
/// One value handed `inout` from check to check, so each check reads the same configuration
/// and appends to the one list, and the diagnostics come out in the order the checks run.
struct GraphValidationContext {
    /// The configuration being checked.
    let config: GraphConfig
    /// The loaded plugins by name.
    let plugins: [String: LoadedPlugin]
    /// Every problem found so far, in the order found.
    var diagnostics: [Diagnostic] = []
}
