internal import SwitchyardConfig
internal import SwitchyardCore

/// Finds loops nothing guards: cycles through the planned graph made only of `loop: allow`
/// routes.
///
/// Owns the planned routes and instances it walks; separate from the route and guarantee
/// checks because it looks at the graph as a whole rather than one route at a time.
struct CycleValidator {
    /// The routes that planned without error.
    let routes: [PlannedRoute]
    /// The instances whose sink ports may feed their own source ports.
    let instances: [PlannedInstance]

    /// Cycles made only of `loop: allow` routes: nothing would stop an envelope going round.
    /// Nodes are ports; a route joins its source port to its sinks, and a sink port joins the
    /// source ports its manifest says it feeds.
    func unguardedCycles() -> [Diagnostic] {
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
