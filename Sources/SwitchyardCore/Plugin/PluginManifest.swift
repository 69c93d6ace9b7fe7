/// Whether a port produces or consumes envelopes.
public enum PortDirection: String, Sendable, Hashable {
    /// The port emits envelopes into the router.
    case source
    /// The port takes envelopes from the router.
    case sink
    /// An iiidea service piece: JSON in, JSON out (`types` are the types of what it returns).
    case service
}

/// A port as a plugin manifest declares it.
public struct PortDeclaration: Sendable, Hashable {
    /// The port name, unique within the plugin.
    public var name: String
    /// Source or sink.
    public var direction: PortDirection
    /// Envelope types it emits or accepts; `["*"]` for any.
    public var types: [String]
    /// The instance configuration key that must be present for the port to exist.
    public var requires: String?
    /// What the port does.
    public var summary: String
    /// For a sink: the source ports of the same instance that envelopes delivered here can
    /// come out of again (a relay's `in` feeds its `out`). Loop checks follow these.
    public var feeds: [String]
    /// JSON Schema of the preferences an iiidea gives this port when it is a piece (the
    /// action's `preferences`, a service piece's); nil when it takes none. The console renders
    /// its settings form from it and the router checks preferences against it.
    public var preferences: JSONValue?

    /// Creates a port declaration.
    public init(
        name: String,
        direction: PortDirection,
        types: [String],
        requires: String? = nil,
        feeds: [String] = [],
        summary: String = "",
        preferences: JSONValue? = nil
    ) {
        self.preferences = preferences
        self.name = name
        self.direction = direction
        self.types = types
        self.requires = requires
        self.feeds = feeds
        self.summary = summary
    }

    /// Whether the port accepts or emits any type.
    public var isUntyped: Bool { types.contains("*") }
}

/// A command a plugin adds to the `switchyard` executable: `switchyard PLUGIN NAME ARGS…`.
public struct PluginCommand: Sendable, Hashable {
    /// The command word after the plugin name (`realm` in `switchyard qeo realm init`).
    public var name: String
    /// One line for `switchyard --help` and `switchyard PLUGIN --help`.
    public var summary: String

    /// Creates a command declaration.
    public init(name: String, summary: String) {
        self.name = name
        self.summary = summary
    }
}

/// The self-description a plugin hands over in negotiation: name, version, ports, the types it
/// defines and the JSON Schema of its instance configuration.
public struct PluginManifest: Sendable {
    /// Plugin name, the `plugin:` value in YAML.
    public var name: String
    /// Semantic version of the plugin.
    public var version: String
    /// One line on what it is.
    public var summary: String
    /// Its ports.
    public var ports: [PortDeclaration]
    /// Body schemas of the envelope types it defines, by type name.
    public var types: [String: JSONValue]
    /// JSON Schema of an instance configuration.
    public var config: JSONValue
    /// Commands it adds to the `switchyard` executable.
    public var commands: [PluginCommand]

    /// Creates a manifest.
    public init(
        name: String,
        version: String,
        summary: String = "",
        ports: [PortDeclaration],
        types: [String: JSONValue] = [:],
        config: JSONValue = ["type": "object"],
        commands: [PluginCommand] = []
    ) {
        self.name = name
        self.version = version
        self.summary = summary
        self.ports = ports
        self.types = types
        self.config = config
        self.commands = commands
    }

    /// The port called `name`.
    public func port(named name: String) -> PortDeclaration? { ports.first { $0.name == name } }

    /// The manifest as the JSON the ABI carries.
    public var json: JSONValue {
        var manifest: [String: JSONValue] = [
            "name": .string(name),
            "version": .string(version),
            "description": .string(summary),
            "ports": .array(ports.map(\.json)),
            "types": .object(types),
            "config": config,
        ]
        if !commands.isEmpty {
            manifest["commands"] = .array(commands.map { ["name": .string($0.name), "summary": .string($0.summary)] })
        }
        return .object(manifest)
    }

    /// Parses and checks manifest JSON: required fields, port names, directions, and that every
    /// schema compiles. The error says which part is wrong.
    public init(parsing bytes: some Collection<UInt8>) throws(ManifestError) {
        let members = try ManifestError.object(parsing: bytes, what: "manifest")
        func string(_ key: String) throws(ManifestError) -> String {
            guard let value = members[key]?.stringValue, !value.isEmpty else {
                throw ManifestError(reason: "manifest field '\(key)' must be a non-empty string")
            }
            return value
        }
        name = try string("name")
        guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw ManifestError(reason: "plugin name '\(name)' may hold only letters, digits, '-' and '_'")
        }
        version = try string("version")
        summary = members["description"]?.stringValue ?? ""
        guard case .array(let portValues)? = members["ports"] else {
            throw ManifestError(reason: "manifest field 'ports' must be an array")
        }
        var ports: [PortDeclaration] = []
        for (index, value) in portValues.enumerated() {
            guard let portName = value["name"]?.stringValue, !portName.isEmpty,
                portName.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            else {
                throw ManifestError(reason: "ports[\(index)].name must be a non-empty name of letters, digits, '-' and '_'")
            }
            guard let directionText = value["direction"]?.stringValue, let direction = PortDirection(rawValue: directionText) else {
                throw ManifestError(reason: "port '\(portName)': direction must be \"source\", \"sink\" or \"service\"")
            }
            guard case .array(let typeValues)? = value["types"], !typeValues.isEmpty,
                typeValues.allSatisfy({ ($0.stringValue ?? "").isEmpty == false })
            else {
                throw ManifestError(reason: "port '\(portName)': types must be a non-empty array of type names (or [\"*\"])")
            }
            if ports.contains(where: { $0.name == portName }) {
                throw ManifestError(reason: "port '\(portName)' is declared twice")
            }
            if let preferences = value["preferences"] {
                do {
                    _ = try Schema(json: preferences)
                } catch {
                    throw ManifestError(reason: "port '\(portName)': preferences \(error)")
                }
            }
            ports.append(
                PortDeclaration(
                    name: portName,
                    direction: direction,
                    types: typeValues.compactMap(\.stringValue),
                    requires: value["requires"]?.stringValue,
                    feeds: value["feeds"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                    summary: value["description"]?.stringValue ?? "",
                    preferences: value["preferences"]
                )
            )
        }
        for port in ports {
            for fed in port.feeds where ports.first(where: { $0.name == fed })?.direction != .source {
                throw ManifestError(reason: "port '\(port.name)' feeds '\(fed)', which is not a source port of this plugin")
            }
        }
        self.ports = ports
        types = try ManifestError.typeSchemas(members["types"], what: "manifest") ?? [:]
        var commands: [PluginCommand] = []
        switch members["commands"] {
        case nil: break
        case .array(let values)?:
            for (index, value) in values.enumerated() {
                guard let commandName = value["name"]?.stringValue, !commandName.isEmpty, !commandName.hasPrefix("-"),
                    commandName.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
                else {
                    throw ManifestError(reason: "commands[\(index)].name must be a non-empty name of letters, digits, '-' and '_'")
                }
                if commands.contains(where: { $0.name == commandName }) {
                    throw ManifestError(reason: "command '\(commandName)' is declared twice")
                }
                commands.append(PluginCommand(name: commandName, summary: value["summary"]?.stringValue ?? ""))
            }
        default: throw ManifestError(reason: "manifest field 'commands' must be an array")
        }
        self.commands = commands
        config = members["config"] ?? ["type": "object"]
        do {
            _ = try Schema(json: config)
        } catch {
            throw ManifestError(reason: "config \(error)")
        }
    }
}

extension ManifestError {
    /// The members of the JSON object `bytes` hold; `what` names it in the error.
    static func object(parsing bytes: some Collection<UInt8>, what: String) throws(ManifestError) -> [String: JSONValue] {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: bytes)
        } catch {
            throw ManifestError(reason: "\(what) is not JSON: \(error)")
        }
        guard case .object(let members) = json else { throw ManifestError(reason: "\(what) must be a JSON object") }
        return members
    }

    /// The `types` member of a manifest or description: type names and body schemas that must
    /// compile; nil when absent.
    static func typeSchemas(_ value: JSONValue?, what: String) throws(ManifestError) -> [String: JSONValue]? {
        switch value {
        case nil: return nil
        case .object(let declared)?:
            for (typeName, schema) in declared {
                do {
                    _ = try Schema(json: schema)
                } catch {
                    throw ManifestError(reason: "type '\(typeName)': \(error)")
                }
            }
            return declared
        default: throw ManifestError(reason: "\(what) field 'types' must be an object of schemas")
        }
    }
}

/// Why a manifest was refused.
public struct ManifestError: Error, Sendable, CustomStringConvertible {
    /// What is wrong with it.
    public var reason: String

    /// Creates the error.
    public init(reason: String) { self.reason = reason }

    public var description: String { reason }
}
