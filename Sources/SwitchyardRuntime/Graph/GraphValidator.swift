public import SwitchyardConfig
public import SwitchyardCore
internal import SwitchyardRouting

/// Checks a configuration against the loaded plugins and compiles it into a ``GraphPlan``:
/// what `switchyard validate` reports and what `switchyard run` (and every reload) refuses to
/// start without. Each instance is described by its plugin first (ABI section 6), so its
/// ports and types are those of its configuration, and every error is found before anything
/// starts.
///
/// The checks live in ``InstanceValidator``, ``RouteValidator``, ``IiideaValidator``,
/// ``CycleValidator`` and ``GuaranteeValidator``, which share one ``GraphValidationContext``;
/// this type runs them in a fixed order, so the diagnostics come out in that order.
public struct GraphValidator: Sendable {
    /// The loaded plugins by name.
    public let plugins: [String: LoadedPlugin]

    /// Creates a validator over loaded plugins.
    public init(plugins: [LoadedPlugin]) {
        self.plugins = Dictionary(plugins.map { ($0.manifest.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Validates; the plan is `nil` when there is any diagnostic.
    public func validate(_ config: GraphConfig) -> (GraphPlan?, [Diagnostic]) {
        var context = GraphValidationContext(config: config, plugins: plugins)
        var instanceValidator = InstanceValidator()
        instanceValidator.registerSharedTypes(&context)
        let instances = instanceValidator.planInstances(&context)
        let registry = instanceValidator.registry

        let routeValidator = RouteValidator(instances: instances, registry: registry)
        var routes: [PlannedRoute] = []
        for route in config.routes {
            if let planned = routeValidator.check(route, context: &context) {
                routes.append(planned)
            }
        }
        let iiideaValidator = IiideaValidator(routeValidator: routeValidator)
        var iiideas: [PlannedIiidea] = []
        for iiidea in config.iiideas {
            if let planned = iiideaValidator.check(iiidea, context: &context) {
                iiideas.append(planned)
            }
        }
        // A template is checked as the iiidea it makes with its own preferences, so obtaining
        // it fails only on what a person fills in.
        for template in config.iiideaTemplates {
            _ = iiideaValidator.check(template.declaration, context: &context)
        }
        context.diagnostics.append(contentsOf: CycleValidator(routes: routes, instances: instances).unguardedCycles())
        let guaranteeValidator = GuaranteeValidator(routes: routes, instances: instances)
        context.diagnostics.append(contentsOf: guaranteeValidator.brokenGuarantees())
        guard context.diagnostics.isEmpty else { return (nil, context.diagnostics.map { $0.redacting(config.secrets) }) }
        let guarantees = guaranteeValidator.remarks()
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
}
