import Foundation
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// The entry point of `libtestkit.so`, a plugin for the delivery tests: never installed into
/// `Plugins/`.
@_cdecl("switchyard_plugin_entry")
public func entry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(TestKit.self, offer: offer, table: table, capacity: capacity)
}

/// A durable numbered source and a scriptable sink.
///
/// `numbers` emits `count` envelopes with ids `<prefix>-00000001`… and subjects `s0…s<k-1>`,
/// each with a settle token; it records in its `state` file how many leading envelopes are
/// settled, and after a restart emits again from the first unsettled one — as a broker
/// redelivers what was never acknowledged.
///
/// `collect` appends `id subject` per delivery it accepts to `path` (with `write(2)`, so a
/// kill of the router keeps every line), and can fail the first attempts of each envelope,
/// reject everything, fail while a file exists, answer slowly, or cap what it has in flight.
final class TestKit: SwitchyardPlugin {
    static let manifest = PluginManifest(
        name: "testkit",
        version: "1.0.0",
        summary: "Sources and sinks for delivery tests",
        ports: [
            PortDeclaration(
                name: "numbers", direction: .source, types: ["test.Number"], requires: "numbers", summary: "Numbered envelopes"),
            PortDeclaration(
                name: "collect", direction: .sink, types: ["*"], requires: "collect", summary: "Records what it accepts",
                preferences: [
                    "type": "object",
                    "properties": [
                        "refuse": ["type": "string", "description": "Refuse to serve the iiidea, with this reason"],
                        "level": ["type": "string", "enum": ["low", "high"], "default": "low", "description": "How loud"],
                    ],
                ]),
            PortDeclaration(
                name: "double", direction: .service, types: ["*"], summary: "An iiidea service piece: {doubled: 2 × count}",
                preferences: [
                    "type": "object",
                    "properties": ["fail": ["type": "string", "description": "Fail every run with this reason"]],
                ]),
        ],
        types: ["test.Number": ["type": "object", "properties": ["n": ["type": "integer"]]]],
        config: TestKitConfiguration.jsonSchema
    )

    private let context: PluginContext
    private let source: NumberSource?
    private let sink: CollectSink?
    private let lateCaller: LateCaller?
    private let stateCheckPath: String?
    private let holdCheckPath: String?

    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        let configuration = try TestKitConfiguration(config: config)
        source = configuration.numbers.map { NumberSource(context: context, config: $0) }
        sink = try configuration.collect.map { try CollectSink(config: $0, context: context) }
        lateCaller = configuration.lateCalls.map { LateCaller(context: context, path: $0.path) }
        stateCheckPath = configuration.stateCheck?.path
        holdCheckPath = configuration.holdCheck?.path
    }

    /// `numbers` settles (its state file advances only on settlement, so a restart emits again
    /// what was not), and `collect` confirms (a line is written before the `ok`).
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription? {
        if let fifo = config["describe_blocks_on"]?["path"]?.stringValue {
            let descriptor = open(fifo, O_RDONLY)
            if descriptor >= 0 { close(descriptor) }
        }
        return InstanceDescription(settles: ["numbers"], confirms: ["collect"])
    }

    func start() throws {
        source?.start()
        lateCaller?.start()
        if let stateCheckPath { StateCheck(state: context.state).run(writingTo: stateCheckPath) }
        if let holdCheckPath { HoldCheck(context: context).run(writingTo: holdCheckPath) }
    }
    func quiesce() { source?.stop() }
    func stop() {
        source?.stop()
        lateCaller?.stopWithoutWaiting()
    }
    func resume(port: String) { source?.resume() }
    func settled(token: UInt64, outcome: DeliveryOutcome) { source?.settled(token: token, outcome: outcome) }
    func canAccept(on port: String) -> Bool { sink?.canAccept ?? true }

    /// Refuses when the action preferences carry `refuse: "why"`, as a piece missing a
    /// permission would; remembers what it serves in the log.
    func enablePiece(port: String, iiidea: String, preferences: JSONValue) throws {
        if let reason = preferences["refuse"]?.stringValue { throw PluginError(reason) }
        context.log(.info, "piece \(port) enabled for \(iiidea)")
    }

    /// `double`: `{"doubled": 2 × input.count}`, answered from another thread; fails with
    /// `preferences.fail` when set.
    func executePiece(port: String, iiidea: String, input: JSONValue, preferences: JSONValue, completion: PieceCompletion) {
        DispatchQueue.global().async {
            if let reason = preferences["fail"]?.stringValue { return completion.fail(reason) }
            guard let count = input["count"]?.intValue else { return completion.fail("input has no count") }
            completion.succeed(["doubled": .int(count * 2)])
        }
    }

    func disablePiece(port: String, iiidea: String) {
        context.log(.info, "piece \(port) disabled for \(iiidea)")
    }

    func deliver(_ envelope: Envelope, on port: String, delivery: Delivery) {
        lateCaller?.keep(delivery)
        guard let sink else { return delivery.ack(.reject, reason: "no collect config") }
        sink.deliver(envelope, delivery: delivery)
    }
}

/// Emits numbered envelopes and remembers how many leading ones are settled.
final class NumberSource: @unchecked Sendable {
    // `state` is guarded by `lock`; the emitting thread owns `next`.
    private struct State {
        var settled: Set<Int> = []
        var watermark = 0
        var retry: [Int] = []
        var stopped = false
    }

    private let context: PluginContext
    private let count: Int
    private let prefix: String
    private let subjects: Int
    private let statePath: String
    private let lock = NSCondition()
    private var state = State()
    private let room = DispatchSemaphore(value: 0)

    init(context: PluginContext, config: TestKitConfiguration.Numbers) {
        self.context = context
        count = config.count
        prefix = config.prefix
        subjects = config.subjects
        statePath = config.state
        let saved = (try? String(contentsOfFile: statePath, encoding: .utf8)).flatMap {
            Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        state.watermark = saved ?? 0
    }

    func start() {
        let first = state.watermark + 1
        let thread = Thread { [self] in emitAll(from: first) }
        thread.start()
    }

    func stop() {
        lock.lock()
        state.stopped = true
        lock.unlock()
        room.signal()
    }

    func resume() { room.signal() }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return state.stopped
    }

    private func emitAll(from first: Int) {
        var number = first
        while !isStopped {
            lock.lock()
            let retried = state.retry.popLast()
            lock.unlock()
            guard let current = retried ?? (number <= count ? number : nil) else {
                // Everything emitted: wait for retries or the end.
                _ = room.wait(timeout: .now() + .milliseconds(20))
                continue
            }
            let envelope = Envelope(
                id: "\(prefix)-" + String(current).leftPadded(to: 8), type: "test.Number", subject: "s\(current % subjects)",
                body: Array("{\"n\":\(current)}".utf8))
            switch context.emit(envelope, on: "numbers", settleToken: UInt64(current)) {
            case .ok:
                if retried == nil { number += 1 }
            case .full:
                if let retried { requeue(retried) }
                _ = room.wait(timeout: .now() + .milliseconds(50))
            default:
                if let retried { requeue(retried) }
                return
            }
        }
    }

    private func requeue(_ number: Int) {
        lock.lock()
        state.retry.append(number)
        lock.unlock()
    }

    func settled(token: UInt64, outcome: DeliveryOutcome) {
        let number = Int(token)
        lock.lock()
        guard outcome == .ok else {
            state.retry.append(number)
            lock.unlock()
            room.signal()
            return
        }
        state.settled.insert(number)
        var advanced = false
        while state.settled.remove(state.watermark + 1) != nil {
            state.watermark += 1
            advanced = true
        }
        let watermark = state.watermark
        if advanced { try? "\(watermark)\n".write(toFile: statePath, atomically: true, encoding: .utf8) }
        lock.unlock()
    }
}

/// Records accepted envelopes; fails on request.
final class CollectSink: Sendable {
    private let descriptor: Int32
    private let failFirst: Int
    private let reject: Bool
    private let failWhile: String?
    private let delay: Int
    private let maxInFlight: Int
    private let attempts = Mutex<[String: Int]>([:])
    private let inFlight = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "collect")
    private let context: PluginContext

    init(config: TestKitConfiguration.Collect, context: PluginContext) throws {
        self.context = context
        descriptor = open(config.path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard descriptor >= 0 else { throw PluginError("/collect/path: cannot open \(config.path)") }
        failFirst = config.failFirst
        reject = config.reject
        failWhile = config.failWhile
        delay = config.delayMs
        maxInFlight = config.maxInFlight
    }

    var canAccept: Bool { inFlight.load(ordering: .relaxed) < maxInFlight }

    func deliver(_ envelope: Envelope, delivery: Delivery) {
        let attempt = attempts.withLock { counts in
            counts[envelope.id, default: 0] += 1
            return counts[envelope.id] ?? 0
        }
        if reject { return delivery.ack(.reject, reason: "rejected by the test sink") }
        if let failWhile, FileManager.default.fileExists(atPath: failWhile) {
            return delivery.ack(.retry, reason: "test sink down (\(failWhile) exists)")
        }
        if attempt <= failFirst { return delivery.ack(.retry, reason: "test sink fails attempt \(attempt) of \(failFirst)") }
        let line = Array("\(envelope.id) \(envelope.subject)\n".utf8)
        guard delay > 0 else {
            record(line)
            return delivery.ack(.ok)
        }
        inFlight.add(1, ordering: .relaxed)
        queue.asyncAfter(deadline: .now() + .milliseconds(delay)) { [self] in
            record(line)
            inFlight.subtract(1, ordering: .relaxed)
            delivery.ack(.ok)
            context.sinkHasRoom()
        }
    }

    private func record(_ line: [UInt8]) {
        _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
