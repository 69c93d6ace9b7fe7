internal import SwitchyardConfig
public import SwitchyardCore
internal import SwitchyardRouting
import Synchronization

/// Copies of the envelopes passing a route or leaving a source port, for whoever taps them
/// (`switchyard tap`, the admin port's `/v1/tap`). With nobody tapping, the routes pay one
/// relaxed atomic load per envelope; with a tap, the route's thread evaluates the tap's
/// condition and hands a copy over (a slow reader loses the oldest, counted).
public final class TapRegistry: Sendable {
    /// What a tap watches.
    public enum Point: Sendable, Hashable, CustomStringConvertible {
        /// The envelopes a route delivers: after its condition and its map/template.
        case route(String)
        /// The envelopes a source port emits (`instance.port`), before any route.
        case port(String)

        public var description: String {
            switch self {
            case .route(let name): "route \(name)"
            case .port(let name): "port \(name)"
            }
        }
    }

    /// How many envelopes a reader may fall behind before the oldest are dropped.
    public static let buffer = 1000
    /// The most taps open at once.
    public static let limit = 16

    /// Taps by point; `active` mirrors their number for the routes' fast check.
    private let taps = Mutex<[Point: [UInt64: (condition: Condition?, continuation: AsyncStream<Envelope>.Continuation)]]>([:])
    private let active = Atomic<Int>(0)
    private let nextTap = Atomic<UInt64>(0)

    init() {}

    /// Whether anyone taps anything: the routes' check before they build anything.
    @inline(__always)
    var isActive: Bool { active.load(ordering: .relaxed) > 0 }

    /// A stream of the envelopes passing `point` from now on for which `condition` holds (all
    /// when nil); nil when `limit` taps are open. It ends when the reader stops iterating.
    func tap(_ point: Point, when condition: Condition?) -> AsyncStream<Envelope>? {
        let (stream, continuation) = AsyncStream.makeStream(of: Envelope.self, bufferingPolicy: .bufferingNewest(Self.buffer))
        let id = nextTap.add(1, ordering: .relaxed).newValue
        let opened = taps.withLock { taps -> Bool in
            guard taps.values.reduce(0, { $0 + $1.count }) < Self.limit else { return false }
            taps[point, default: [:]][id] = (condition, continuation)
            active.add(1, ordering: .relaxed)
            return true
        }
        guard opened else { return nil }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.taps.withLock { taps in
                guard taps[point]?.removeValue(forKey: id) != nil else { return }
                if taps[point]?.isEmpty == true { taps.removeValue(forKey: point) }
                self.active.subtract(1, ordering: .relaxed)
            }
        }
        return stream
    }

    /// Hands `envelope` to the taps of `point` whose condition it meets.
    func publish(_ point: Point, _ envelope: Envelope) {
        guard let readers = taps.withLock({ $0[point] }) else { return }
        for reader in readers.values {
            if let condition = reader.condition {
                var scope = EnvelopeScope(envelope)
                guard condition.evaluate(&scope) else { continue }
            }
            reader.continuation.yield(envelope)
        }
    }
}

extension Router {
    /// Taps `point` of the running graph: a stream of copies of the envelopes passing it from
    /// now on for which `condition` (a `when:` expression) holds. Throws when the route or
    /// source port does not exist, the condition does not parse, or too many taps are open.
    public func tap(_ point: TapRegistry.Point, when condition: String?) throws(RouterError) -> AsyncStream<Envelope> {
        let plan = graph.plan
        switch point {
        case .route(let name):
            guard plan.routes.contains(where: { $0.name == name }) || plan.iiideas.contains(where: { $0.route.name == name }) else {
                throw RouterError(instance: name, reason: "no such route")
            }
        case .port(let name):
            guard let reference = PortReference(name),
                plan.instances.first(where: { $0.name == reference.instance })?.ports.contains(where: {
                    $0.name == reference.port && $0.direction == .source
                }) == true
            else { throw RouterError(instance: name, reason: "no such source port") }
        }
        var compiled: Condition?
        if let condition, !condition.isEmpty {
            do {
                compiled = try Condition(parsing: condition, at: nil)
            } catch {
                throw RouterError(instance: point.description, reason: "the condition does not parse: \(error.message)")
            }
        }
        guard let stream = taps.tap(point, when: compiled) else {
            throw RouterError(instance: point.description, reason: "\(TapRegistry.limit) taps are open already")
        }
        return stream
    }
}
