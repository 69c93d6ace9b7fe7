import SwitchyardCore

/// Types every graph has: what a `map:` or `template:` produces when no `type:` names another.
public enum BuiltinTypes {
    /// Any JSON body (`map:` output).
    public static let json = "json"
    /// A text body (`template:` output).
    public static let text = "text"

    static let registry: TypeRegistry = {
        var registry = TypeRegistry()
        try? registry.register(TypeDefinition(name: json, schema: .any, origin: "built-in"))
        if let textSchema = try? Schema(json: ["type": "string"]) {
            try? registry.register(TypeDefinition(name: text, schema: textSchema, origin: "built-in"))
        }
        return registry
    }()
}
