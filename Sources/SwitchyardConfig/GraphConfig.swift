public import SwitchyardCore
public import SwitchyardScript

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
    /// The backlog goes to the durable spool on disk, up to the route's spool limit; past it
    /// the route blocks. Needs `delivery: at-least-once`.
    case spool
}

/// What a route promises about each envelope it accepts.
public enum Delivery: String, Sendable, CaseIterable {
    /// Delivered once or lost (on a crash, a full `drop_oldest` queue or a failed sink).
    case atMostOnce = "at-most-once"
    /// Written to the durable spool before the source is acknowledged; delivered (again, after
    /// a crash) until every sink acknowledges, retried with backoff, dead-lettered past the
    /// retry limit.
    case atLeastOnce = "at-least-once"
}

/// How an at-least-once route retries a sink that failed.
public struct RetryPolicy: Sendable, Equatable {
    /// Deliveries tried before the envelope becomes a dead letter (the first one included).
    public var attempts: Int
    /// The pause after the first failure, in nanoseconds; it doubles after each failure.
    public var backoff: UInt64
    /// The longest pause, in nanoseconds.
    public var maxBackoff: UInt64

    /// The defaults: 8 attempts, 200 ms doubling up to 1 minute.
    public static let standard = RetryPolicy(attempts: 8, backoff: 200_000_000, maxBackoff: 60_000_000_000)

    /// Creates a policy.
    public init(attempts: Int, backoff: UInt64, maxBackoff: UInt64) {
        self.attempts = attempts
        self.backoff = backoff
        self.maxBackoff = maxBackoff
    }

    /// The pause before attempt `failures + 1`: exponential, with full jitter over its upper
    /// half so that many envelopes failing at once do not retry in lockstep.
    public func pause(afterFailures failures: Int, random: Double) -> UInt64 {
        let exponent = min(max(failures - 1, 0), 40)
        let ceiling = min(Double(backoff) * pow2(exponent), Double(maxBackoff))
        return UInt64(ceiling * (0.5 + 0.5 * min(max(random, 0), 1)))
    }

    private func pow2(_ exponent: Int) -> Double { Double(sign: .plus, exponent: exponent, significand: 1) }
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
    /// `delivery:`.
    public var delivery: Delivery = .atMostOnce
    /// `retry:` (at-least-once routes).
    public var retry: RetryPolicy = .standard
    /// `dedupe:`: envelopes whose key was seen within this window (nanoseconds) are dropped.
    public var dedupeWindow: UInt64?
    /// `dedupe.key`: a template over the arriving envelope whose text is the key (a message id
    /// in the payload, an MQTT 5 user property); without one the key is the envelope id.
    public var dedupeKey: Located<String>?
    /// `queue.spool_limit`: bytes the route may hold in the spool before it blocks.
    public var spoolLimit: Int = ConfigLoader.defaultSpoolLimit
    /// `script:`: Lua run on each envelope after `when:`, instead of `map:`/`template:`.
    public var script: ScriptDeclaration?
}

/// An iiidea from YAML `iiideas:`: a trigger port (with an optional condition), a service
/// piece and an action port, run as one chain.
public struct IiideaDeclaration: Sendable {
    /// The iiidea's id (unique).
    public var id: String
    /// Where it was declared.
    public var location: SourceLocation
    /// A human title.
    public var title: String?
    /// The source port whose envelopes start runs.
    public var trigger: Located<PortReference>
    /// The trigger's condition.
    public var when: Located<String>?
    /// The service piece: `pass`, `template`, `map`, `delay`, `http`, or `instance.port` of a
    /// plugin's service port.
    public var piece: Located<String>
    /// The service piece's preferences.
    public var servicePreferences: ConfigNode?
    /// The sink port that acts.
    public var action: Located<PortReference>
    /// The action's preferences (templates over the service output).
    public var actionPreferences: ConfigNode?
    /// A source port whose envelopes naming this iiidea (`body.notification_id`) run it
    /// remotely.
    public var remote: Located<PortReference>?
    /// Whether it is enabled before anyone enables or disables it.
    public var enabledByDefault: Bool
    /// Where it comes from: a route file, or the store (obtained from a template).
    public var origin: IiideaOrigin = .routeFile
    /// Whether preferences from the store replace the route file's.
    public var hasPreferenceOverride = false
    /// The user or device it belongs to (`owner:`): the admin API filters by it, and a remote
    /// run must name it.
    public var owner: String?

    /// Whether `text` can be an owner: 1 to 128 letters, digits, `.`, `_`, `:`, `@` or `-` —
    /// nothing a condition or a header could misread.
    public static func isOwner(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || [0x2E, 0x5F, 0x3A, 0x40, 0x2D].contains(byte)
            }
    }
}

/// Where an iiidea is declared.
public enum IiideaOrigin: Sendable, Equatable {
    /// Written in a route file: read-only for the console, but its preferences may be overridden.
    case routeFile
    /// Obtained from the template with this id and kept in the router's store.
    case obtained(template: String)
}

/// An entry of `iiidea_templates:`: an iiidea a person obtains from the store with their own
/// preferences (the template's are the defaults).
public struct IiideaTemplate: Sendable {
    /// The iiidea it makes; its id is the template's id.
    public var declaration: IiideaDeclaration
    /// What it does, for the store page.
    public var description: String?
    /// Words the store's search also matches.
    public var tags: [String]

    /// The template's id.
    public var id: String { declaration.id }

    /// Creates a template.
    public init(declaration: IiideaDeclaration, description: String?, tags: [String]) {
        self.declaration = declaration
        self.description = description
        self.tags = tags
    }

    /// Whether every word of `query` is in its id, title, description or tags (case-insensitive).
    public func matches(_ query: String) -> Bool {
        let text = ([id, declaration.title ?? "", description ?? ""] + tags).joined(separator: " ").lowercased()
        return query.lowercased().split(whereSeparator: \.isWhitespace).allSatisfy { text.contains($0) }
    }
}

extension IiideaDeclaration {
    /// The route that carries the chain: from the trigger (or the remote port) to the action,
    /// with the trigger's condition and the service's `map`, so routes' type checks apply.
    public func route(remote: Bool, map: ConfigNode?, when condition: Located<String>?, script: ScriptDeclaration? = nil)
        -> RouteDeclaration
    {
        RouteDeclaration(
            name: remote ? "iiidea \(id) (remote)" : "iiidea \(id)", location: location, from: remote ? (self.remote ?? trigger) : trigger,
            to: [action], when: condition, map: map, template: nil, outputType: nil, contentType: nil,
            queueSize: ConfigLoader.defaultQueueSize, onFull: .block, allowLoops: false, script: script)
    }
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
