import SwitchyardABI
import SwitchyardBridge
public import SwitchyardCore
import Synchronization

extension Router {
    /// What became of an envelope delivered straight to a sink port (``inject(_:instance:port:timeout:)``).
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
        let graph = self.graph
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
        guard !isDraining else { throw InjectionError(description: "the router is stopping") }
        let waiter = InjectedDelivery()
        let id = nextDeliveryID(tracking: waiter)
        let status = instance.directDeliveries.pass {
            instance.accepting.load(ordering: .relaxed)
                ? instance.deliver(envelope, port: SinkPort(instance: instance, name: portName), deliveryID: id) : SY_ERR_STOPPED
        }
        guard status == SY_OK else {
            forgetTracked(id)
            throw InjectionError(
                description: "\(name).\(portName) did not take the envelope (status \(status ?? SY_ERR_STOPPED): stopped, or full)")
        }
        let outcome = await waiter.outcome(within: timeout)
        // An acknowledgement that never comes must not keep its entry.
        if outcome == .timedOut { forgetTracked(id) }
        return outcome
    }
}

/// The acknowledgement of one injected delivery, handed from the plugin's thread to the waiting
/// task. `state` holds the outcome once known and the continuation while someone waits.
final class InjectedDelivery: DeliveryCompletion {
    private let state = Mutex<(outcome: Router.InjectionOutcome?, waiting: CheckedContinuation<Router.InjectionOutcome, Never>?)>(
        (nil, nil))

    func expect(_ count: Int) {}

    func complete(_ outcome: Int32, reason: sy_bytes) {
        let result: Router.InjectionOutcome =
            switch outcome {
            case SY_OUTCOME_OK: .ok
            case SY_OUTCOME_RETRY: .retry(reason.string)
            default: .reject(reason.string)
            }
        resolve(result)
    }

    /// Resolves once; later outcomes (an acknowledgement after the timeout) are dropped.
    private func resolve(_ result: Router.InjectionOutcome) {
        let waiting = state.withLock { state -> CheckedContinuation<Router.InjectionOutcome, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = result
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume(returning: result)
    }

    /// The outcome, or `timedOut` after `timeout`.
    func outcome(within timeout: Duration) async -> Router.InjectionOutcome {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.resolve(.timedOut)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let known = state.withLock { state -> Router.InjectionOutcome? in
                if let outcome = state.outcome { return outcome }
                state.waiting = continuation
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }
}
