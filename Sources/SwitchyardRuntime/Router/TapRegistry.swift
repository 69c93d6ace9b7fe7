import DequeModule
internal import SwitchyardConfig
public import SwitchyardCore
internal import SwitchyardRouting
import Synchronization

/// Copies of the envelopes passing a route or leaving a source port, for whoever taps them
/// (`switchyard tap`, the admin port's `/v1/tap`). Each route and source port holds its
/// ``TapPoint``: with nobody tapping it pays one relaxed atomic load of its own per envelope.
/// A tap takes at most `rate` envelopes a second, as `vector tap` samples: within its budget
/// the point's thread evaluates the tap's condition and appends the envelope to the reader's
/// bounded buffer, waking the reader at most once per batch; past it, the envelope is only
/// counted as skipped. So a tapped route keeps its throughput however fast it runs, and the
/// reader (which serializes each envelope) never competes with it for the processors.
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
    /// Envelopes a tap takes per second unless it asks otherwise (`vector tap`'s 100 per
    /// 500 ms), and the most it may ask for.
    public static let defaultRate = 200
    public static let maximumRate = 10_000

    /// Every point a route or port of this router asked for, kept across reloads so a tap
    /// opened on a route keeps seeing it after the route is rebuilt.
    private let points = Mutex<[Point: TapPoint]>([:])
    private let open = Atomic<Int>(0)

    init() {}

    /// The point `point`, made on first use (a route or source port asks once, when built).
    func point(_ point: Point) -> TapPoint {
        points.withLock { points in
            if let existing = points[point] { return existing }
            let made = TapPoint()
            points[point] = made
            return made
        }
    }

    /// A stream of the envelopes passing `point` from now on for which `condition` holds (all
    /// when nil); nil when `limit` taps are open. It ends when the reader stops iterating.
    func tap(_ point: Point, when condition: Condition?, rate: Int) -> TapStream? {
        guard open.add(1, ordering: .relaxed).newValue <= Self.limit else {
            open.subtract(1, ordering: .relaxed)
            return nil
        }
        let target = self.point(point)
        let reader = TapReader(condition: condition, rate: rate)
        target.add(reader)
        return TapStream(reader: reader) { [weak self] in
            target.remove(reader)
            self?.open.subtract(1, ordering: .relaxed)
        }
    }
}

/// One route's or source port's taps.
final class TapPoint: Sendable {
    private let readers = Mutex<[TapReader]>([])
    private let count = Atomic<Int>(0)

    /// Whether anyone taps this point: the hot path's check before it does anything else.
    @inline(__always)
    var isActive: Bool { count.load(ordering: .relaxed) > 0 }

    func add(_ reader: TapReader) {
        readers.withLock { $0.append(reader) }
        count.add(1, ordering: .relaxed)
    }

    func remove(_ reader: TapReader) {
        readers.withLock { $0.removeAll { $0 === reader } }
        count.subtract(1, ordering: .relaxed)
    }

    /// Hands `envelope` to the readers whose condition it meets.
    func publish(_ envelope: Envelope) {
        // Under the lock rather than over a copy: no array retained and released per envelope.
        readers.withLock { readers in
            for reader in readers { reader.offer(envelope) }
        }
    }
}

/// One tap's buffer between the routing threads and the reader's task.
final class TapReader: Sendable {
    private struct State {
        var buffer = Deque<Envelope>()
        /// Envelopes dropped because the reader fell `TapRegistry.buffer` behind.
        var lost = 0
        /// The reader's task, while it waits for envelopes.
        var waiter: CheckedContinuation<Void, Never>?
        var closed = false
    }

    let condition: Condition?
    /// Envelopes taken per window.
    private let perWindow: Int
    private let window: Duration
    /// What is left of this window's budget; refilled by the reader when a window ends.
    private let budget: Atomic<Int>
    /// Envelopes passing while the budget was spent (condition not evaluated).
    private let skipped = Atomic<Int>(0)
    private let state = Mutex(State())
    /// The reader's own: when the current window ends.
    private let windowEnd = Mutex(ContinuousClock.now)

    /// How long the budget of `rate / 2` envelopes lasts.
    static let window = Duration.milliseconds(500)

    init(condition: Condition?, rate: Int, window: Duration = TapReader.window) {
        self.condition = condition
        self.window = window
        perWindow = max(1, Int((Double(min(rate, TapRegistry.maximumRate)) * (window / .seconds(1))).rounded()))
        budget = Atomic(perWindow)
        windowEnd.withLock { $0 = .now + window }
    }

    /// Envelopes skipped since the last call (over the rate).
    func takeSkipped() -> Int { skipped.exchange(0, ordering: .relaxed) }

    /// On a routing thread: within the budget, keeps `envelope` if the condition holds
    /// (dropping the oldest when the buffer is full) and wakes the reader if it waits.
    @inline(__always)
    func offer(_ envelope: Envelope) {
        guard budget.load(ordering: .relaxed) > 0 else {
            skipped.add(1, ordering: .relaxed)
            return
        }
        if let condition {
            var scope = EnvelopeScope(envelope)
            guard condition.evaluate(&scope) else { return }
        }
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.closed else { return nil }
            if state.buffer.count >= TapRegistry.buffer {
                state.buffer.removeFirst()
                state.lost += 1
            }
            state.buffer.append(envelope)
            budget.subtract(1, ordering: .relaxed)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// The envelopes buffered since the last call, waiting for some; nil once closed.
    func take() async -> [Envelope]? {
        while true {
            let windowEnd = self.windowEnd.withLock { end in
                if ContinuousClock.now >= end {
                    end = .now + window
                    budget.store(perWindow, ordering: .relaxed)
                }
                return end
            }
            let taken = state.withLock { state -> [Envelope] in
                defer { state.buffer.removeAll(keepingCapacity: true) }
                return Array(state.buffer)
            }
            if !taken.isEmpty { return taken }
            if state.withLock({ $0.closed }) || Task.isCancelled { return nil }
            if budget.load(ordering: .relaxed) <= 0 {
                // Spent: nothing comes before the next window.
                try? await Task.sleep(until: windowEnd)
                continue
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state -> Bool in
                        guard state.buffer.isEmpty, !state.closed else { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                close()
            }
            // A busy route would otherwise wake the reader once per envelope: waiting a
            // moment after the first one lets a batch gather (at most 200 wakes a second).
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Ends the tap: a waiting reader returns nil.
    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}

/// The envelopes of one tap, as an async sequence; the tap closes when the iteration ends
/// (its iterator is released) or its task is cancelled.
public struct TapStream: AsyncSequence, Sendable {
    public typealias Element = Envelope

    private let subscription: Subscription

    init(reader: TapReader, onClose: @escaping @Sendable () -> Void) {
        subscription = Subscription(reader: reader, onClose: onClose)
    }

    public func makeAsyncIterator() -> Iterator { Iterator(subscription: subscription) }

    /// Envelopes that passed the point since the last call but were not taken: over the rate.
    public func takeSkipped() -> Int { subscription.reader.takeSkipped() }

    /// Reads the tap's batches one envelope at a time.
    public struct Iterator: AsyncIteratorProtocol {
        let subscription: Subscription
        private var batch: [Envelope] = []
        private var position = 0

        init(subscription: Subscription) {
            self.subscription = subscription
        }

        public mutating func next() async -> Envelope? {
            if position == batch.count {
                guard let taken = await subscription.reader.take() else { return nil }
                batch = taken
                position = 0
            }
            defer { position += 1 }
            return batch[position]
        }
    }

    /// Unregisters the reader when the last copy of the stream and its iterators is gone.
    final class Subscription: Sendable {
        let reader: TapReader
        private let onClose: @Sendable () -> Void

        init(reader: TapReader, onClose: @escaping @Sendable () -> Void) {
            self.reader = reader
            self.onClose = onClose
        }

        deinit {
            reader.close()
            onClose()
        }
    }
}

extension Router {
    /// Taps `point` of the running graph: a stream of copies of the envelopes passing it from
    /// now on for which `condition` (a `when:` expression) holds. Throws when the route or
    /// source port does not exist, the condition does not parse, or too many taps are open.
    /// At most `rate` envelopes a second are taken (1…``TapRegistry/maximumRate``); the rest
    /// are counted (``TapStream/takeSkipped()``).
    public func tap(
        _ point: TapRegistry.Point, when condition: String?, rate: Int = TapRegistry.defaultRate
    ) throws(RouterError) -> TapStream {
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
            // As validate checks a route's when: a field none of the tapped types has would
            // never match, and the tap would wait for ever.
            if let problem = FieldReadCheck.problems(
                compiled?.fieldReads ?? [], at: nil, what: "the condition", types: tappedTypes(point, in: plan), registry: plan.types
            ).first {
                throw RouterError(instance: point.description, reason: problem.message)
            }
        }
        guard (1...TapRegistry.maximumRate).contains(rate) else {
            throw RouterError(instance: point.description, reason: "the rate must be 1-\(TapRegistry.maximumRate) envelopes a second")
        }
        guard let stream = taps.tap(point, when: compiled, rate: rate) else {
            throw RouterError(instance: point.description, reason: "\(TapRegistry.limit) taps are open already")
        }
        return stream
    }

    /// The types of the envelopes a tap on `point` sees: a port's, or what a route delivers (its
    /// map's or template's type, else its source's; a script's outputs are not known ahead).
    private func tappedTypes(_ point: TapRegistry.Point, in plan: GraphPlan) -> [String] {
        func sourceTypes(_ reference: PortReference) -> [String] {
            let port = plan.instances.first { $0.name == reference.instance }?.ports.first {
                $0.name == reference.port && $0.direction == .source
            }
            return port.map { $0.isUntyped ? [] : $0.types } ?? []
        }
        switch point {
        case .port(let name):
            return PortReference(name).map(sourceTypes) ?? []
        case .route(let name):
            guard let route = plan.routes.first(where: { $0.name == name }), route.script == nil else { return [] }
            if let transform = route.transform { return transform.outputType.map { [$0] } ?? [] }
            return sourceTypes(route.declaration.from.value)
        }
    }
}
