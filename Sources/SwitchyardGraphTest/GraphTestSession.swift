internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardRuntime
import Synchronization

/// A delivery one stand-in sink saw.
struct CapturedDelivery: Sendable {
    /// How the stand-in answered.
    enum Outcome: Sendable, Equatable {
        /// Taken and acknowledged OK.
        case taken
        /// Taken and acknowledged with this outcome (the test's `reject` or `retry`).
        case acknowledged(Int32)
        /// Refused as not what the port takes (type or schema).
        case refusedInvalid(String)
        /// Refused with SY_ERR_INVALID because the test's `refuse` says so.
        case refusedByTest
        /// Refused for now (the test's `fail`).
        case failed
    }

    /// `instance.port`.
    var port: String
    var envelope: Envelope
    var outcome: Outcome
    /// The input the graph was working on (0-based).
    var input = 0

    /// Whether the port refused it for its types or schema (not by the test's choice).
    var refusedAsInvalid: String? {
        guard case .refusedInvalid(let reason) = outcome else { return nil }
        return reason
    }
}

/// The run of one test case: the stand-in instances of its graph, what they captured, and the
/// test's choices for their sinks and service pieces.
final class GraphTestSession: Sendable {
    private let plan: GraphPlan
    private let testCase: GraphTestCase
    private let instances = Mutex<[String: FakeInstance]>([:])
    private let captured = Mutex<(input: Int, deliveries: [CapturedDelivery])>((0, []))

    /// The most deliveries kept per case: a graph that loops or fans out without end still
    /// ends with a bounded report.
    static let maximumCaptured = 10_000

    init(plan: GraphPlan, testCase: GraphTestCase) {
        self.plan = plan
        self.testCase = testCase
    }

    /// The fake's create(): the stand-in for planned instance `name`.
    func makeInstance(_ name: String, context: OpaquePointer?) -> FakeInstance? {
        guard let planned = plan.instances.first(where: { $0.name == name }) else { return nil }
        let instance = FakeInstance(name: name, context: context, ports: planned.ports, session: self)
        instances.withLock { $0[name] = instance }
        return instance
    }

    func instance(named name: String) -> FakeInstance? { instances.withLock { $0[name] } }

    /// Why sink `port` would not take `envelope` (its types, the type's schema), or nil.
    func refusal(of envelope: Envelope, by port: PortDeclaration) -> String? {
        if !port.isUntyped, !port.types.contains(envelope.type) {
            return "the port's types are \(port.types.joined(separator: ", ")), not \(envelope.type)"
        }
        guard let definition = plan.types[envelope.type] else { return nil }
        let violations = definition.schema.violations(of: envelope.decodedBody())
        return violations.isEmpty
            ? nil : "the body is not a \(envelope.type): " + violations.prefix(5).map(\.description).joined(separator: "; ")
    }

    func behaviour(of port: String) -> SinkBehaviour { testCase.sinks[port] ?? .accept }

    func serviceOutput(of port: String, input: JSONValue) -> JSONValue { testCase.services[port] ?? input }

    /// Marks what follows as caused by input `index`.
    func begin(input index: Int) { captured.withLock { $0.input = index } }

    func record(_ delivery: CapturedDelivery) {
        captured.withLock { state in
            guard state.deliveries.count < Self.maximumCaptured else { return }
            var delivery = delivery
            delivery.input = state.input
            state.deliveries.append(delivery)
        }
    }

    /// Every delivery so far, in the order the sinks saw them.
    var deliveries: [CapturedDelivery] { captured.withLock { $0.deliveries } }
}
