internal import SwitchyardConfig
internal import SwitchyardCore

/// Plans the instances of a configuration: checks each one's configuration against its
/// plugin's schema, asks the plugin to describe it, and checks what the description declares
/// (ports, types, delivery promises).
///
/// Owns the type registry while it is being built (shared types first, then the types
/// instances add), which every later check only reads; separate from ``RouteValidator``
/// because routes are checked against the finished instances and registry.
struct InstanceValidator {
    /// The most configuration problems reported one by one per instance.
    static let violationsShown = 20

    /// The types known so far: complete once ``planInstances(_:)`` has run.
    private(set) var registry = BuiltinTypes.registry
    /// Types added by instances, by name: two instances of one plugin may add the same type
    /// (two Qeo instances reading one QDM file) as long as they agree on its schema.
    private var addedTypes: [String: JSONValue] = [:]

    /// Registers the types every instance sees: each loaded plugin's manifest types and the
    /// YAML `types:`, after the built-in ones.
    mutating func registerSharedTypes(_ context: inout GraphValidationContext) {
        for plugin in context.plugins.values.sorted(by: { $0.manifest.name < $1.manifest.name }) {
            for (name, schemaJSON) in plugin.manifest.types.sorted(by: { $0.key < $1.key }) {
                guard let schema = try? Schema(json: schemaJSON) else { continue }  // checked at load
                do {
                    try registry.register(TypeDefinition(name: name, schema: schema, origin: "plugin \(plugin.manifest.name)"))
                } catch {
                    context.diagnostics.append(Diagnostic("\(error)", at: nil))
                }
            }
        }
        for declaration in context.config.types {
            do {
                let schema = try Schema(json: declaration.schema)
                try registry.register(TypeDefinition(name: declaration.name, schema: schema, origin: "\(declaration.location)"))
            } catch let error as TypeRegistryError {
                context.diagnostics.append(Diagnostic("\(error)", at: declaration.location))
            } catch {
                context.diagnostics.append(Diagnostic("type '\(declaration.name)': \(error)", at: declaration.location))
            }
        }
    }

    /// Plans every instance: checks its configuration against the plugin's schema, asks the
    /// plugin to describe it, and registers the types the description adds.
    mutating func planInstances(_ context: inout GraphValidationContext) -> [PlannedInstance] {
        var instances: [PlannedInstance] = []
        for declaration in context.config.instances {
            guard let plugin = context.plugins[declaration.plugin.value] else {
                let known = context.plugins.keys.sorted().joined(separator: ", ")
                context.diagnostics.append(
                    Diagnostic(
                        "instance '\(declaration.name)': unknown plugin '\(declaration.plugin.value)' (loaded: \(known.isEmpty ? "none" : known))",
                        at: declaration.plugin.location
                    )
                )
                continue
            }
            // Paths the plugin's schema marks (`format: path`) are taken from the route file's folder.
            let json = plugin.configSchema.resolvingPaths(in: declaration.config.json) {
                RouteFilePath.resolve($0, besideFile: declaration.location.file)
            }
            let before = context.diagnostics.count
            // Looked up only when some value has an unset variable: a lookup walks its mapping.
            let unset = Self.hasUnsetVariable(declaration.config)
            let violations = plugin.configSchema.violations(of: json).filter {
                !unset || !declaration.config.node(atPath: $0.path).hasUnsetVariable
            }
            // A configuration with thousands of unknown keys gets a few lines and a count, not
            // a line per key.
            if violations.count > Self.violationsShown {
                context.diagnostics.append(
                    Diagnostic(
                        "instance '\(declaration.name)' (plugin \(plugin.manifest.name)): \(violations.count) problems in its configuration; the first \(Self.violationsShown) follow",
                        at: declaration.location))
            }
            for violation in violations.prefix(Self.violationsShown) {
                context.diagnostics.append(
                    Diagnostic(
                        "instance '\(declaration.name)' (plugin \(plugin.manifest.name)): \(violation)",
                        at: violation.path.isEmpty ? declaration.location : declaration.config.location(ofPath: violation.path)
                    )
                )
            }
            // A configuration the schema refuses (or one with an unset variable) is not
            // described: the plugin would only repeat what is already reported.
            var description = InstanceDescription()
            if context.diagnostics.count == before, !Self.hasUnsetVariable(declaration.config) {
                description =
                    describe(declaration, plugin: plugin, config: json, diagnostics: &context.diagnostics)
                    ?? InstanceDescription()
            }
            let subject = "instance '\(declaration.name)' (plugin \(plugin.manifest.name))"
            for (name, schemaJSON) in (description.types ?? [:]).sorted(by: { $0.key < $1.key }) {
                guard name.hasPrefix(plugin.manifest.name + "."), name.count > plugin.manifest.name.count + 1 else {
                    context.diagnostics.append(
                        Diagnostic(
                            "\(subject): type '\(name)' does not start with '\(plugin.manifest.name).': the types an instance adds are named after its plugin",
                            at: declaration.location))
                    continue
                }
                if let previous = addedTypes[name] {
                    if previous != schemaJSON {
                        context.diagnostics.append(
                            Diagnostic(
                                "\(subject): type '\(name)' is also added by another instance, with a different schema",
                                at: declaration.location))
                    }
                    continue
                }
                // The manifest's own type, described again, adds nothing.
                if plugin.manifest.types[name] == schemaJSON { continue }
                do {
                    // Checked by InstanceDescription(parsing:) already.
                    let schema = try Schema(json: schemaJSON)
                    try registry.register(TypeDefinition(name: name, schema: schema, origin: subject))
                    addedTypes[name] = schemaJSON
                } catch {
                    context.diagnostics.append(Diagnostic("\(error)", at: declaration.location))
                }
            }
            let declaredPorts = description.ports ?? plugin.manifest.ports
            for port in declaredPorts {
                for typeName in port.types where typeName != "*" && registry[typeName] == nil {
                    context.diagnostics.append(
                        Diagnostic(
                            "\(subject): port '\(port.name)' carries type '\(typeName)', which neither the plugins nor the route files define",
                            at: declaration.location))
                }
            }
            for port in description.settles where !declaredPorts.contains(where: { $0.name == port && $0.direction == .source }) {
                context.diagnostics.append(
                    Diagnostic("\(subject): 'settles' names '\(port)', which is not a source port", at: declaration.location))
            }
            for port in description.confirms where !declaredPorts.contains(where: { $0.name == port && $0.direction == .sink }) {
                context.diagnostics.append(
                    Diagnostic("\(subject): 'confirms' names '\(port)', which is not a sink port", at: declaration.location))
            }
            for port in description.deliversInline
            where !declaredPorts.contains(where: { $0.name == port && $0.direction == .sink }) {
                context.diagnostics.append(
                    Diagnostic("\(subject): 'delivers_inline' names '\(port)', which is not a sink port", at: declaration.location))
            }
            for port in description.atMostOnce.keys.sorted() where !declaredPorts.contains(where: { $0.name == port }) {
                context.diagnostics.append(
                    Diagnostic("\(subject): 'at_most_once' names '\(port)', which is not a port", at: declaration.location))
            }
            let ports = declaredPorts.filter { port in port.requires.map { json[$0] != nil } ?? true }
            var redelivers = Set(description.redelivers)
            for port in description.redelivers.sorted() where !description.settles.contains(port) {
                context.diagnostics.append(
                    Diagnostic("\(subject): 'redelivers' names '\(port)', which is not among 'settles'", at: declaration.location))
                redelivers.remove(port)
            }
            instances.append(
                PlannedInstance(
                    name: declaration.name, plugin: plugin, config: json, ports: ports, declaredPorts: declaredPorts,
                    settles: Set(description.settles), confirms: Set(description.confirms), atMostOnce: description.atMostOnce,
                    cautions: description.cautions, keepsState: description.keepsState, logLevel: declaration.logLevel?.value,
                    exclusive: declaration.exclusive?.value ?? false, location: declaration.location))
            instances[instances.count - 1].redelivers = redelivers
            instances[instances.count - 1].deliversInline = Set(description.deliversInline)
        }
        return instances
    }

    /// The plugin's description of one instance; a refusal is reported at the configuration
    /// value its message points at (`/qdm/0: …`), or at the instance.
    private func describe(
        _ declaration: InstanceDeclaration, plugin: LoadedPlugin, config: JSONValue, diagnostics: inout [Diagnostic]
    ) -> InstanceDescription? {
        do {
            return try plugin.describe(instance: declaration.name, config: config)
        } catch {
            let place = ConfigNode.pointerPrefix(of: error.message).map { declaration.config.location(ofPointer: $0.pointer) }
            let what = error.fromPlugin ? "" : "plugin \(plugin.manifest.name) cannot describe it: "
            diagnostics.append(
                Diagnostic(
                    "instance '\(declaration.name)' (plugin \(plugin.manifest.name)): \(what)\(error.message)",
                    at: place ?? declaration.location))
            return nil
        }
    }

    private static func hasUnsetVariable(_ node: ConfigNode) -> Bool {
        if node.hasUnsetVariable { return true }
        switch node.kind {
        case .scalar: return false
        case .sequence(let elements): return elements.contains(where: hasUnsetVariable)
        case .mapping(let members): return members.contains { hasUnsetVariable($0.value) }
        }
    }
}
