public import SwitchyardConfig
public import SwitchyardCore
public import SwitchyardRouting
public import SwitchyardScript

/// A validated routing graph, ready to run: every name resolved, every condition and template
/// compiled, every type checked.
public struct GraphPlan: Sendable {
    /// The instances to create, in declaration order.
    public var instances: [PlannedInstance]
    /// The routes, in declaration order.
    public var routes: [PlannedRoute]
    /// Every known envelope type.
    public var types: TypeRegistry
    /// `spool.path`, if the route files set it.
    public var spoolPath: String?
    /// `spool.sync`: `full` unless the route files say `normal`.
    public var spoolSync: SpoolSync = .full
    /// `admin.listen`, if the route files set it.
    public var adminListen: String?
    /// `admin.token`, if the route files set it.
    public var adminToken: String?
    /// `admin.allowed_hosts` of the route files.
    public var adminAllowedHosts: [String] = []
    /// The admin port's connection guard as the route files set it.
    public var adminConnections = AdminConnectionSettings()
    /// `tracing:` of the route files; nil: tracing is off.
    public var tracing: TracingSettings?

    /// The iiideas.
    public var iiideas: [PlannedIiidea] = []
    /// The store's catalog (`iiidea_templates:`), each checked as an iiidea would be.
    public var iiideaTemplates: [IiideaTemplate] = []
    /// Runs kept per iiidea.
    public var iiideaHistory: Int = 1000
    /// The OAuth 2.0 connections of the route files (`oauth:`).
    public var oauth: [OAuthDeclaration] = []

    /// Remarks that are not errors (the graph runs as written), such as an at-least-once
    /// route whose source confirms upstream before the router has the envelope durably.
    /// `switchyard validate` prints them as notes.
    public var notes: [Diagnostic] = []

    /// Graphs that run but probably not as meant, such as a source port feeding routes of
    /// both deliveries. `switchyard validate` prints them as warnings.
    public var warnings: [Diagnostic] = []

    /// The warnings and notes as `file:line:column: warning|note: message` lines, the form
    /// compilers use, warnings first.
    public var noteLines: [String] {
        func lines(_ items: [Diagnostic], _ kind: String) -> [String] {
            Diagnostics(items).items.map { item in (item.location.map { "\($0): " } ?? "") + "\(kind): \(item.message)" }
        }
        return lines(warnings, "warning") + lines(notes, "note")
    }

    /// Whether the spool database is needed: at-least-once routes keep envelopes there,
    /// iiideas their state and run history; and a route file that names it (`spool.path`)
    /// wants it for plugins' durable state (the host's state service), as does an instance
    /// whose description says it keeps state.
    public var needsSpool: Bool {
        routes.contains { $0.declaration.delivery == .atLeastOnce } || !iiideas.isEmpty || !iiideaTemplates.isEmpty || spoolPath != nil
            || instances.contains { $0.keepsState } || !oauth.isEmpty
    }
}

/// An instance with its plugin and the ports its configuration enables.
public struct PlannedInstance: Sendable {
    /// The YAML name.
    public var name: String
    /// The plugin it instantiates.
    public var plugin: LoadedPlugin
    /// Its configuration as the plugin receives it.
    public var config: JSONValue
    /// The ports this configuration enables.
    public var ports: [PortDeclaration]
    /// Every port its description declares, enabled or not (the manifest's when the plugin
    /// does not describe instances): what a route's error names.
    public var declaredPorts: [PortDeclaration]
    /// Source ports that confirm upstream only once the router has settled what they emitted
    /// (the description's `settles`).
    public var settles: Set<String> = []
    /// Source ports settled only once the first delivery has ended (the description's `redelivers`).
    public var redelivers: Set<String> = []
    /// Sink ports whose `ok` means the far side confirmed (the description's `confirms`).
    public var confirms: Set<String> = []
    /// Sink ports the router may deliver to on the emitting thread (the description's
    /// `delivers_inline`).
    public var deliversInline: Set<String> = []
    /// Ports the configuration makes at-most-once, with what to change (the description's
    /// `at_most_once`).
    public var atMostOnce: [String: String] = [:]
    /// Ports at-least-once holds through only in part, with the case it does not cover (the
    /// description's `cautions`).
    public var cautions: [String: String] = [:]
    /// Whether it keeps state in the router's store (the description's `keeps_state`).
    public var keepsState = false
    /// Its own log level, if the YAML set one.
    public var logLevel: String?
    /// Whether, with a shared store, one router at a time runs it (`exclusive: true`).
    public var exclusive = false
    /// Where it was declared.
    public var location: SourceLocation
}

extension PlannedInstance {
    /// An instance of `plugin` with `config`, its `ports` enabled (of `declaredPorts`),
    /// declared at `location`; nothing settles, confirms or is exclusive.
    package init(
        name: String, plugin: LoadedPlugin, config: JSONValue, ports: [PortDeclaration], declaredPorts: [PortDeclaration],
        location: SourceLocation
    ) {
        self.name = name
        self.plugin = plugin
        self.config = config
        self.ports = ports
        self.declaredPorts = declaredPorts
        self.location = location
    }
}

/// A route with everything compiled.
public struct PlannedRoute: Sendable {
    /// The declaration as written.
    public var declaration: RouteDeclaration
    /// The compiled `when:`.
    public var condition: Condition?
    /// The compiled `map:` or `template:`.
    public var transform: Transform?
    /// The compiled `script:`, with its Lua state (kept across a reload that leaves the
    /// script unchanged: see ``ReloadTransaction``).
    public var script: Script?
    /// What the script's outputs take when it does not say.
    public var scriptDefaults = ScriptDefaults()
    /// The types a script's outputs are checked against at run time.
    public var scriptTypes: TypeRegistry?
    /// The compiled `dedupe.key`, over the envelope as it arrives.
    public var dedupeKey: Template?
    /// Whether ``script`` is the running route's, carried over by a reload with its state.
    var carriesScriptState = false
    /// Route name.
    public var name: String { declaration.name }
}

/// How a route reshapes an envelope.
public struct Transform: Sendable {
    /// The body it builds.
    public enum Body: Sendable {
        /// `map:`: a JSON body built from templates.
        case map(MapNode)
        /// `template:`: a text body.
        case template(Template)
    }

    /// The body builder.
    public var body: Body
    /// The type of the produced envelope (`nil`: keep the source's).
    public var outputType: String?
    /// The content type of the produced envelope.
    public var contentType: String

    /// Applies the transform.
    public func apply(_ scope: inout EnvelopeScope) -> Envelope {
        var output = scope.envelope
        switch body {
        case .map(let node):
            var body: [UInt8] = []
            body.reserveCapacity(64)
            node.write(&scope, to: &body)
            output.body = body
        case .template(let template): output.body = Array(template.renderText(&scope).utf8)
        }
        if let outputType { output.type = outputType }
        output.contentType = contentType
        return output
    }
}

/// A `map:` value: templates at the leaves, structure kept.
public indirect enum MapNode: Sendable {
    /// A string: a template.
    case template(Template)
    /// A number, Boolean or null, used as written.
    case literal(JSONValue)
    /// A nested mapping.
    case object([(String, MapNode)])
    /// A list.
    case array([MapNode])

    /// Renders the value for one envelope.
    public func render(_ scope: inout EnvelopeScope) -> JSONValue {
        switch self {
        case .template(let template): return template.render(&scope)
        case .literal(let value): return value
        case .object(let members):
            var object: [String: JSONValue] = [:]
            object.reserveCapacity(members.count)
            for (key, node) in members { object[key] = node.render(&scope) }
            return .object(object)
        case .array(let elements):
            var array: [JSONValue] = []
            array.reserveCapacity(elements.count)
            for element in elements { array.append(element.render(&scope)) }
            return .array(array)
        }
    }

    /// Appends the compact JSON of ``render(_:)``'s value to `output`, byte for byte what
    /// ``JSONValue/write(to:)`` would write, without building the value first: an object
    /// whose keys are distinct and sorted (as the route validator compiles them) is written
    /// member by member, not gathered into a dictionary and sorted per envelope.
    public func write(_ scope: inout EnvelopeScope, to output: inout [UInt8]) {
        switch self {
        case .template(let template): template.render(&scope).write(to: &output)
        case .literal(let value): value.write(to: &output)
        case .object(let members):
            guard Self.areDistinctAndSorted(members) else {
                render(&scope).write(to: &output)
                return
            }
            output.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.0, to: &output)
                output.append(UInt8(ascii: ":"))
                member.1.write(&scope, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(&scope, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        }
    }

    /// Members in the order a JSON object's keys are written, or as given when two share a
    /// key (the last then wins, as in a dictionary).
    static func sortedMembers(_ members: [(String, MapNode)]) -> [(String, MapNode)] {
        let sorted = members.sorted { $0.0 < $1.0 }
        return areDistinctAndSorted(sorted) ? sorted : members
    }

    private static func areDistinctAndSorted(_ members: [(String, MapNode)]) -> Bool {
        var previous: String?
        for member in members {
            if let previous, previous >= member.0 { return false }
            previous = member.0
        }
        return true
    }
}

/// An iiidea with its pieces compiled.
public struct PlannedIiidea: Sendable {
    /// The service piece.
    public enum Service: Sendable {
        /// The trigger's output unchanged.
        case pass
        /// `{ "text": ... }` from a template (compiled into the route's transform).
        case template
        /// A JSON object built from templates (compiled into the route's transform).
        case map
        /// The trigger's output after a pause, in nanoseconds.
        case delay(UInt64)
        /// An HTTP call: the request (`method`, `url`, `headers`, `body`) rendered per run,
        /// within `policy`; the response JSON is the output.
        /// `oauth` names the connection whose access token it sends (`auth: { oauth: NAME }`).
        case http(request: MapNode, timeout: UInt64, policy: HTTPPiecePolicy, oauth: String?)
        /// A Lua script (compiled into the route's `script`): its one output is the action's input.
        case script
        /// A plugin's service port (`piece_execute`), given the preferences as written.
        case plugin(PortReference, preferences: JSONValue, timeout: UInt64)
    }

    /// The declaration as written.
    public var declaration: IiideaDeclaration
    /// The chain from the trigger port.
    public var route: PlannedRoute
    /// The chain from the remote port, if any: envelopes whose `body.notification_id` names
    /// the iiidea, with `body.data` as the trigger output.
    public var remoteRoute: PlannedRoute?
    /// The service piece.
    public var service: Service
    /// The action preferences: templates over the service output.
    public var actionPreferences: MapNode?

    /// The iiidea's id.
    public var id: String { declaration.id }
}
