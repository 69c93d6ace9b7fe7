internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardScript

/// Checks routes against the planned instances and the finished type registry, and compiles
/// what they run: the condition, the map, template or script, and the dedupe key.
///
/// Owns the instances and the registry it checks against, which no longer change once
/// ``InstanceValidator`` is done; ``IiideaValidator`` checks an iiidea's routes through it.
struct RouteValidator {
    /// The instances that planned without error; routes through the others are not reported
    /// again.
    let instances: [PlannedInstance]
    /// Every type: built in, from plugins, from `types:` and added by instances.
    let registry: TypeRegistry

    /// Resolves `reference` to a port of `direction`, reporting why not.
    func resolve(
        _ reference: Located<PortReference>,
        direction: PortDirection,
        context: inout GraphValidationContext
    ) -> (PlannedInstance, PortDeclaration)? {
        let target = reference.value
        guard let instance = instances.first(where: { $0.name == target.instance }) else {
            if context.config.instance(named: target.instance) == nil {
                let known = context.config.instances.map(\.name).joined(separator: ", ")
                context.diagnostics.append(
                    Diagnostic(
                        "unknown instance '\(target.instance)' (instances: \(known.isEmpty ? "none" : known))", at: reference.location)
                )
            }
            return nil  // a known instance whose plugin failed is already reported
        }
        guard let port = instance.declaredPorts.first(where: { $0.name == target.port }) else {
            let names = instance.declaredPorts.map(\.name).joined(separator: ", ")
            context.diagnostics.append(
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
            context.diagnostics.append(Diagnostic("\(role); \(target) is a \(port.direction.rawValue)", at: reference.location))
            return nil
        }
        guard instance.ports.contains(where: { $0.name == port.name }) else {
            context.diagnostics.append(
                Diagnostic(
                    "port \(target) exists only when instance '\(instance.name)' has a '\(port.requires ?? "")' setting",
                    at: reference.location
                )
            )
            return nil
        }
        return (instance, port)
    }

    /// Checks one route and compiles it; `nil`, with the problems noted, when it has any.
    func check(_ route: RouteDeclaration, context: inout GraphValidationContext) -> PlannedRoute? {
        let before = context.diagnostics.count
        let source = resolve(route.from, direction: .source, context: &context)
        var sinks: [(Located<PortReference>, PortDeclaration)] = []
        for target in route.to {
            if let (_, port) = resolve(target, direction: .sink, context: &context) {
                sinks.append((target, port))
            }
        }
        let sourceTypes = source.map { $0.1.isUntyped ? [] : $0.1.types } ?? []
        func readProblems(_ reads: [(field: EnvelopeField, offset: Int)], _ location: SourceLocation, _ what: String) -> [Diagnostic] {
            FieldReadCheck.problems(reads, at: location, what: what, types: sourceTypes, registry: registry)
        }

        /// A template over the arriving envelope (`what` names it in errors); nil, with the
        /// errors noted, when it does not compile or reads a field the source types lack.
        func compiled(_ text: Located<String>, _ what: String) -> Template? {
            do {
                let parsed = try Template(parsing: text.value, at: text.location)
                context.diagnostics += readProblems(parsed.fieldReads, text.location, what)
                return parsed
            } catch {
                context.diagnostics.append(error)
                return nil
            }
        }

        var condition: Condition?
        if let when = route.when {
            do {
                let parsed = try Condition(parsing: when.value, at: when.location)
                context.diagnostics += readProblems(parsed.fieldReads, when.location, "condition")
                condition = parsed
            } catch {
                context.diagnostics.append(error)
            }
        }

        var transform: Transform?
        var script: Script?
        var scriptDefaults = ScriptDefaults()
        var outputTypes = sourceTypes
        if let outputType = route.outputType {
            if registry[outputType.value] == nil, outputType.value != "*" {
                context.diagnostics.append(
                    Diagnostic(
                        "unknown type '\(outputType.value)'\(Self.namespacedHint(outputType.value, registry))", at: outputType.location))
            }
            outputTypes = [outputType.value]
        } else if route.script != nil {
            // A script sets the type per envelope; by default it keeps the input's, or takes
            // the one type its sinks agree on. What it sends is checked at run time.
            let accepted = Set(sinks.filter { !$0.1.isUntyped }.flatMap(\.1.types))
            outputTypes = accepted.count == 1 ? Array(accepted) : ["*"]
        } else if route.map != nil || route.template != nil {
            // A reshaped envelope takes the one type its sinks accept when they agree on one,
            // else the built-in open type of what it builds.
            let accepted = Set(sinks.filter { !$0.1.isUntyped }.flatMap(\.1.types))
            outputTypes = accepted.count == 1 ? Array(accepted) : [route.map != nil ? BuiltinTypes.json : BuiltinTypes.text]
        }
        if let map = route.map {
            if let node = compileMap(map, diagnostics: &context.diagnostics, readProblems: readProblems) {
                let typeName = outputTypes.count == 1 ? outputTypes[0] : nil
                if let typeName, let definition = registry[typeName] {
                    for violation in mapShapeViolations(map, schema: definition.schema) {
                        context.diagnostics.append(
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
            if let parsed = compiled(template, "template") {
                transform = Transform(
                    body: .template(parsed),
                    outputType: outputTypes.count == 1 ? outputTypes[0] : nil,
                    contentType: route.contentType?.value ?? "text/plain"
                )
            }
        } else if let declaration = route.script {
            do {
                script = try Script(source: declaration.source, limits: declaration.limits)
                scriptDefaults = ScriptDefaults(
                    type: route.outputType?.value ?? (outputTypes == ["*"] ? nil : outputTypes.first), contentType: route.contentType?.value
                )
                scriptDefaults.reshapedJSONType = BuiltinTypes.json
                scriptDefaults.reshapedTextType = BuiltinTypes.text
            } catch {
                context.diagnostics.append(error)
            }
        } else if route.outputType != nil || route.contentType != nil {
            transform = nil
            if route.outputType != nil {
                context.diagnostics.append(
                    Diagnostic(
                        "'type' sets the type a map, template or script produces; this route has none of them",
                        at: route.outputType?.location ?? route.location))
            }
        }

        for (target, port) in sinks where !port.isUntyped {
            for typeName in outputTypes where !port.types.contains(typeName) && typeName != "*" {
                context.diagnostics.append(
                    Diagnostic(
                        "\(target.value) accepts \(port.types.joined(separator: ", ")), but route '\(route.name)' delivers \(typeName)",
                        at: target.location
                    )
                )
            }
        }
        let dedupeKey = route.dedupeKey.flatMap { compiled($0, "dedupe.key") }
        guard context.diagnostics.count == before else { return nil }
        return PlannedRoute(
            declaration: route, condition: condition, transform: transform, script: script, scriptDefaults: scriptDefaults,
            scriptTypes: script == nil ? nil : registry, dedupeKey: dedupeKey)
    }

    /// Compiles a `map:` (or an HTTP request) into the tree it builds, reporting templates that
    /// do not compile and, through `readProblems`, fields they read that the source lacks.
    func compileMap(
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
            return .object(MapNode.sortedMembers(compiled))
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

    /// ` (did you mean 'qeo.X'?)` when `name` is unknown but a plugin's instance added it
    /// under its plugin's name: route files written before instance types were namespaced
    /// used the bare name.
    static func namespacedHint(_ name: String, _ registry: TypeRegistry) -> String {
        let matches = registry.definitions.keys.filter { $0.hasSuffix("." + name) }.sorted()
        guard let first = matches.first, matches.count == 1 else { return "" }
        return " (did you mean '\(first)'?)"
    }
}
