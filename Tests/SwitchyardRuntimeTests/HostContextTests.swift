import Foundation
import SwitchyardABI
import SwitchyardConfig
import SwitchyardCore
import SwitchyardSpool
import Synchronization
import Testing

@testable import SwitchyardRuntime

/// The testkit plugin (`libtestkit.so`), built next to the test binary.
func loadTestKit() throws -> LoadedPlugin {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    return try PluginLoader.load(file: directory.appendingPathComponent("libtestkit.so").path)
}

/// The testkit plugin, negotiated once per process as the router does (two tests negotiating
/// with the same shared object at once would race on its registration).
let sharedTestKit = Result { try loadTestKit() }

/// The plan of `yaml` with the fake and the testkit plugins.
func planWithTestKit(_ yaml: String) throws -> GraphPlan {
    let (config, loadProblems) = ConfigLoader(environment: [:]).load(sources: [(file: "t.yaml", text: yaml)])
    try #require(loadProblems.isEmpty, "\(loadProblems)")
    let (plan, problems) = GraphValidator(plugins: [try loadFakePlugin(), try sharedTestKit.get()]).validate(config)
    try #require(problems.isEmpty, "\(problems)")
    return try #require(plan)
}

/// A fresh directory under the temporary folder.
func temporaryDirectory(_ name: String) throws -> String {
    let path = NSTemporaryDirectory() + "switchyard-\(name)-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// The `name=answer` lines a testkit check wrote into `path`, once its `done` line is there.
func answers(in path: String, timeout: Duration = .seconds(15)) async -> [String: String]? {
    var text = ""
    guard
        await waitUntil(
            timeout: timeout,
            {
                text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                return text.hasSuffix("done\n")
            })
    else { return nil }
    var answers: [String: String] = [:]
    for line in text.split(separator: "\n") {
        guard let equals = line.firstIndex(of: "=") else { continue }
        answers[String(line[..<equals])] = String(line[line.index(after: equals)...])
    }
    return answers
}

/// Generation-checked host contexts: after an instance's stop() returned, its handle reaches
/// nothing — every call is refused with SY_ERR_STOPPED (or ignored) and counted.
@Suite struct HostContextTests {
    @Test func aVersionOnePluginIsRefusedAfterStopAndCounted() async throws {
        let source = FakeInstance.register("lateV1Src")
        let sink = FakeInstance.register("lateV1Snk")
        let router = Router(
            plan: try plan(
                """
                instances:
                  lateV1Src: { plugin: fake }
                  lateV1Snk: { plugin: fake }
                routes:
                  - { name: late, from: lateV1Src.out, to: lateV1Snk.any }
                """), logger: quietLogger)
        try router.start()
        #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 1))) == SY_OK)
        #expect(await waitUntil { sink.deliveries.count == 1 })
        let context = try #require(source.context)
        #expect(UInt(bitPattern: context) != UInt(bitPattern: Unmanaged.passUnretained(router.instances[0]).toOpaque()))
        router.shutdown(drainTimeout: .seconds(5))

        #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 2))) == SY_ERR_STOPPED)
        sink.ack(sink.deliveries[0].id, outcome: SY_OUTCOME_OK)
        hostAPI().log?(context, SY_LOG_ERROR, sy_bytes(data: nil, length: 0))
        hostAPI().metric?(context, SY_METRIC_COUNTER, sy_bytes(data: nil, length: 0), 1)
        let metrics = router.statistics.pluginMetrics
        #expect(metrics["lateV1Src.plugin_calls_after_stop_total"] == 3)
        #expect(metrics["lateV1Snk.plugin_calls_after_stop_total"] == 1)
    }

    @Test func aPluginThreadCallingAfterStopGetsStoppedAndIsCounted() async throws {
        let directory = try temporaryDirectory("late")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = FakeInstance.register("lateKitSrc")
        let plan = try planWithTestKit(
            """
            spool: { path: "\(directory)/spool.db" }
            instances:
              lateKitSrc: { plugin: fake }
              lateKit: { plugin: testkit, collect: { path: "\(directory)/collected.txt" }, late_calls: { path: "\(directory)/late.txt" } }
            routes:
              - { name: toKit, from: lateKitSrc.out, to: lateKit.collect }
            """)
        let router = Router(plan: plan, logger: quietLogger, spool: try Spool(path: "\(directory)/spool.db"))
        try router.start()
        #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 1))) == SY_OK)
        #expect(await waitUntil { router.statistics.instances.first { $0.name == "lateKit" }?.acknowledged == 1 })
        router.shutdown(drainTimeout: .seconds(5))

        let late = try #require(await answers(in: "\(directory)/late.txt"))
        #expect(late["state_put"] == "stopped")
        #expect(late["emit"] == "stopped")
        #expect(late["ack"] == "sent")
        #expect(late["is_logging"] == "false")
        #expect(late["state_get"] == "stopped")
        // put, emit, ack, log, metric, log_enabled, get: each refused and counted once.
        #expect(router.statistics.pluginMetrics["lateKit.plugin_calls_after_stop_total"] == 7)
        #expect(router.statistics.pluginMetrics["lateKit.late_metric_total"] == nil)
    }

    @Test func retiredSlotsAreReusedWithANewGeneration() throws {
        let table = HostContextTable(capacity: 2)
        let router = Router(plan: try plan("instances: { genA: { plugin: fake } }"), logger: quietLogger)
        let plugin = try loadFakePlugin()
        func instance(_ name: String) -> InstanceRuntime {
            InstanceRuntime(name: name, plugin: plugin, config: .object([:]), logLevel: nil, router: router, logger: quietLogger)
        }
        let first = try #require(table.register(instance("genA"), record: LateCallRecord(name: "genA", router: router)))
        let second = try #require(table.register(instance("genB"), record: LateCallRecord(name: "genB", router: router)))
        #expect(table.register(instance("genC"), record: LateCallRecord(name: "genC", router: router)) == nil)
        #expect(table.withInstance(first, stopped: "", invalid: "") { $0.name } == "genA")

        table.retire(first)
        #expect(table.withInstance(first, stopped: "stopped", invalid: "") { $0.name } == "stopped")
        let third = try #require(table.register(instance("genC"), record: LateCallRecord(name: "genC", router: router)))
        #expect(third != first)
        #expect(table.withInstance(third, stopped: "", invalid: "") { $0.name } == "genC")
        // The first handle names the reused slot's older generation: refused, not counted
        // against the new owner.
        #expect(table.withInstance(first, stopped: "stopped", invalid: "") { $0.name } == "stopped")
        let unattributed = table.unattributedLateCalls.load(ordering: .relaxed)
        #expect(unattributed == 1)
        #expect(router.statistics.pluginMetrics["genA.plugin_calls_after_stop_total"] == 1)
        #expect(table.withInstance(second, stopped: "", invalid: "") { $0.name } == "genB")
        #expect(table.withInstance(OpaquePointer(bitPattern: 7 << 20 | 3), stopped: "stopped", invalid: "invalid") { $0.name } == "invalid")
        #expect(table.withInstance(nil, stopped: "stopped", invalid: "invalid") { $0.name } == "invalid")
    }

    @Test func retireWaitsForTheCallsInProgress() async throws {
        let table = HostContextTable(capacity: 4)
        let router = Router(plan: try plan("instances: { waitA: { plugin: fake } }"), logger: quietLogger)
        let runtime = InstanceRuntime(
            name: "waitA", plugin: try loadFakePlugin(), config: .object([:]), logLevel: nil, router: router, logger: quietLogger)
        let handle = try #require(table.register(runtime, record: LateCallRecord(name: "waitA", router: router)))
        let handleBits = UInt(bitPattern: handle)
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let callEnded = DispatchSemaphore(value: 0)
        let retireEnded = DispatchSemaphore(value: 0)
        let retired = Atomic<Bool>(false)
        Thread {
            _ = table.withInstance(OpaquePointer(bitPattern: handleBits), stopped: false, invalid: false) { _ in
                entered.signal()
                release.wait()
                return true
            }
            callEnded.signal()
        }.start()
        entered.wait()
        Thread {
            table.retire(OpaquePointer(bitPattern: handleBits)!)
            retired.store(true, ordering: .sequentiallyConsistent)
            retireEnded.signal()
        }.start()
        // Once new calls are refused the retire has begun; it cannot end while a call is inside.
        #expect(await waitUntil { table.withInstance(handle, stopped: true, invalid: false) { _ in false } })
        let retiredWhileInside = retired.load(ordering: .sequentiallyConsistent)
        #expect(!retiredWhileInside)
        release.signal()
        callEnded.wait()
        #expect(retireEnded.wait(timeout: .now() + 10) == .success)
        let retiredAfterwards = retired.load(ordering: .sequentiallyConsistent)
        #expect(retiredAfterwards)
    }
}
