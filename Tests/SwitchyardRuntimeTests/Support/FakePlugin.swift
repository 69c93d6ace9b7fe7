import CoreMetrics
import Dispatch
import Logging
import SwitchyardABI
import SwitchyardBridge
import SwitchyardConfig
import SwitchyardCore
import Synchronization
import Testing

@testable import SwitchyardRuntime

#if canImport(Glibc)
    import Glibc
#endif

// A plugin linked into the test binary: its entry function, table and instances are plain
// Swift functions behind the C ABI. C function pointers cannot capture, so everything they
// reach is global.

/// Bytes allocated once and never freed: the ABI wants the manifest alive for the process.
func processLifetimeBytes(_ text: String) -> sy_bytes {
    let bytes = Array(text.utf8)
    let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, bytes.count))
    storage.initialize(from: bytes, count: bytes.count)
    return sy_bytes(data: UnsafePointer(storage), length: bytes.count)
}

let fakeManifestJSON = """
    {
      "name": "fake", "version": "1.0.0", "description": "test double",
      "ports": [
        {"name": "out", "direction": "source", "types": ["t.A"]},
        {"name": "in", "direction": "sink", "types": ["t.B"]},
        {"name": "any", "direction": "sink", "types": ["*"], "feeds": ["out"]},
        {"name": "opt", "direction": "source", "types": ["t.A"], "requires": "extra"},
        {"name": "either", "direction": "source", "types": ["t.A", "t.B"]}
      ],
      "types": {
        "t.A": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "string"}}, "additionalProperties": false},
        "t.B": {"type": "object", "properties": {"z": {"type": "string"}}, "required": ["z"], "additionalProperties": false}
      },
      "config": {"type": "object", "properties": {"extra": {"type": "object"}, "n": {"type": "integer"}}, "additionalProperties": false}
    }
    """

nonisolated(unsafe) let fakeManifest = processLifetimeBytes(fakeManifestJSON)
nonisolated(unsafe) let brokenManifest = processLifetimeBytes(#"{"name": "broken", "version": "1", "ports": ["#)
nonisolated(unsafe) let portlessManifest = processLifetimeBytes(#"{"name": "portless", "version": "1"}"#)
nonisolated(unsafe) let badConfigManifest = processLifetimeBytes(
    #"{"name": "badcfg", "version": "1", "ports": [], "config": {"type": "thing"}}"#)

/// What the host offered in the last negotiation, as the plugin saw it.
struct SeenOffer: Sendable {
    var offerSize: UInt32
    var versions: [UInt32]
    var hostTableSize: UInt32
    var hostFunctionsPresent: Bool
    var capacity: Int
}

let lastOffer = Mutex<SeenOffer?>(nil)

/// Records the offer (so tests can check what the host hands over).
func recordOffer(_ offer: UnsafePointer<sy_offer>?, capacity: Int) {
    guard let offer else { return }
    let raw = offer.pointee
    var versions: [UInt32] = []
    var hostTableSize: UInt32 = 0
    var present = false
    if let list = raw.versions, let tables = raw.host_tables {
        for index in 0..<Int(raw.version_count) {
            versions.append(list[index])
            if list[index] == SY_ABI_VERSION_1, let table = tables[index] {
                let host = table.assumingMemoryBound(to: sy_host_api_v1.self).pointee
                hostTableSize = host.struct_size
                present = host.emit != nil && host.ack != nil && host.log != nil && host.metric != nil
            }
        }
    }
    let seen = SeenOffer(
        offerSize: raw.struct_size, versions: versions, hostTableSize: hostTableSize, hostFunctionsPresent: present, capacity: capacity
    )
    lastOffer.withLock { $0 = seen }
}

/// Fills a complete version-1 table whose functions drive ``FakeInstance``s.
func fillFakeTable(_ table: UnsafeMutableRawPointer?, manifest: sy_bytes) {
    guard let table else { return }
    let api = table.assumingMemoryBound(to: sy_plugin_api_v1.self)
    api.pointee = sy_plugin_api_v1()
    api.pointee.struct_size = UInt32(MemoryLayout<sy_plugin_api_v1>.size)
    api.pointee.manifest = manifest
    api.pointee.create = { context, name, config, instance, _ in
        let fake = FakeInstance.named(name.string)
        fake.state.withLock {
            $0.context = UInt(bitPattern: context)
            $0.config = config.string
        }
        instance?.pointee = Unmanaged.passRetained(fake).toOpaque()
        return SY_OK
    }
    api.pointee.start = { handle, _ in
        FakeInstance.from(handle)?.state.withLock { $0.started = true }
        return SY_OK
    }
    api.pointee.deliver = { handle, port, envelope, deliveryID in
        fakeDeliver(handle, port: port, deliveryID: deliveryID) { envelope.map { EnvelopeBridge.envelope(fromV1: $0) } }
    }
    api.pointee.stop = { handle in FakeInstance.from(handle)?.state.withLock { $0.stopped = true } }
    api.pointee.destroy = { handle in
        guard let handle else { return }
        Unmanaged<FakeInstance>.fromOpaque(handle).release()
    }
    api.pointee.quiesce = { handle in FakeInstance.from(handle)?.state.withLock { $0.quiesced = true } }
    api.pointee.resume = { handle, port in
        let name = port.string
        FakeInstance.from(handle)?.state.withLock { $0.resumes.append(name) }
    }
    api.pointee.settled = { handle, token, outcome in
        FakeInstance.from(handle)?.state.withLock { $0.settled.append(FakeInstance.Settled(token: token, outcome: outcome)) }
    }
    api.pointee.piece_enable = { handle, _, _, _, _ in
        guard let fake = FakeInstance.from(handle) else { return SY_ERR_INVALID }
        fake.state.withLock { $0.enableCalls += 1 }
        fake.enableGate?.wait()
        return SY_OK
    }
}

/// What the fake's deliver() does with the envelope `copy` reads (nil: malformed).
func fakeDeliver(_ handle: UnsafeMutableRawPointer?, port: sy_bytes, deliveryID: UInt64, copy: () -> Envelope?) -> Int32 {
    guard let fake = FakeInstance.from(handle) else { return SY_ERR_INVALID }
    if fake.answersFull.load(ordering: .relaxed) {
        fake.state.withLock { $0.refusedAsFull.append(deliveryID) }
        return SY_ERR_FULL
    }
    if fake.answersStopped.load(ordering: .relaxed) {
        fake.state.withLock { $0.refusedAsStopped += 1 }
        return SY_ERR_STOPPED
    }
    // Borrowed views: copy before anything else.
    guard let copy = copy() else { return SY_ERR_INVALID }
    let portName = port.string
    fake.state.withLock { $0.entered += 1 }
    fake.gate?.wait()
    fake.state.withLock { $0.deliveries.append(FakeInstance.Delivery(port: portName, envelope: copy, id: deliveryID)) }
    if fake.autoAck { fake.ack(deliveryID, outcome: SY_OUTCOME_OK) }
    return SY_OK
}

/// The entry function of the working fake plugin.
let fakeEntry: sy_entry_fn = { offer, table, capacity in
    recordOffer(offer, capacity: capacity)
    guard capacity >= MemoryLayout<sy_plugin_api_v1>.size else { return 0 }
    fillFakeTable(table, manifest: fakeManifest)
    return SY_ABI_VERSION_1
}

/// Negotiates with the working fake plugin.
func loadFakePlugin() throws -> LoadedPlugin {
    try PluginLoader.negotiate(entry: fakeEntry, path: "/fake/libfake.so")
}

/// The host's version-1 table, as every version 1 plugin (like the fake) receives it.
func hostAPI() -> sy_host_api_v1 {
    let offer = HostTable.offer.pointer.pointee
    guard let versions = offer.versions, let tables = offer.host_tables,
        let index = (0..<Int(offer.version_count)).first(where: { versions[$0] == SY_ABI_VERSION_1 }), let table = tables[index]
    else {
        preconditionFailure("the host offers no version 1 table")
    }
    return table.assumingMemoryBound(to: sy_host_api_v1.self).pointee
}

/// One instance of the fake plugin; tests register one by name before the router creates it
/// to choose its behaviour.
final class FakeInstance: Sendable {
    struct Delivery: Sendable {
        var port: String
        var envelope: Envelope
        var id: UInt64
        /// The thread deliver() ran on.
        var thread = pthread_self()
    }

    struct Settled: Sendable, Equatable {
        var token: UInt64
        var outcome: Int32
    }

    struct State: Sendable {
        var context: UInt = 0
        var config = ""
        var started = false
        var quiesced = false
        var stopped = false
        var entered = 0
        var deliveries: [Delivery] = []
        var resumes: [String] = []
        var settled: [Settled] = []
        /// The delivery ids deliver() answered "full".
        var refusedAsFull: [UInt64] = []
        /// How many deliveries deliver() answered "stopped".
        var refusedAsStopped = 0
        /// How often piece_enable was called.
        var enableCalls = 0
    }

    let name: String
    /// When set, deliver() waits for it before recording (a stalled sink).
    let gate: DispatchSemaphore?
    /// When set, piece_enable waits for it before accepting (a piece slow to answer).
    let enableGate: DispatchSemaphore?
    /// Whether deliver() acknowledges at once.
    let autoAck: Bool
    /// While set, deliver() answers "full" and takes nothing.
    let answersFull = Atomic<Bool>(false)
    /// While set (and `answersFull` is not), deliver() answers "stopped" and takes nothing.
    let answersStopped = Atomic<Bool>(false)
    let state = Mutex(State())

    private static let registry = Mutex<[String: FakeInstance]>([:])

    init(name: String, gate: DispatchSemaphore? = nil, enableGate: DispatchSemaphore? = nil, autoAck: Bool = true) {
        self.name = name
        self.gate = gate
        self.enableGate = enableGate
        self.autoAck = autoAck
    }

    /// Registers the behaviour of the instance the router will create as `name`.
    @discardableResult
    static func register(
        _ name: String, gate: DispatchSemaphore? = nil, enableGate: DispatchSemaphore? = nil, autoAck: Bool = true
    ) -> FakeInstance {
        let fake = FakeInstance(name: name, gate: gate, enableGate: enableGate, autoAck: autoAck)
        registry.withLock { $0[name] = fake }
        return fake
    }

    static func named(_ name: String) -> FakeInstance {
        registry.withLock { registry in
            if let existing = registry[name] { return existing }
            let fake = FakeInstance(name: name)
            registry[name] = fake
            return fake
        }
    }

    static func from(_ handle: UnsafeMutableRawPointer?) -> FakeInstance? {
        guard let handle else { return nil }
        return Unmanaged<FakeInstance>.fromOpaque(handle).takeUnretainedValue()
    }

    var context: OpaquePointer? { OpaquePointer(bitPattern: state.withLock { $0.context }) }
    var deliveries: [Delivery] { state.withLock { $0.deliveries } }
    var entered: Int { state.withLock { $0.entered } }
    var resumes: [String] { state.withLock { $0.resumes } }
    var settled: [Settled] { state.withLock { $0.settled } }

    /// Emits through the host, as the plugin would.
    func emit(port: String, _ envelope: Envelope, settleToken: UInt64 = 0) -> Int32 {
        guard let emit = hostAPI().emit else { return -1 }
        let context = self.context
        var portName = port
        return portName.withUTF8 { portBytes in
            EnvelopeBridge.withCEnvelopeV1(envelope) { cEnvelope in emit(context, sy_bytes(portBytes), cEnvelope, settleToken) }
        }
    }

    /// Acknowledges a delivery through the host.
    func ack(_ deliveryID: UInt64, outcome: Int32) {
        guard let ack = hostAPI().ack else { return }
        ack(context, deliveryID, outcome, sy_bytes(data: nil, length: 0))
    }
}

/// Checks `condition` every millisecond until it holds or `timeout` passes; returns whether
/// it held. It suspends between checks, so a waiting test never holds one of the few
/// cooperative threads every other test needs.
func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        // The deadline may have passed while this task waited for a thread: look once more.
        if ContinuousClock.now >= deadline { return condition() }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

let quietLogger = Logger(label: "switchyard.tests", factory: { _ in SwiftLogNoOpLogHandler() })

/// Loads `yaml`, validates it against `plugins` (the fake plugin unless given) and returns the plan.
func plan(_ yaml: String, file: String = "r.yaml", plugins: [LoadedPlugin]? = nil) throws -> GraphPlan {
    let (config, loadProblems) = ConfigLoader(environment: [:]).load(sources: [(file: file, text: yaml)])
    try #require(loadProblems.isEmpty, "\(loadProblems)")
    let (plan, problems) = GraphValidator(plugins: try plugins ?? [loadFakePlugin()]).validate(config)
    try #require(problems.isEmpty, "\(problems)")
    return try #require(plan)
}

/// Loads `yaml` as `file` and validates it against `plugins` (the fake plugin unless given):
/// the plan, if there is one, and every diagnostic. The configuration itself must load.
func validated(
    _ yaml: String, file: String = "g.yaml", environment: [String: String] = [:], plugins: [LoadedPlugin]? = nil
) throws -> (GraphPlan?, [Diagnostic]) {
    let (config, loadProblems) = ConfigLoader(environment: environment).load(sources: [(file: file, text: yaml)])
    try #require(loadProblems.isEmpty, "configuration should load: \(loadProblems)")
    return GraphValidator(plugins: try plugins ?? [loadFakePlugin()]).validate(config)
}

/// A body of type t.A.
func bodyA(x: Int, y: String = "why") -> [UInt8] { Array(#"{"x":\#(x),"y":"\#(y)"}"#.utf8) }

/// Runs `body` with a started router for `yaml` (validated against `plugins`, the fake plugin
/// unless given), shut down afterwards (drain timeout 5 s); its plain routes on
/// `routeThreads` threads when given.
func withRouter(
    _ yaml: String, plugins: [LoadedPlugin]? = nil, metricsFactory: (any MetricsFactory)? = nil, routeThreads: Int? = nil,
    _ body: (Router) async throws -> Void
) async throws {
    let plan = try plan(yaml, plugins: plugins)
    let router = Router(plan: plan, logger: quietLogger, metricsFactory: metricsFactory, routeThreads: routeThreads)
    try router.start()
    defer { router.shutdown(drainTimeout: .seconds(5)) }
    try await body(router)
}
