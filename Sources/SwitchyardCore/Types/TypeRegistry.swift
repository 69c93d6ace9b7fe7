/// A named envelope type: the schema of its body and where it was defined.
public struct TypeDefinition: Sendable {
    /// The type name, e.g. `core.Tick`.
    public var name: String
    /// Schema of the body.
    public var schema: Schema
    /// Who defined it: `plugin core` or `Routes/main.yaml:3:5`.
    public var origin: String

    /// Creates a definition.
    public init(name: String, schema: Schema, origin: String) {
        self.name = name
        self.schema = schema
        self.origin = origin
    }
}

/// Envelope types by name, gathered from plugin manifests and the YAML `types:` section.
public struct TypeRegistry: Sendable {
    /// Every registered type, by name.
    public private(set) var definitions: [String: TypeDefinition] = [:]

    /// An empty registry.
    public init() {}

    /// Registers a type. A second definition of a name is refused (the message names both
    /// origins) — two plugins silently disagreeing about a type is worse than a clear error.
    public mutating func register(_ definition: TypeDefinition) throws(TypeRegistryError) {
        if let existing = definitions[definition.name] {
            throw TypeRegistryError(
                reason: "type '\(definition.name)' is defined by \(existing.origin) and again by \(definition.origin)"
            )
        }
        definitions[definition.name] = definition
    }

    /// The definition of `name`.
    public subscript(name: String) -> TypeDefinition? { definitions[name] }
}

/// A type registration that was refused.
public struct TypeRegistryError: Error, Sendable, CustomStringConvertible {
    /// Why.
    public var reason: String
    public var description: String { reason }
}
