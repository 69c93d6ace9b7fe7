import Foundation
import SwitchyardABI
import SwitchyardCore
import Synchronization
import Testing

@testable import SwitchyardRuntime

extension RouterTests {
    /// Issue 38's race: an emit that passed the router's `accepting` check just before a graceful
    /// stop pushed into a queue whose worker had ended, and was counted received but never
    /// delivered, while its source had been told OK. A closed queue now takes nothing. Here a
    /// thread emits as fast as it can while the router shuts down, forty times over: every emit
    /// answered OK is delivered, and the route counts as received exactly what was delivered.
    @Test(arguments: 0..<40)
    func anEmitRacingAGracefulStopIsDeliveredOrRefused(round: Int) async throws {
        let source = FakeInstance.register("raceSrc\(round)")
        let sink = FakeInstance.register("raceSnk\(round)")
        let yaml = """
            instances:
              raceSrc\(round): { plugin: fake }
              raceSnk\(round): { plugin: fake }
            routes:
              - { name: race\(round), from: raceSrc\(round).out, to: raceSnk\(round).any }
            """
        let router = Router(plan: try plan(yaml), logger: quietLogger)
        try router.start()
        let accepted = Atomic<Int>(0)
        let emitting = Atomic<Bool>(false)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { finished.signal() }
            let envelope = Envelope(type: "t.A", body: Array(#"{"x":1}"#.utf8))
            while true {
                let status = source.emit(port: "out", envelope)
                emitting.store(true, ordering: .releasing)
                if status == SY_OK {
                    accepted.add(1, ordering: .relaxed)
                } else if status != SY_ERR_FULL {
                    return  // stopped (or anything else: the test then fails below, never hangs)
                }
            }
        }
        // The stop falls while envelopes stream in.
        #expect(await waitUntil { emitting.load(ordering: .acquiring) })
        // Blocking work on a thread of its own, not on the few cooperative threads.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                _ = router.shutdown(drainTimeout: .seconds(10))
                finished.wait()
                done.resume()
            }
        }
        let delivered = sink.deliveries.count
        #expect(accepted.load(ordering: .relaxed) > 0, "the stop fell before any envelope: nothing was raced")
        #expect(delivered == accepted.load(ordering: .relaxed), "answered OK but not delivered: the race is back")
        let route = try #require(router.statistics.routes.first { $0.name == "race\(round)" })
        #expect(route.received == delivered, "received \(route.received), delivered \(delivered)")
    }
}
