public import SwitchyardConfig
public import SwitchyardCore
internal import SwitchyardRouting

/// Checks a configuration against the loaded plugins and compiles it into a ``GraphPlan``:
/// what `switchyard validate` reports and what `switchyard run` (and every reload) refuses to
/// start without. Each instance is described by its plugin first (ABI section 6), so its
/// ports and types are those of its configuration, and every error is found before anything
/// starts.
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
        var registry = sharedTypes(of: config, diagnostics: &diagnostics)
        let instances = planInstances(config, registry: &registry, diagnostics: &diagnostics)

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
        // A template is checked as the iiidea it makes with its own preferences, so obtaining
        // it fails only on what a person fills in.
        for template in config.iiideaTemplates {
            _ = check(template.declaration, config: config, instances: instances, registry: registry, diagnostics: &diagnostics)
        }
        diagnostics.append(contentsOf: unguardedCycles(in: routes, instances: instances))
        diagnostics.append(contentsOf: brokenGuarantees(routes, instances: instances))
        guard diagnostics.isEmpty else { return (nil, diagnostics.map { $0.redacting(config.secrets) }) }
        let guarantees = guaranteeRemarks(routes, instances: instances)
        var plan = GraphPlan(
            instances: instances, routes: routes, types: registry, spoolPath: config.spoolPath?.value,
            spoolSync: config.spoolSync?.value ?? .full,
            adminListen: config.adminListen?.value, adminToken: config.adminToken?.value,
            adminAllowedHosts: config.adminAllowedHosts, tracing: config.tracing, iiideas: iiideas,
            iiideaTemplates: config.iiideaTemplates,
            iiideaHistory: config.iiideaHistory, oauth: config.oauth,
            notes: guarantees.notes.map { $0.redacting(config.secrets) },
            warnings: guarantees.warnings.map { $0.redacting(config.secrets) })
        plan.adminConnections = config.adminConnections
        return (plan, [])
    }

    /// Resolves `reference` to a port of `direction`, reporting why not.
    func resolve(
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
        guard let port = instance.declaredPorts.first(where: { $0.name == target.port }) else {
            let names = instance.declaredPorts.map(\.name).joined(separator: ", ")
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
}
