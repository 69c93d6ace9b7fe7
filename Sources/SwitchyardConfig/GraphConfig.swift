public import SwitchyardCore

/// A value with the place it was written.
public struct Located<Value: Sendable>: Sendable {
    /// The value.
    public var value: Value
    /// Where it was written.
    public var location: SourceLocation

    /// Creates a located value.
    public init(_ value: Value, at location: SourceLocation) {
        self.value = value
        self.location = location
    }
}

/// `instance.port`.
public struct PortReference: Sendable, Hashable, CustomStringConvertible {
    /// The instance name.
    public var instance: String
    /// The port name.
    public var port: String

    /// Creates a reference.
    public init(instance: String, port: String) {
        self.instance = instance
        self.port = port
    }

    /// Parses `instance.port`.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        instance = String(parts[0])
        port = String(parts[1])
    }

    public var description: String { "\(instance).\(port)" }
}

/// What a route queue does when it is full.
public enum OnFull: String, Sendable, CaseIterable {
    /// The source is told to wait (emit returns "full") until there is room.
    case block
    /// The oldest queued envelope is dropped (and counted) to make room.
    case dropOldest = "drop_oldest"
}

/// A type defined in YAML `types:`.
public struct TypeDeclaration: Sendable {
    /// The type name.
    public var name: String
    /// The JSON Schema of the body, as written.
    public var schema: JSONValue
    /// Where it was declared.
    public var location: SourceLocation
}

/// A plugin instance from YAML `instances:`.
public struct InstanceDeclaration: Sendable {
    /// The instance name (the mapping key).
    public var name: String
    /// Where the name was written.
    public var location: SourceLocation
    /// The plugin it instantiates.
    public var plugin: Located<String>
    /// The instance configuration: the mapping without `plugin`.
    public var config: ConfigNode
}

/// A route from YAML `routes:`.
public struct RouteDeclaration: Sendable {
    /// The route name (given, or `file#index`).
    public var name: String
    /// Where the route starts.
    public var location: SourceLocation
    /// The source port.
    public var from: Located<PortReference>
    /// The sink ports (fan-out).
    public var to: [Located<PortReference>]
    /// The condition text.
    public var when: Located<String>?
    /// `map:`: a mapping of body fields to templates (nested mappings and lists allowed).
    public var map: ConfigNode?
    /// `template:`: a text body.
    public var template: Located<String>?
    /// `type:`: the type of the envelope the route produces.
    public var outputType: Located<String>?
    /// `content_type:` of the produced envelope.
    public var contentType: Located<String>?
    /// Queue capacity in envelopes.
    public var queueSize: Int
    /// Full-queue policy.
    public var onFull: OnFull
    /// `loop: allow` lets envelopes re-enter instances already in their trace.
    public var allowLoops: Bool
}

/// The merged configuration of every route file.
public struct GraphConfig: Sendable {
    /// `plugins.dir`, if set.
    public var pluginsDirectory: Located<String>?
    /// `types:`.
    public var types: [TypeDeclaration] = []
    /// `instances:`, in the order written.
    public var instances: [InstanceDeclaration] = []
    /// `routes:`, in the order written.
    public var routes: [RouteDeclaration] = []
    /// The files that were read.
    public var files: [String] = []
    /// Every value substituted from the environment: never printed.
    public var secrets: Set<String> = []

    /// An empty configuration.
    public init() {}

    /// The instance called `name`.
    public func instance(named name: String) -> InstanceDeclaration? { instances.first { $0.name == name } }
}
