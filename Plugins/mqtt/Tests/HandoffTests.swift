import Testing

@testable import MQTTPlugin

/// The hand-over of publishes and settlements to a link's event loop: batches wake the loop
/// once, and a publish made on the loop itself goes behind those still waiting, never before.
struct HandoffTests {
    @Test func onlyTheFirstItemOfABatchAsksForAWakeUp() {
        let handoff = Handoff<Int>()
        #expect(handoff.add(1))
        #expect(!handoff.add(2))
        var taken: [Int] = []
        handoff.takeAll(into: &taken)
        #expect(taken == [1, 2])
        taken.removeAll(keepingCapacity: true)
        #expect(handoff.add(3), "a new batch after the last was taken")
    }

    @Test func anItemOnTheLoopGoesBehindThoseWaitingAndIsLeftToTheCallerWhenNoneWaits() {
        let handoff = Handoff<Int>()
        #expect(!handoff.addBehindWaiting(1), "none waits: the caller takes it at once")
        var taken: [Int] = []
        handoff.takeAll(into: &taken)
        #expect(taken.isEmpty, "nothing was added")

        #expect(handoff.add(2))
        #expect(handoff.addBehindWaiting(3))
        handoff.takeAll(into: &taken)
        #expect(taken == [2, 3], "in the order they came")
    }
}
