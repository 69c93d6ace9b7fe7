import Dispatch
import SwitchyardABI
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardSpool
import Testing

@testable import SwitchyardRuntime

/// An enabled iiidea whose trigger fires before its pieces have answered `piece_enable`.
struct IiideaStartTests {
    /// A source started just before the pieces are asked (a 10 ms timer at start, on a loaded
    /// machine) once had its first envelopes counted as filtered: the iiidea showed "its pieces
    /// are being enabled" and the runner dropped what came. The run now waits for the answer.
    @Test func aTriggerFiringBeforeThePiecesAnswerRunsOnceTheyAccept() async throws {
        let folder = try TemporaryFolder()
        defer { withExtendedLifetime(folder) {} }
        let enableGate = DispatchSemaphore(value: 0)
        let fake = FakeInstance.register("early", enableGate: enableGate)
        let yaml = """
            instances:
              early: { plugin: fake }
            iiideas:
              - id: first
                trigger: { port: early.out }
                service: { piece: script, preferences: { source: "return envelope" } }
                action: { port: early.any }
            """
        let spool = try Spool(path: folder.path + "/spool.db", owner: true)
        let router = Router(plan: try plan(yaml), logger: quietLogger, spool: spool)
        _ = RouterIiideas(router: router)
        let started = DispatchSemaphore(value: 0)
        // start() returns once the pieces answered: it runs beside the test, held in piece_enable.
        DispatchQueue.global().async {
            #expect(throws: Never.self) { try router.start() }
            started.signal()
        }
        #expect(await waitUntil { fake.state.withLock { $0.enableCalls } == 1 })
        #expect(fake.emit(port: "out", Envelope(id: "early-tick", type: "t.A", body: bodyA(x: 1))) == SY_OK)
        // One answer per piece: the trigger's, then the action's.
        enableGate.signal()
        enableGate.signal()
        #expect(await waitUntil { fake.deliveries.contains { $0.port == "any" } }, "the early trigger ran")
        started.wait()
        router.shutdown(drainTimeout: .seconds(5))
        #expect(fake.deliveries.filter { $0.port == "any" }.count == 1)
    }
}
