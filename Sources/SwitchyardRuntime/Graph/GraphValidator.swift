public import SwitchyardConfig
public import SwitchyardCore
internal import SwitchyardRouting

/// Checks a configuration against the loaded plugins and compiles it into a ``GraphPlan``:
/// what `switchyard validate` reports and what `switchyard run` refuses to start without.
public struct GraphValidator: Sendable {
    /// The loaded plugins by name.
    public let plugins: [String: LoadedPlugin]

    /// Creates a validator over loaded plugins.
    public init(plugins: [LoadedPlugin]) {
        self.plugins = Dictionary(plugins.map { ($0.manifest.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Validates; the plan is `nil` when there is any diagnostic.
    public func validate(_ config: GraphConfig) -> (GraphPlan?, [Diagnostic]) {
        var diagnostics: [Diagnostic] = []
        var registry = BuiltinTypes.registry
        for plugin in plugins.values.sorted(by: { $0.manifest.name < $1.manifest.name }) {
            for (name, schemaJSON) in plugin.manifest.types.sorted(by: { $0.key < $1.key }) {
                guard let schema = try? Schema(json: schemaJSON) else { continue }  // checked at load
                do {
                    try registry.register(TypeDefinition(name: name, schema: schema, origin: "plugin \(plugin.manifest.name)"))
                } catch {
                    diagnostics.append(Diagnostic("\(error)", at: nil))
                }
            }
        }
        for declaration in config.types {
            do {
                let schema = try Schema(json: declaration.schema)
                try registry.register(TypeDefinition(name: declaration.name, schema: schema, origin: "\(declaration.location)"))
            } catch let error as TypeRegistryError {
                diagnostics.append(Diagnostic("\(error)", at: declaration.location))
            } catch {
                diagnostics.append(Diagnostic("type '\(declaration.name)': \(error)", at: declaration.location))
            }
        }

        var instances: [PlannedInstance] = []
        for declaration in config.instances {
            guard let plugin = plugins[declaration.plugin.value] else {
                let known = plugins.keys.sorted().joined(separator: ", ")
                diagnostics.append(
                    Diagnostic(
                        "instance '\(declaration.name)': unknown plugin '\(declaration.plugin.value)' (loaded: \(known.isEmpty ? "none" : known))",
                        at: declaration.plugin.location
                    )
                )
                continue
            }
            let json = declaration.config.json
            for violation in plugin.configSchema.violations(of: json)
            where !declaration.config.node(atPath: violation.path).hasUnsetVariable {
                diagnostics.append(
                    Diagnostic(
                        "instance '\(declaration.name)' (plugin \(plugin.manifest.name)): \(violation)",
                        at: violation.path.isEmpty ? declaration.location : declaration.config.location(ofPath: violation.path)
                    )
                )
            }
            let ports = plugin.manifest.ports.filter { port in port.requires.map { json[$0] != nil } ?? true }
            instances.append(
                PlannedInstance(
                    name: declaration.name, plugin: plugin, config: json, ports: ports, logLevel: declaration.logLevel?.value,
                    location: declaration.location))
        }

        var routes: [PlannedRoute] = []
        for route in config.routes {
            if let planned = check(route, config: config, instances: instances, registry: registry, diagnostics: &diagnostics) {
                routes.append(planned)
            }
        }
        var iiideas: [PlannedIiidea] = []
        for iiidea in config.iiideas {
            if let planned = check(iiidea, config: config, instances: instances, registry: registry, diagnostics: &diagnostics) {
                iiideas.append(planned)
            }
        }
        diagnostics.append(contentsOf: unguardedCycles(in: routes, instances: instances))
        guard diagnostics.isEmpty else { return (nil, diagnostics.map { $0.redacting(config.secrets) }) }
        return (
            GraphPlan(
                instances: instances, routes: routes, types: registry, spoolPath: config.spoolPath?.value,
                spoolSync: config.spoolSync?.value ?? .full,
                adminListen: config.adminListen?.value, adminToken: config.adminToken?.value,
                adminAllowedHosts: config.adminAllowedHosts, iiideas: iiideas,
                iiideaHistory: config.iiideaHistory), []
        )
    }

    /// Resolves `reference` to a port of `direction`, reporting why not.
    private func resolve(
        _ reference: Located<PortReference>,
        direction: PortDirection,
        config: GraphConfig,
        instances: [PlannedInstance],
        diagnostics: inout [Diagnostic]
    ) -> (PlannedInstance, PortDeclaration)? {
        let target = reference.value
        guard let instance = instances.first(where: { $0.name == target.instance }) else {
            if config.instance(named: target.instance) == nil {
                let known = config.instances.map(\.name).joined(separator: ", ")
                diagnostics.append(
                    Diagnostic(
                        "unknown instance '\(target.instance)' (instances: \(known.isEmpty ? "none" : known))", at: reference.location)
                )
            }
            return nil  // a known instance whose plugin failed is already reported
        }
        guard let port = instance.plugin.manifest.port(named: target.port) else {
            let names = instance.plugin.manifest.ports.map(\.name).joined(separator: ", ")
            diagnostics.append(
                Diagnostic(
                    "instance '\(instance.name)' (plugin \(instance.plugin.manifest.name)) has no port '\(target.port)' (ports: \(names))",
                    at: reference.location)
            )
            return nil
        }
        guard port.direction == direction else {
            let role =
                switch direction {
                case .source: "'from' needs a source port"
                case .sink: "'to' needs a sink port"
                case .service: "a service piece needs a service port"
                }
            diagnostics.append(Diagnostic("\(role); \(target) is a \(port.direction.rawValue)", at: reference.location))
            return nil
        }
        guard instance.ports.contains(where: { $0.name == port.name }) else {
            diagnostics.append(
                Diagnostic(
                    "port \(target) exists only when instance '\(instance.name)' has a '\(port.requires ?? "")' setting",
                    at: reference.location
                )
            )
            return nil
        }
        return (instance, port)
    }

    private func check(
        _ route: RouteDeclaration,
        config: GraphConfig,
        instances: [PlannedInstance],
        registry: TypeRegistry,
        diagnostics: inout [Diagnostic]
    ) -> PlannedRoute? {
        let before = diagnostics.count
        let source = resolve(route.from, direction: .source, config: config, instances: instances, diagnostics: &diagnostics)
        var sinks: [(Located<PortReference>, PortDeclaration)] = []
        for target in route.to {
            if let (_, port) = resolve(target, direction: .sink, config: config, instances: instances, diagnostics: &diagnostics) {
                sinks.append((target, port))
            }
        }
        let sourceTypes = source.map { $0.1.isUntyped ? [] : $0.1.types } ?? []
        func readProblems(_ reads: [(field: EnvelopeField, offset: Int)], _ location: SourceLocation, _ what: String) -> [Diagnostic] {
            var problems: [Diagnostic] = []
            for read in reads {
                guard case .body(let path) = read.field, !path.isEmpty else { continue }
                // A port that emits several types is a union: the read is wrong only when none
                // of them has the field.
                var missing: [Diagnostic] = []
                var checked = 0
                for typeName in sourceTypes {
                    guard let definition = registry[typeName] else { continue }
                    checked += 1
                    if case .missing(let component, let known) = definition.schema.lookup(path) {
                        let fields = known.isEmpty ? "" : " (fields: \(known.joined(separator: ", ")))"
                        missing.append(
                            Diagnostic(
                                "\(what) reads \(read.field), but type \(typeName) has no field '\(component)'\(fields)",
                                at: location.advanced(by: read.offset)
                            )
                        )
                    }
                }
                if missing.count == checked { problems += missing }
            }
            return problems
        }

        var condition: Condition?
        if let when = route.when {
            do {
                let parsed = try Condition(parsing: when.value, at: when.location)
                diagnostics += readProblems(parsed.fieldReads, when.location, "condition")
                condition = parsed
            } catch {
                diagnostics.append(error)
            }
        }

        var transform: Transform?
        var outputTypes = sourceTypes
        if let outputType = route.outputType {
            if registry[outputType.value] == nil, outputType.value != "*" {
                diagnostics.append(Diagnostic("unknown type '\(outputType.value)'", at: outputType.location))
            }
            outputTypes = [outputType.value]
        } else if route.map != nil || route.template != nil {
            // A reshaped envelope takes the one type its sinks accept when they agree on one,
            // else the built-in open type of what it builds.
            let accepted = Set(sinks.filter { !$0.1.isUntyped }.flatMap(\.1.types))
            outputTypes = accepted.count == 1 ? Array(accepted) : [route.map != nil ? BuiltinTypes.json : BuiltinTypes.text]
        }
        if let map = route.map {
            if let node = compileMap(map, diagnostics: &diagnostics, readProblems: readProblems) {
                let typeName = outputTypes.count == 1 ? outputTypes[0] : nil
                if let typeName, let definition = registry[typeName] {
                    for violation in mapShapeViolations(map, schema: definition.schema) {
                        diagnostics.append(
                            Diagnostic(
                                "map does not build a \(typeName): \(violation.description)", at: map.location(ofPath: violation.path)))
                    }
                }
                transform = Transform(
                    body: .map(node),
                    outputType: typeName,
                    contentType: route.contentType?.value ?? "application/json"
                )
            }
        } else if let template = route.template {
            do {
                let parsed = try Template(parsing: template.value, at: template.location)
                diagnostics += readProblems(parsed.fieldReads, template.location, "template")
                transform = Transform(
                    body: .template(parsed),
                    outputType: outputTypes.count == 1 ? outputTypes[0] : nil,
                    contentType: route.contentType?.value ?? "text/plain"
                )
            } catch {
                diagnostics.append(error)
            }
        } else if route.outputType != nil || route.contentType != nil {
            transform = nil
            if route.outputType != nil {
                diagnostics.append(
                    Diagnostic(
                        "'type' sets the type a map or template produces; this route has neither",
                        at: route.outputType?.location ?? route.location))
            }
        }

        for (target, port) in sinks where !port.isUntyped {
            for typeName in outputTypes where !port.types.contains(typeName) && typeName != "*" {
                diagnostics.append(
                    Diagnostic(
                        "\(target.value) accepts \(port.types.joined(separator: ", ")), but route '\(route.name)' delivers \(typeName)",
                        at: target.location
                    )
                )
            }
        }
        guard diagnostics.count == before else { return nil }
        return PlannedRoute(declaration: route, condition: condition, transform: transform)
    }

    /// Checks an iiidea as the routes it runs on (trigger → action, remote → action) and
    /// compiles its service piece.
    private func check(
        _ iiidea: IiideaDeclaration,
        config: GraphConfig,
        instances: [PlannedInstance],
        registry: TypeRegistry,
        diagnostics: inout [Diagnostic]
    ) -> PlannedIiidea? {
        let before = diagnostics.count
        let preferences = iiidea.servicePreferences
        func preference(_ key: String) -> ConfigNode? { preferences?[key] }
        func require(_ key: String, _ what: String) -> ConfigNode? {
            guard let node = preference(key) else {
                diagnostics.append(
                    Diagnostic("service piece '\(iiidea.piece.value)' needs preferences.\(key) (\(what))", at: iiidea.piece.location))
                return nil
            }
            return node
        }
        var map: ConfigNode?
        var service = PlannedIiidea.Service.pass
        switch iiidea.piece.value {
        case "pass":
            service = .pass
        case "template":
            guard let text = require("text", "a template") else { return nil }
            map = ConfigNode(kind: .mapping([(key: "text", keyLocation: text.location, value: text)]), location: text.location)
            service = .template
        case "map":
            guard let node = require("map", "a mapping of output fields to templates") else { return nil }
            guard node.members != nil else {
                diagnostics.append(Diagnostic("preferences.map must be a mapping", at: node.location))
                return nil
            }
            map = node
            service = .map
        case "delay":
            guard let node = require("duration", "such as 2s") else { return nil }
            guard let nanos = DurationText.nanoseconds(node.json) else {
                diagnostics.append(Diagnostic("preferences.duration must be a duration such as 500ms or 2s", at: node.location))
                return nil
            }
            service = .delay(nanos)
        case "http":
            guard let url = require("url", "a URL template"), url.string != nil, let preferences else {
                if preference("url") != nil {
                    diagnostics.append(
                        Diagnostic("preferences.url must be a string", at: preference("url")?.location ?? iiidea.piece.location))
                }
                return nil
            }
            var timeout: UInt64 = 10_000_000_000
            var policy = HTTPPiecePolicy()
            var request: [(key: String, keyLocation: SourceLocation, value: ConfigNode)] = []
            for member in preferences.members ?? [] {
                switch member.key {
                case "allow_private":
                    guard case .bool(let allowed) = member.value.json else {
                        diagnostics.append(Diagnostic("preferences.allow_private must be true or false", at: member.value.location))
                        continue
                    }
                    policy.allowPrivate = allowed
                case "max_redirects":
                    guard let count = member.value.json.intValue, (0...HTTPPiecePolicy.redirectLimit).contains(count) else {
                        diagnostics.append(
                            Diagnostic(
                                "preferences.max_redirects must be a whole number from 0 to \(HTTPPiecePolicy.redirectLimit)",
                                at: member.value.location))
                        continue
                    }
                    policy.maximumRedirects = count
                case "timeout":
                    guard let nanos = DurationText.nanoseconds(member.value.json), nanos > 0 else {
                        diagnostics.append(Diagnostic("preferences.timeout must be a duration such as 5s", at: member.value.location))
                        continue
                    }
                    timeout = nanos
                case "method":
                    let methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
                    if let method = member.value.string, methods.contains(method) {
                        request.append(member)
                    } else {
                        diagnostics.append(
                            Diagnostic("preferences.method must be one of \(methods.joined(separator: ", "))", at: member.value.location))
                    }
                case "url", "headers", "body": request.append(member)
                default:
                    diagnostics.append(
                        Diagnostic(
                            "unknown key '\(member.key)' in http preferences (expected: method, url, headers, body, timeout, allow_private, max_redirects)",
                            at: member.keyLocation))
                }
            }
            let node = ConfigNode(kind: .mapping(request), location: preferences.location)
            guard case .object(var members)? = compileMap(node, diagnostics: &diagnostics, readProblems: { _, _, _ in [] }) else {
                return nil
            }
            // Values inserted into the URL are percent-encoded: an envelope cannot add a path,
            // a query or another host.
            do {
                let template = try Template(parsing: url.string ?? "", at: url.location, escaping: .percentEncoded)
                members = members.map { $0.0 == "url" ? ("url", .template(template)) : $0 }
            } catch {
                diagnostics.append(error)
                return nil
            }
            service = .http(request: .object(members), timeout: timeout, policy: policy)
            // The response is JSON of any shape: typed like what a map builds.
            map = ConfigNode(kind: .mapping([]), location: iiidea.piece.location)
        default:
            guard let reference = PortReference(iiidea.piece.value) else {
                diagnostics.append(
                    Diagnostic(
                        "unknown service piece '\(iiidea.piece.value)' (built in: pass, template, map, delay, http; or instance.port of a plugin's service port)",
                        at: iiidea.piece.location))
                return nil
            }
            guard
                resolve(
                    Located(reference, at: iiidea.piece.location), direction: .service, config: config, instances: instances,
                    diagnostics: &diagnostics) != nil
            else { return nil }
            var timeout: UInt64 = 30_000_000_000
            if let node = preference("timeout") {
                if let nanos = DurationText.nanoseconds(node.json), nanos > 0 {
                    timeout = nanos
                } else {
                    diagnostics.append(Diagnostic("preferences.timeout must be a duration such as 5s", at: node.location))
                }
            }
            service = .plugin(reference, preferences: preferences?.json ?? .object([:]), timeout: timeout)
            // What the plugin returns is JSON of its own making: typed like what a map builds.
            map = ConfigNode(kind: .mapping([]), location: iiidea.piece.location)
        }
        guard
            let route = check(
                iiidea.route(remote: false, map: map, when: iiidea.when), config: config, instances: instances,
                registry: registry, diagnostics: &diagnostics)
        else { return nil }
        var remoteRoute: PlannedRoute?
        if let remote = iiidea.remote {
            let condition = Located("body.notification_id == \"\(iiidea.id)\"", at: remote.location)
            remoteRoute = check(
                iiidea.route(remote: true, map: nil, when: condition), config: config, instances: instances, registry: registry,
                diagnostics: &diagnostics)
        }
        var actionPreferences: MapNode?
        if let node = iiidea.actionPreferences {
            actionPreferences = compileMap(node, diagnostics: &diagnostics, readProblems: { _, _, _ in [] })
        }
        guard diagnostics.count == before else { return nil }
        return PlannedIiidea(
            declaration: iiidea, route: route, remoteRoute: remoteRoute, service: service, actionPreferences: actionPreferences)
    }

    private func compileMap(
        _ node: ConfigNode,
        diagnostics: inout [Diagnostic],
        readProblems: ([(field: EnvelopeField, offset: Int)], SourceLocation, String) -> [Diagnostic]
    ) -> MapNode? {
        switch node.kind {
        case .scalar(.string(let text)):
            do {
                let template = try Template(parsing: text, at: node.location)
                diagnostics += readProblems(template.fieldReads, node.location, "map")
                return .template(template)
            } catch {
                diagnostics.append(error)
                return nil
            }
        case .scalar:
            return .literal(node.json)
        case .sequence(let elements):
            var compiled: [MapNode] = []
            for element in elements {
                guard let child = compileMap(element, diagnostics: &diagnostics, readProblems: readProblems) else { return nil }
                compiled.append(child)
            }
            return .array(compiled)
        case .mapping(let members):
            var compiled: [(String, MapNode)] = []
            for member in members {
                guard let child = compileMap(member.value, diagnostics: &diagnostics, readProblems: readProblems) else { return nil }
                compiled.append((member.key, child))
            }
            return .object(compiled)
        }
    }

    /// Top-level field names a map writes that the output type does not have, and required
    /// fields it does not write.
    private func mapShapeViolations(_ map: ConfigNode, schema: Schema) -> [SchemaViolation] {
        guard let members = map.members else { return [] }
        var violations: [SchemaViolation] = []
        for member in members {
            if case .missing(_, let known) = schema.lookup([member.key]) {
                violations.append(
                    SchemaViolation(path: member.key, reason: "is not a field of it (fields: \(known.joined(separator: ", ")))"))
            }
        }
        for name in schema.required where !members.contains(where: { $0.key == name }) {
            violations.append(SchemaViolation(path: "", reason: "required field '\(name)' is not set"))
        }
        return violations
    }

    /// Cycles made only of `loop: allow` routes: nothing would stop an envelope going round.
    /// Nodes are ports; a route joins its source port to its sinks, and a sink port joins the
    /// source ports its manifest says it feeds.
    private func unguardedCycles(in routes: [PlannedRoute], instances: [PlannedInstance]) -> [Diagnostic] {
        var edges: [PortReference: [(PortReference, PlannedRoute?)]] = [:]
        for route in routes where route.declaration.allowLoops {
            for target in route.declaration.to {
                edges[route.declaration.from.value, default: []].append((target.value, route))
            }
        }
        for instance in instances {
            for port in instance.ports where port.direction == .sink {
                for fed in port.feeds {
                    edges[PortReference(instance: instance.name, port: port.name), default: []]
                        .append((PortReference(instance: instance.name, port: fed), nil))
                }
            }
        }
        var reported: Set<String> = []
        var diagnostics: [Diagnostic] = []
        for start in edges.keys.sorted(by: { $0.description < $1.description }) {
            var stack: [(PortReference, [PlannedRoute])] = [(start, [])]
            var seen: Set<PortReference> = []
            while let (node, path) = stack.popLast() {
                for (next, route) in edges[node] ?? [] {
                    let newPath = route.map { path + [$0] } ?? path
                    if next == start {
                        let names = newPath.map(\.name)
                        let key = names.sorted().joined(separator: ",")
                        if !names.isEmpty, reported.insert(key).inserted, let first = newPath.first {
                            diagnostics.append(
                                Diagnostic(
                                    "routes \(names.joined(separator: " → ")) form a cycle with 'loop: allow' on every route: nothing stops an envelope going round",
                                    at: first.declaration.location
                                )
                            )
                        }
                    } else if seen.insert(next).inserted {
                        stack.append((next, newPath))
                    }
                }
            }
        }
        return diagnostics
    }
}

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
