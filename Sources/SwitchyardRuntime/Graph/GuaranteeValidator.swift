internal import SwitchyardConfig
internal import SwitchyardCore

/// Delivery guarantees checked before anything starts: an at-least-once route holds only if
/// its source can wait for settlement and its sinks confirm. Each instance's description says
/// what its ports promise under its configuration (ABI section 6: `settles`, `confirms`,
/// `at_most_once`); a port the plugin says nothing about is noted, not refused, because a
/// plugin without `describe` cannot say.
///
/// Owns the planned routes and instances whose promises it compares; separate from
/// ``RouteValidator`` because it needs every route planned (fan-outs span routes) and also
/// produces the notes and warnings a valid plan carries.
struct GuaranteeValidator {
    /// The routes that planned without error.
    let routes: [PlannedRoute]
    /// The instances the routes' ends belong to, with what their ports promise.
    let instances: [PlannedInstance]

    /// Errors: an at-least-once route that starts or ends at a port its configuration makes
    /// at-most-once, at the `from:` or `to:` entry concerned, with the plugin's reason (what to
    /// change).
    func brokenGuarantees() -> [Diagnostic] {
        var errors: [Diagnostic] = []
        for route in routes where route.declaration.delivery == .atLeastOnce {
            for end in ends(of: route) {
                guard let reason = end.instance.atMostOnce[end.reference.value.port] else { continue }
                let role = end.isSource ? "its source" : "its sink"
                errors.append(
                    Diagnostic(
                        "route '\(route.name)' is at-least-once, but \(role) \(end.reference.value) (plugin \(end.instance.plugin.manifest.name)) is at-most-once as configured: \(reason); or make the route `delivery: at-most-once`",
                        at: end.reference.location))
            }
        }
        return errors
    }

    /// Notes on ends that promise nothing either way, and warnings on fan-outs that mix
    /// deliveries.
    func remarks() -> (notes: [Diagnostic], warnings: [Diagnostic]) {
        var notes: [Diagnostic] = []
        for route in routes where route.declaration.delivery == .atLeastOnce {
            for end in ends(of: route) {
                let port = end.reference.value.port
                let plugin = end.instance.plugin.manifest.name
                guard end.instance.atMostOnce[port] == nil else { continue }
                if end.isSource, !end.instance.settles.contains(port) {
                    notes.append(
                        Diagnostic(
                            "route '\(route.name)' is at-least-once from the spool on, but \(end.reference.value) (plugin \(plugin)) does not settle: it does not wait for the spool before its upstream counts an envelope as delivered",
                            at: end.reference.location))
                } else if !end.isSource, !end.instance.confirms.contains(port) {
                    notes.append(
                        Diagnostic(
                            "route '\(route.name)' is at-least-once up to \(end.reference.value) (plugin \(plugin)), which does not say that the far side confirmed what it acknowledges",
                            at: end.reference.location))
                }
            }
        }
        return (notes, cautions() + mixedFanOuts())
    }

    /// Warnings on at-least-once routes through a port whose configuration leaves a case
    /// uncovered (the plugin's `cautions`: what it is and what to change).
    private func cautions() -> [Diagnostic] {
        var warnings: [Diagnostic] = []
        for route in routes where route.declaration.delivery == .atLeastOnce {
            for end in ends(of: route) {
                guard let caution = end.instance.cautions[end.reference.value.port] else { continue }
                warnings.append(
                    Diagnostic(
                        "route '\(route.name)' is at-least-once, but through \(end.reference.value) (plugin \(end.instance.plugin.manifest.name)) only in part: \(caution)",
                        at: end.reference.location))
            }
        }
        return warnings
    }

    /// A source port that settles and feeds routes of both deliveries: when an at-least-once
    /// route makes the upstream redeliver, the at-most-once routes deliver the envelope again.
    private func mixedFanOuts() -> [Diagnostic] {
        var warnings: [Diagnostic] = []
        let bySource = Dictionary(grouping: routes, by: { $0.declaration.from.value })
        for (source, group) in bySource.sorted(by: { $0.key.description < $1.key.description }) {
            let durable = group.filter { $0.declaration.delivery == .atLeastOnce }
            guard !durable.isEmpty, durable.count < group.count,
                instances.first(where: { $0.name == source.instance })?.settles.contains(source.port) == true
            else { continue }
            let names = durable.map { "'\($0.name)'" }.joined(separator: ", ")
            for route in group where route.declaration.delivery != .atLeastOnce {
                warnings.append(
                    Diagnostic(
                        "route '\(route.name)' is at-most-once, but its source \(source) also feeds at-least-once \(durable.count == 1 ? "route" : "routes") \(names): when \(durable.count == 1 ? "that route" : "those") cannot spool, \(source) asks its upstream to send again and this route delivers the envelope twice; make it `delivery: at-least-once` too, or accept duplicates",
                        at: route.declaration.from.location))
            }
        }
        return warnings
    }

    /// A route's ends with the instances they belong to (the validator has resolved them all).
    private func ends(of route: PlannedRoute) -> [RouteEnd] {
        let references = [(route.declaration.from, true)] + route.declaration.to.map { ($0, false) }
        return references.compactMap { reference, isSource in
            instances.first { $0.name == reference.value.instance }.map { RouteEnd(reference: reference, instance: $0, isSource: isSource) }
        }
    }
}

/// One end of a route: the `from:` or a `to:` entry, resolved.
private struct RouteEnd {
    var reference: Located<PortReference>
    var instance: PlannedInstance
    var isSource: Bool
}
