public import SwitchyardCore
import SwitchyardScript

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
    /// The instance configuration: the mapping without `plugin`, `log_level` and `exclusive`.
    public var config: ConfigNode
    /// `log_level:`: the instance's own log level (its plugin's messages and the router's
    /// about it), if set.
    public var logLevel: Located<String>?
    /// `exclusive:`: with a shared store, one router at a time runs the instance (a listener
    /// that cannot be shared: a SIP registration, a BLE adapter, an enrollment endpoint).
    public var exclusive: Located<Bool>?
}

/// The merged configuration of every route file.
public struct GraphConfig: Sendable {
    /// `plugins.dir`, if set.
    public var pluginsDirectory: Located<String>?
    /// `spool.path`, if set.
    public var spoolPath: Located<String>?
    /// `spool.sync`, if set.
    public var spoolSync: Located<SpoolSync>?
    /// `store.url`, if set: the PostgreSQL database routers share plugin state in.
    public var storeURL: Located<String>?
    /// `admin.listen`, if set: `host:port` of the admin HTTP port.
    public var adminListen: Located<String>?
    /// `admin.token`, if set: the bearer token the admin port requires.
    public var adminToken: Located<String>?
    /// `admin.allowed_hosts`: host names (besides IP literals and `localhost`) that requests
    /// may name in their `Host` header.
    public var adminAllowedHosts: [String] = []
    /// `admin.max_connections`, `max_connections_per_peer` and `header_timeout`, where set.
    public var adminConnections = AdminConnectionSettings()
    /// `tracing:`, if a route file has it: tracing is on.
    public var tracing: TracingSettings?
    /// `types:`.
    public var types: [TypeDeclaration] = []
    /// `instances:`, in the order written.
    public var instances: [InstanceDeclaration] = []
    /// `routes:`, in the order written.
    public var routes: [RouteDeclaration] = []
    /// `iiideas:`, in the order written.
    public var iiideas: [IiideaDeclaration] = []
    /// `iiidea_templates:`, the store's catalog, in the order written.
    public var iiideaTemplates: [IiideaTemplate] = []
    /// `oauth:`, the OAuth 2.0 connections pieces may use.
    public var oauth: [OAuthDeclaration] = []
    /// `iiidea_history.keep`: runs kept per iiidea.
    public var iiideaHistory: Int = ConfigLoader.defaultIiideaHistory
    /// The files that were read.
    public var files: [String] = []
    /// Every value substituted from the environment: never printed.
    public var secrets: Set<String> = []

    /// An empty configuration.
    public init() {}

    /// The instance called `name`.
    public func instance(named name: String) -> InstanceDeclaration? { instances.first { $0.name == name } }
}

/// The admin port's connection guard as the route files set it; nil where they do not (the
/// admin server's defaults apply).
public struct AdminConnectionSettings: Sendable, Equatable {
    /// `admin.max_connections`: connections open at once.
    public var maximumConnections: Int?
    /// `admin.max_connections_per_peer`: connections open at once from one address.
    public var maximumPerPeer: Int?
    /// `admin.header_timeout`: how long a request head may take.
    public var headerTimeout: Duration?

    /// Nothing set.
    public init() {}
}
