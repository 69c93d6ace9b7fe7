import SwitchyardABI
import SwitchyardBridge
public import SwitchyardCore
public import SwitchyardPluginKit
import Synchronization

/// The router, as far as a plugin under unit test can tell: the C host table its
/// ``PluginContext`` calls, which records what the instance emits, acknowledges, logs and counts,
/// and answers each emit as the test says (``emitAnswer``). Plugins call their context from any
/// thread; the records are behind a lock.
///
/// The records are a ``Recorder`` of their own, which the context points at: the host table's
/// functions are C functions and find it through that pointer alone. It is kept for the process,
/// as a router keeps an instance's context until the instance is destroyed, so a plugin's timer
/// that outlives its test still finds a host to call.
public final class RecordingHost: Sendable {
    /// An envelope the instance emitted.
    public struct Emitted: Sendable {
        /// The source port it was emitted on.
        public var port: String
        /// A copy of the envelope, as the router would have taken it.
        public var envelope: Envelope
        /// Non-zero when the instance asked to hear how the router settled it.
        public var settleToken: UInt64
    }

    /// How the instance acknowledged a delivery.
    public struct Acknowledgement: Sendable, Equatable {
        /// The delivery's id (the one given to ``RecordingHost/delivery(_:)``).
        public var deliveryID: UInt64
        /// The outcome.
        public var outcome: DeliveryOutcome
        /// The reason given with it (empty for `ok`).
        public var reason: String
    }

    /// A line the instance logged.
    public struct LogLine: Sendable {
        /// Its level.
        public var level: LogLevel
        /// Its text.
        public var message: String
    }

    private let recorder: Recorder

    /// The instance's handle on this host: what the plugin under test is made with.
    public let context: PluginContext

    /// A host that takes every emit.
    public init() {
        let recorder = Recorder()
        self.recorder = recorder
        context = PluginContext(host: Self.table, context: OpaquePointer(Unmanaged.passRetained(recorder).toOpaque()))
    }

    /// A delivery from the router with id `id`: its acknowledgement is recorded here.
    public func delivery(_ id: UInt64) -> Delivery { Delivery(id: id, context: context) }

    /// What the next emits answer: `ok` unless a test makes the routes `full`, `stopped`…
    public var emitAnswer: EmitResult {
        get { recorder.records.withLock { $0.emitAnswer } }
        set { recorder.records.withLock { $0.emitAnswer = newValue } }
    }

    /// Every envelope emitted, in order (those answered other than `ok` too).
    public var emitted: [Emitted] { recorder.records.withLock { $0.emitted } }

    /// The envelopes emitted on `port`, in order.
    public func emitted(on port: String) -> [Emitted] { emitted.filter { $0.port == port } }

    /// Every acknowledgement, in order.
    public var acknowledgements: [Acknowledgement] { recorder.records.withLock { $0.acknowledgements } }

    /// How delivery `id` was acknowledged, or nil while it has not been.
    public func acknowledgement(of id: UInt64) -> Acknowledgement? { acknowledgements.first { $0.deliveryID == id } }

    /// Every line logged, in order.
    public var logLines: [LogLine] { recorder.records.withLock { $0.logLines } }

    /// The lines logged at `level`.
    public func logged(_ level: LogLevel) -> [String] { logLines.filter { $0.level == level }.map(\.message) }

    /// What the counter `name` adds up to (0 when it was never counted).
    public func counter(_ name: String) -> Double { recorder.records.withLock { $0.counters[name] ?? 0 } }

    /// How many times the instance said a full sink has room again (``PluginContext/sinkHasRoom()``
    /// after a refusal).
    public var sinkReadyCalls: Int { recorder.records.withLock { $0.sinkReadyCalls } }

    /// Refuses a delivery as full the way the SDK does when `canAccept` answers false, so a
    /// test sees whether the plugin then says it has room.
    public func refuseAsFull() { context.refusedAsFull.mark() }

    /// The gauge `name`'s last value, or nil when it was never set.
    public func gauge(_ name: String) -> Double? { recorder.records.withLock { $0.gauges[name] } }

    /// The host table every ``RecordingHost`` shares: C functions that find their host through
    /// the context pointer. Written once, read-only after (a C table is not `Sendable`).
    nonisolated(unsafe) private static let table: UnsafePointer<sy_host_api_v2> = {
        let table = UnsafeMutablePointer<sy_host_api_v2>.allocate(capacity: 1)
        table.initialize(
            to: sy_host_api_v2(
                struct_size: UInt32(MemoryLayout<sy_host_api_v2>.size), reserved: 0,
                emit: { context, port, envelope, token in
                    guard let recorder = Recorder.of(context), let envelope, let copy = EnvelopeBridge.envelope(from: envelope) else {
                        return SY_ERR_INVALID
                    }
                    return recorder.emit(Emitted(port: port.string, envelope: copy, settleToken: token)).rawValue
                },
                ack: { context, id, outcome, reason in
                    let outcome = DeliveryOutcome(rawValue: outcome) ?? .reject
                    Recorder.of(context)?.records.withLock {
                        $0.acknowledgements.append(Acknowledgement(deliveryID: id, outcome: outcome, reason: reason.string))
                    }
                },
                log: { context, level, message in
                    let line = LogLine(level: LogLevel(rawValue: level) ?? .critical, message: message.string)
                    Recorder.of(context)?.records.withLock { $0.logLines.append(line) }
                },
                metric: { context, kind, name, value in
                    let (kind, name) = (MetricKind(rawValue: kind), name.string)
                    Recorder.of(context)?.records.withLock { records in
                        switch kind {
                        case .counter: records.counters[name, default: 0] += value
                        case .gauge: records.gauges[name] = value
                        case .histogram, nil: break
                        }
                    }
                },
                piece_done: { _, _, _, _ in },
                // Every level: a test may read the debug lines a plugin formats only when asked.
                log_enabled: { _, _ in 1 },
                // No store and no holds: an instance that needs them is refused them, as by a
                // router without a store.
                state_get: { _, _, _ in SY_ERR_FAILED }, state_put: { _, _, _ in SY_ERR_FAILED },
                state_delete: { _, _ in SY_ERR_FAILED }, state_scan: { _, _, _, _ in SY_ERR_FAILED },
                hold_acquire: { _, _, _, _, _ in SY_ERR_FAILED }, hold_release: { _, _ in }, source_done: { _, _ in },
                sink_ready: { context, _ in Recorder.of(context)?.records.withLock { $0.sinkReadyCalls += 1 } }))
        return UnsafePointer(table)
    }()
}

/// What one ``RecordingHost`` recorded, behind its lock; what the host table's C functions reach
/// through the context pointer.
final class Recorder: Sendable {
    /// Everything recorded, and how emits are answered.
    struct Records {
        var emitted: [RecordingHost.Emitted] = []
        var acknowledgements: [RecordingHost.Acknowledgement] = []
        var logLines: [RecordingHost.LogLine] = []
        var counters: [String: Double] = [:]
        var gauges: [String: Double] = [:]
        var emitAnswer = EmitResult.ok
        var sinkReadyCalls = 0
    }

    let records = Mutex(Records())

    /// The recorder a host context points at.
    static func of(_ context: OpaquePointer?) -> Recorder? {
        context.map { Unmanaged<Recorder>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }

    /// Records an emit and answers it.
    func emit(_ emitted: RecordingHost.Emitted) -> EmitResult {
        records.withLock { records in
            records.emitted.append(emitted)
            return records.emitAnswer
        }
    }
}
