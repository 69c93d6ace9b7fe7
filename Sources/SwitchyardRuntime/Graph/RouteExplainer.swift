public import SwitchyardConfig
public import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardScript

/// What the routes of a validated graph would do with one envelope from one source port,
/// step by step, without running anything: `switchyard explain`.
public struct RouteExplainer: Sendable {
    /// One route's treatment of the envelope.
    public struct Step: Sendable {
        /// The route (an iiidea's chain is `iiidea ID`).
        public var route: String
        /// Where it is declared.
        public var location: SourceLocation
        /// Its `when:` as written; nil when it has none.
        public var condition: String?
        /// Each field the condition reads and the value the envelope has there (nil: absent).
        public var reads: [(field: String, value: JSONValue?)]
        /// Whether the envelope passes (true without a condition).
        public var passes: Bool
        /// What the route delivers: the envelope after its `map:`/`template:` (when it passes).
        public var output: Envelope?
        /// Each sink with whether it takes `output`, and why not.
        public var sinks: [(sink: String, refusal: String?)]
        /// For an iiidea: its service piece. `pass`, `template` and `map` are run (they only
        /// reshape); any other (`http`, `delay`, a plugin's) is not, and `output` is then the
        /// trigger's output.
        public var service: String?
        /// Whether `output` is what the action would get (false: a service that was not run).
        public var outputIsFinal: Bool
        /// Every envelope the route sends, each with its sinks' answers: one, or as many as a
        /// script emitted (`output` and `sinks` are the first's).
        public var deliveries: [(output: Envelope, sinks: [(sink: String, refusal: String?)])] = []
        /// Why the route's script failed on the envelope (then it sends nothing).
        public var scriptError: String?
        /// What the route's script printed.
        public var printed: [String] = []
        /// Whether the condition let the envelope through and the script dropped it.
        public var droppedByScript = false
        /// Whether the route has a script (its outputs' headers are worth showing: it sets them).
        public var scripted = false
    }

    private let plan: GraphPlan

    /// An explainer over `plan`.
    public init(plan: GraphPlan) { self.plan = plan }

    /// The type an envelope from `port` has when its file names none: the port's first
    /// declared type (`json` for an untyped port); nil when there is no such source port.
    public func defaultType(of port: PortReference) -> String? {
        guard let declared = sourcePort(port) else { return nil }
        return declared.isUntyped ? BuiltinTypes.json : declared.types.first
    }

    /// The steps of every route and iiidea whose source is `port`, in declaration order; nil
    /// when `port` is not a source port of the graph.
    public func explain(_ envelope: Envelope, from port: PortReference) -> [Step]? {
        guard sourcePort(port) != nil else { return nil }
        var steps: [Step] = []
        for route in plan.routes where route.declaration.from.value == port {
            steps.append(step(route, envelope: envelope, service: nil))
        }
        for iiidea in plan.iiideas where iiidea.route.declaration.from.value == port {
            steps.append(step(iiidea.route, envelope: envelope, service: iiidea.declaration.piece.value))
        }
        return steps
    }

    private func sourcePort(_ port: PortReference) -> PortDeclaration? {
        plan.instances.first { $0.name == port.instance }?.ports.first { $0.name == port.port && $0.direction == .source }
    }

    private func step(_ route: PlannedRoute, envelope: Envelope, service: String?) -> Step {
        let outputIsFinal = service.map { ["pass", "template", "map", "script"].contains($0) } ?? true
        var scope = EnvelopeScope(envelope)
        var seen: Set<String> = []
        let reads = (route.condition?.fieldReads ?? []).filter { seen.insert($0.field.description).inserted }.map { read in
            (field: read.field.description, value: scope.value(of: read.field))
        }
        let passes = route.condition.map { $0.evaluate(&scope) } ?? true
        var deliveries: [(output: Envelope, sinks: [(sink: String, refusal: String?)])] = []
        var scriptError: String?
        var printed: [String] = []
        if passes {
            // A route's map/template/script, or an iiidea's reshaping service (compiled into its
            // route), runs; a service that calls out or waits does not.
            var outputs = [envelope]
            if outputIsFinal, let transform = route.transform {
                outputs = [transform.apply(&scope)]
            } else if let script = route.script {
                let run = script.run(envelope, defaults: route.scriptDefaults)
                outputs = run.outputs
                printed = run.printed
                scriptError = run.failure.map { "\($0.kind.rawValue): \($0.message)" }
            }
            deliveries = outputs.map { delivered in
                (delivered, route.declaration.to.map { target in (target.value.description, refusal(of: delivered, by: target.value)) })
            }
        }
        var step = Step(
            route: route.name, location: route.declaration.location, condition: route.declaration.when?.value, reads: reads,
            passes: passes && scriptError == nil && !deliveries.isEmpty, output: deliveries.first?.output,
            sinks: deliveries.first?.sinks ?? [], service: service, outputIsFinal: outputIsFinal)
        step.deliveries = deliveries
        step.scriptError = scriptError
        step.printed = printed
        step.droppedByScript = passes && route.script != nil && scriptError == nil && deliveries.isEmpty
        step.scripted = route.script != nil
        return step
    }

    /// Why sink `target` would not take `envelope`, or nil when it would.
    private func refusal(of envelope: Envelope, by target: PortReference) -> String? {
        guard let instance = plan.instances.first(where: { $0.name == target.instance }),
            let port = instance.ports.first(where: { $0.name == target.port })
        else { return "no such sink port" }
        if envelope.trace.contains(instance.name) { return "the envelope has already been through \(instance.name) (loop)" }
        if !port.isUntyped, !port.types.contains(envelope.type) {
            return "it takes \(port.types.joined(separator: ", ")), not \(envelope.type)"
        }
        guard let definition = plan.types[envelope.type] else { return nil }
        let violations = definition.schema.violations(of: envelope.decodedBody())
        return violations.isEmpty
            ? nil : "the body is not a \(envelope.type): " + violations.prefix(5).map(\.description).joined(separator: "; ")
    }
}
