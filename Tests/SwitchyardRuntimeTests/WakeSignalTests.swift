import Foundation
import Synchronization
import Testing

@testable import SwitchyardRuntime

/// The event a thread waits on for a count kept elsewhere, instead of polling it: here a reload
/// waiting for a removed instance's last acknowledgement (a drain and a full sink's route wait
/// the same way).
struct WakeSignalTests {
    @Test func aWaiterWakesWhenTheLastDeliveryIsAcknowledged() {
        let signal = WakeSignal()
        let inFlight = Atomic<Int>(3)
        let acknowledger = Thread {
            for _ in 0..<3 {
                if inFlight.subtract(1, ordering: .sequentiallyConsistent).newValue == 0 { signal.signal() }
            }
        }
        acknowledger.start()
        // True only when the count reached zero; the deadline would have answered false.
        let drained = signal.wait(until: .now + .seconds(60)) { inFlight.load(ordering: .sequentiallyConsistent) > 0 }
        #expect(drained)
        #expect(inFlight.load(ordering: .relaxed) == 0)
    }

    @Test func aWaiterGivesUpAtTheDeadline() {
        let signal = WakeSignal()
        let started = ContinuousClock.now
        #expect(!signal.wait(until: .now + .milliseconds(50)) { true })
        #expect(ContinuousClock.now - started >= .milliseconds(50))
    }

    @Test func nothingToWaitForReturnsAtOnce() {
        #expect(WakeSignal().wait(until: .now) { false })
    }
}
