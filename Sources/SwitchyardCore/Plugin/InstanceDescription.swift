/// What one plugin instance is, derived by the plugin from its configuration (ABI version 2's
/// `describe`): its ports, the envelope types it adds, and the source ports that confirm
/// upstream only once the router has settled what they emitted.
public struct InstanceDescription: Sendable, Hashable {
    /// The instance's ports; nil means the manifest's.
    public var ports: [PortDeclaration]?
    /// Body schemas of the types the instance adds (names start with the plugin's name and a
    /// dot), by type name; nil means the manifest's.
    public var types: [String: JSONValue]?
    /// Source ports whose upstream confirmation waits for `settled`.
    public var settles: [String]

    /// Creates a description.
    public init(ports: [PortDeclaration]? = nil, types: [String: JSONValue]? = nil, settles: [String] = []) {
        self.ports = ports
        self.types = types
        self.settles = settles
    }

    /// The description as the JSON `describe` writes.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["settles": .array(settles.map { .string($0) })]
        if let ports { object["ports"] = .array(ports.map(\.json)) }
        if let types { object["types"] = .object(types) }
        return .object(object)
    }

    /// Parses a description and checks it the way a manifest's ports and types are checked.
    public init(parsing bytes: some Collection<UInt8>) throws(ManifestError) {
        let members = try ManifestError.object(parsing: bytes, what: "description")
        if let portValues = members["ports"] {
            // The manifest's own checks serve: a stand-in manifest carries the ports.
            let probe: JSONValue = ["name": "described", "version": "0", "ports": portValues]
            ports = try PluginManifest(parsing: probe.serializedBytes()).ports
        }
        types = try ManifestError.typeSchemas(members["types"], what: "description")
        switch members["settles"] {
        case nil: settles = []
        case .array(let values)? where values.allSatisfy({ $0.stringValue != nil }): settles = values.compactMap(\.stringValue)
        default: throw ManifestError(reason: "description field 'settles' must be an array of port names")
        }
    }
}

extension PortDeclaration {
    /// The port as manifest JSON.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(name),
            "direction": .string(direction.rawValue),
            "types": .array(types.map { .string($0) }),
        ]
        if let requires { object["requires"] = .string(requires) }
        if !feeds.isEmpty { object["feeds"] = .array(feeds.map { .string($0) }) }
        if !summary.isEmpty { object["description"] = .string(summary) }
        if let preferences { object["preferences"] = preferences }
        return .object(object)
    }
}
