import CBenchSink
import CBenchSource
import Foundation
import Logging
import SwitchyardABI
import SwitchyardConfig
import SwitchyardRuntime
import SwitchyardSpool

/// How long a batch may take before the benchmark gives up and reports an error.
let batchTimeoutNanos: UInt64 = 120_000_000_000

/// Emits `count` envelopes from the benchsource instance created last, on this thread, and
/// waits until the sink has acknowledged them all. Returns why not, or `nil` on success.
func pumpThroughSink(_ count: Int = batch) -> String? {
    let target = bench_sink_count() + UInt64(count)
    let emitted = bench_source_emit(UInt64(count))
    guard emitted == UInt64(count) else { return "the source emitted only \(emitted) of \(count) envelopes" }
    let acknowledged = bench_sink_wait(target, batchTimeoutNanos)
    guard acknowledged >= target else {
        return "the sink acknowledged \(count - Int(target - acknowledged)) of \(count) envelopes before the timeout"
    }
    return nil
}

/// Why a fixture could not be set up.
struct FixtureError: Error, CustomStringConvertible {
    var description: String
}

/// A running router with the two benchmark plugins: instance `src` (benchsource) and
/// instance `sink` (benchsink), and the one route given.
final class RouterFixture: @unchecked Sendable {
    // Set up once in the benchmark's setup, used from its closure, shut down in teardown.
    let router: Router
    /// The spool's directory, for at-least-once routes (removed on shutdown).
    let spoolDirectory: String?

    /// `route` is the YAML of one list entry under `routes:` (without the leading dash);
    /// `settings` is YAML added at the top level (such as `spool: { sync: normal }`).
    convenience init(route: String, settings: String = "") throws(FixtureError) {
        try self.init(routes: [route], settings: settings)
    }

    /// `routes` are the YAML of list entries under `routes:` (without the leading dash), all
    /// between the same two instances.
    init(routes: [String], settings: String = "") throws(FixtureError) {
        // Loading again (also when an earlier benchmark of this process did) re-negotiates,
        // so the plugins hand the router's host table to the instances created next.
        let source: LoadedPlugin
        let sink: LoadedPlugin
        do {
            source = try PluginLoader.load(file: PluginLibraries.source)
            sink = try PluginLoader.load(file: PluginLibraries.sink)
        } catch {
            throw FixtureError(description: "\(error)")
        }
        _ = PluginLibraries.entry(of: source.path)  // same object as the linked library
        _ = PluginLibraries.entry(of: sink.path)

        let text = """
            \(settings)
            instances:
              src:  { plugin: benchsource }
              sink: { plugin: benchsink }
            routes:
            \(routes.map { "  - " + $0.split(separator: "\n").joined(separator: "\n    ") }.joined(separator: "\n"))
            """
        let (config, configProblems) = ConfigLoader(environment: [:]).load(sources: [(file: "bench.yaml", text: text)])
        guard configProblems.isEmpty else {
            throw FixtureError(description: "route file problems:\n\(configProblems.map { "\($0)" }.joined(separator: "\n"))\n\(text)")
        }
        let (plan, planProblems) = GraphValidator(plugins: [source, sink]).validate(config)
        guard let plan else {
            throw FixtureError(description: "validation problems:\n\(planProblems.map { "\($0)" }.joined(separator: "\n"))\n\(text)")
        }
        // Nothing should be logged on the hot path; a no-op handler keeps the harness's pipe clean.
        let logger = Logger(label: "switchyard.bench", factory: { _ in SwiftLogNoOpLogHandler() })
        var spool: Spool?
        if plan.needsSpool {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-bench-\(UUID().uuidString)").path
            spoolDirectory = directory
            do {
                spool = try Spool(path: directory + "/spool.db", sync: plan.spoolSync, owner: true)
            } catch {
                throw FixtureError(description: "spool: \(error)")
            }
        } else {
            spoolDirectory = nil
        }
        router = Router(plan: plan, logger: logger, spool: spool)
        do {
            try router.start()
        } catch {
            throw FixtureError(description: "\(error)")
        }
    }

    /// Checks the router's counters after `expected` envelopes went through: every one taken
    /// by the route and dispatched to the sink, none filtered, dropped or refused.
    func check(expected: Int) -> String? {
        let statistics = router.statistics
        guard let route = statistics.routes.first else { return "no route" }
        let counts = (route.received, route.filtered, route.sent, route.droppedFull, route.droppedLoop, route.refused)
        guard counts == (expected, 0, expected, 0, 0, 0) else {
            return "route counters after \(expected) envelopes: received \(route.received), filtered \(route.filtered), "
                + "sent \(route.sent), dropped_full \(route.droppedFull), dropped_loop \(route.droppedLoop), refused \(route.refused)"
        }
        return nil
    }

    func shutdown() {
        router.shutdown(drainTimeout: .seconds(10))
        if let spoolDirectory { try? FileManager.default.removeItem(atPath: spoolDirectory) }
    }
}

/// What the baselines wire together without a router: a bench host table whose `emit` calls
/// the sink plugin's `deliver` at once and whose `ack` does nothing.
struct DirectWiring {
    var sinkDeliver: @convention(c) (UnsafeMutableRawPointer?, sy_bytes, UnsafePointer<sy_envelope>?, UInt64) -> Int32
    var sinkInstance: UnsafeMutableRawPointer
    var port: sy_bytes
    var nextDeliveryID: UInt64
}

/// The bench host: an offer with one host table, allocated once and never freed (plugins may
/// keep pointers to it).
enum BenchHost {
    nonisolated(unsafe) static let offer: UnsafeMutablePointer<sy_offer> = {
        let table = UnsafeMutablePointer<sy_host_api_v2>.allocate(capacity: 1)
        table.initialize(
            to: sy_host_api_v2(
                struct_size: UInt32(MemoryLayout<sy_host_api_v2>.size),
                reserved: 0,
                emit: { context, _, envelope, _ in
                    // Only the source instance of the source→sink baseline emits; its context is
                    // its DirectWiring.
                    guard let context else { return SY_ERR_INVALID }
                    let wiring = UnsafeMutableRawPointer(context).assumingMemoryBound(to: DirectWiring.self)
                    wiring.pointee.nextDeliveryID &+= 1
                    return wiring.pointee.sinkDeliver(
                        wiring.pointee.sinkInstance, wiring.pointee.port, envelope, wiring.pointee.nextDeliveryID)
                },
                ack: { _, _, _, _ in },
                log: { _, _, _ in },
                metric: { _, _, _, _ in },
                piece_done: { _, _, _, _ in },
                log_enabled: { _, _ in 0 },
                state_get: { _, _, _ in SY_ERR_FAILED },
                state_put: { _, _, _ in SY_ERR_FAILED },
                state_delete: { _, _ in SY_ERR_FAILED },
                state_scan: { _, _, _, _ in SY_ERR_FAILED },
                hold_acquire: { _, _, _, _, _ in SY_ERR_FAILED },
                hold_release: { _, _ in },
                source_done: { _, _ in },
                sink_ready: { _, _ in }
            ))
        let versions = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        versions.initialize(to: SY_ABI_VERSION_2)
        let tables = UnsafeMutablePointer<UnsafeRawPointer?>.allocate(capacity: 1)
        tables.initialize(to: UnsafeRawPointer(table))
        let offer = UnsafeMutablePointer<sy_offer>.allocate(capacity: 1)
        offer.initialize(
            to: sy_offer(
                struct_size: UInt32(MemoryLayout<sy_offer>.size),
                version_count: 1,
                versions: UnsafePointer(versions),
                host_tables: UnsafePointer(tables)
            ))
        return offer
    }()

    /// Negotiates with the plugin at `path` (already loaded) and returns its table.
    static func negotiate(_ path: String) throws(FixtureError) -> sy_plugin_api_v2 {
        var table = sy_plugin_api_v2()
        let chosen = withUnsafeMutableBytes(of: &table) { buffer in
            PluginLibraries.entry(of: path)(UnsafePointer(offer), buffer.baseAddress, buffer.count)
        }
        guard chosen == SY_ABI_VERSION_2 else { throw FixtureError(description: "\(path) refused the bench host's offer") }
        return table
    }

    /// Creates and starts an instance with an empty configuration.
    static func instantiate(_ table: sy_plugin_api_v2, name: String, context: UnsafeMutableRawPointer) throws(FixtureError)
        -> UnsafeMutableRawPointer
    {
        var handle: UnsafeMutableRawPointer?
        var message = [UInt8](repeating: 0, count: 512)
        var length = 0
        let config: StaticString = "{}"
        var instanceName = name
        let status = instanceName.withUTF8 { nameBuffer in
            message.withUnsafeMutableBufferPointer { messageBuffer in
                withUnsafeMutablePointer(to: &length) { lengthPointer in
                    let error = sy_error_buffer(data: messageBuffer.baseAddress, capacity: messageBuffer.count, length: lengthPointer)
                    let created = table.create!(
                        OpaquePointer(context), sy_bytes(nameBuffer),
                        sy_bytes(data: config.utf8Start, length: config.utf8CodeUnitCount), &handle, error
                    )
                    guard created == SY_OK, let handle else { return created }
                    return table.start!(handle, error)
                }
            }
        }
        guard status == SY_OK, let handle else {
            throw FixtureError(
                description: "instance \(name): status \(status): \(String(decoding: message.prefix(length), as: UTF8.self))")
        }
        return handle
    }
}

/// The baselines: the same two plugins, wired by the bench host instead of the router.
final class DirectFixture: @unchecked Sendable {
    // Set up once in setup, used from the benchmark closure on one thread, freed in teardown.
    let sinkTable: sy_plugin_api_v2
    let sourceTable: sy_plugin_api_v2
    let sinkInstance: UnsafeMutableRawPointer
    let sourceInstance: UnsafeMutableRawPointer
    let wiring: UnsafeMutablePointer<DirectWiring>
    /// A prebuilt envelope like the ones the router delivers (id, time, source and trace set).
    let envelope: UnsafeMutablePointer<sy_envelope>
    private let strings: [UnsafeMutableBufferPointer<UInt8>]

    init() throws(FixtureError) {
        // The sink first: the source's create() makes it the instance bench_source_emit() uses.
        sinkTable = try BenchHost.negotiate(PluginLibraries.sink)
        sourceTable = try BenchHost.negotiate(PluginLibraries.source)
        let portBytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 2)
        _ = portBytes.initialize(from: "in".utf8)
        let sinkContext = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)  // only identifies the instance
        sinkInstance = try BenchHost.instantiate(sinkTable, name: "sink", context: sinkContext)
        wiring = .allocate(capacity: 1)
        wiring.initialize(
            to: DirectWiring(
                sinkDeliver: sinkTable.deliver!, sinkInstance: sinkInstance,
                port: sy_bytes(UnsafeBufferPointer(portBytes)), nextDeliveryID: 0
            ))
        sourceInstance = try BenchHost.instantiate(sourceTable, name: "src", context: UnsafeMutableRawPointer(wiring))

        func bytes(_ text: String) -> UnsafeMutableBufferPointer<UInt8> {
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, text.utf8.count))
            _ = buffer.initialize(from: text.utf8)
            return UnsafeMutableBufferPointer(rebasing: buffer[..<text.utf8.count])
        }
        let id = bytes("01JDBENCH0000000000000000A")
        let type = bytes("bench.Reading")
        let source = bytes("src.out")
        let contentType = bytes("application/json")
        let body = bytes(#"{"sensor":"s1","value":21.5,"seq":12345}"#)
        let hop = bytes("src")
        strings = [portBytes, id, type, source, contentType, body, hop]
        let trace = UnsafeMutablePointer<sy_bytes>.allocate(capacity: 1)
        trace.initialize(to: sy_bytes(UnsafeBufferPointer(hop)))
        envelope = .allocate(capacity: 1)
        envelope.initialize(
            to: sy_envelope(
                struct_size: UInt32(MemoryLayout<sy_envelope>.size), reserved: 0,
                id: sy_bytes(UnsafeBufferPointer(id)), type: sy_bytes(UnsafeBufferPointer(type)),
                source: sy_bytes(UnsafeBufferPointer(source)), subject: sy_bytes(data: nil, length: 0),
                time_unix_nanos: 1_795_000_000_000_000_000, headers: nil, header_count: 0,
                content_type: sy_bytes(UnsafeBufferPointer(contentType)), body: sy_bytes(UnsafeBufferPointer(body)),
                trace: UnsafePointer(trace), trace_count: 1, session: sy_bytes(data: nil, length: 0)
            ))
    }

    /// Calls the sink's `deliver` `count` times with the prebuilt envelope, as the router's
    /// route worker would, minus the router.
    func deliverDirectly(_ count: Int) -> String? {
        let target = bench_sink_count() + UInt64(count)
        let deliver = wiring.pointee.sinkDeliver
        let port = wiring.pointee.port
        for index in 0..<count {
            let status = deliver(sinkInstance, port, envelope, UInt64(index + 1))
            if status != SY_OK { return "deliver() returned \(status)" }
        }
        let acknowledged = bench_sink_wait(target, batchTimeoutNanos)
        return acknowledged >= target ? nil : "the sink acknowledged too few deliveries"
    }

    func shutdown() {
        sourceTable.stop!(sourceInstance)
        sinkTable.stop!(sinkInstance)
        sourceTable.destroy!(sourceInstance)
        sinkTable.destroy!(sinkInstance)
        // The strings, wiring and contexts stay allocated: a few bytes per process, and no
        // plugin can still hold a pointer to freed memory.
    }
}
