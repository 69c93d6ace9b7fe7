import SwitchyardABI
import SwitchyardBridge
import SwitchyardCore
import Synchronization

/// Delivers envelopes straight to a sink port, without a route: the admin API's inject. It
/// needs only the running graph (to find and check the port) and the delivery ledger (to wait
/// for the plugin's acknowledgement), not the router's dispatch.
public struct SinkInjector: Sendable {
    let running: RunningGraph
    let deliveries: DeliveryLedger

    /// What became of an envelope delivered straight to a sink port (``inject(body:contentType:type:instance:port:timeout:)``).
    public enum InjectionOutcome: Sendable, Equatable {
        /// The plugin acknowledged it `ok`.
        case ok
        /// The plugin asked for it again later, with its reason.
        case retry(String)
        /// The plugin refused it, with its reason.
        case reject(String)
        /// No acknowledgement within the timeout (it may still come).
        case timedOut
    }

    /// Why an envelope could not be delivered at all.
    public struct InjectionError: Error, Sendable, CustomStringConvertible {
        /// What was wrong: no such instance or sink port, a type the port does not take, a body
        /// that does not fit the type's schema, or the plugin's refusal to take it now.
        public var description: String
    }

    /// Delivers an envelope of `type` with `body` to sink port `port` of `instance` without a
    /// route — the admin API's inject — after checking it against the port's types and the
    /// type's schema as `validate` checks a route, and waits (at most `timeout`) for the
    /// plugin's acknowledgement. Without a type, the port's only declared type is taken.
    public func inject(
        body: [UInt8], contentType: String = "application/json", type: String?, instance name: String, port portName: String,
        timeout: Duration
    ) async throws(InjectionError) -> InjectionOutcome {
        let graph = running.graph
        guard let instance = graph.instance(named: name), let planned = graph.plan.instances.first(where: { $0.name == name }) else {
            throw InjectionError(description: "no instance named '\(name)'")
        }
        guard let declaration = planned.ports.first(where: { $0.name == portName && $0.direction == .sink }) else {
            let sinks = planned.ports.filter { $0.direction == .sink }.map(\.name).joined(separator: ", ")
            throw InjectionError(description: "\(name) has no sink port '\(portName)' (its sink ports: \(sinks.isEmpty ? "none" : sinks))")
        }
        guard let type = type ?? (declaration.types.count == 1 && !declaration.isUntyped ? declaration.types.first : nil) else {
            throw InjectionError(
                description: "\(name).\(portName) takes \(declaration.types.joined(separator: ", ")): name the type (?type=)")
        }
        let envelope = Envelope(type: type, source: "admin", contentType: contentType, body: body)
        if !declaration.isUntyped, !declaration.types.contains(envelope.type) {
            throw InjectionError(
                description: "\(name).\(portName) takes \(declaration.types.joined(separator: ", ")), not \(envelope.type)")
        }
        if let definition = graph.plan.types[envelope.type] {
            let violations = definition.schema.violations(of: envelope.decodedBody())
            if !violations.isEmpty {
                throw InjectionError(
                    description: "the body is not a \(envelope.type): " + violations.prefix(5).map(\.description).joined(separator: "; "))
            }
        }
        guard !running.isDraining else { throw InjectionError(description: "the router is stopping") }
        let waiter = InjectedDelivery()
        let id = deliveries.nextID(tracking: waiter)
        let status = instance.directDeliveries.pass {
            instance.accepting.load(ordering: .relaxed)
                ? instance.deliver(envelope, port: SinkPort(instance: instance, name: portName), deliveryID: id) : SY_ERR_STOPPED
        }
        guard status == SY_OK else {
            deliveries.forgetTracked(id)
            throw InjectionError(
                description: "\(name).\(portName) did not take the envelope (status \(status ?? SY_ERR_STOPPED): stopped, or full)")
        }
        let outcome = await waiter.outcome(within: timeout)
        // An acknowledgement that never comes must not keep its entry.
        if outcome == .timedOut { deliveries.forgetTracked(id) }
        return outcome
    }
}
