import Foundation
import SwitchyardABI
import SwitchyardCore
import SwitchyardSpool
import Testing

@testable import SwitchyardRuntime

/// A full sink whose plugin says when it has room again (ABI `sink_ready`) is tried again
/// then, not on a timer. The routers here wait an hour without a word (`sinkSafetyPause`), so
/// a delivery that comes within the test's bound came from the word.
@Suite struct SinkReadyTests {
    /// Calls the host's `sink_ready` for `fake`, as its plugin would (any port).
    private static func sinkReady(_ fake: FakeInstance) {
        let offer = HostTable.offer.pointer.pointee
        guard let versions = offer.versions, let tables = offer.host_tables,
            let index = (0..<Int(offer.version_count)).first(where: { versions[$0] == SY_ABI_VERSION_2 }), let table = tables[index]
        else {
            preconditionFailure("the host offers no version 2 table")
        }
        table.assumingMemoryBound(to: sy_host_api_v2.self).pointee.sink_ready(fake.context, sy_bytes(data: nil, length: 0))
    }

    private static func yaml(_ name: String, delivery: String = "at-most-once", spool: String? = nil) -> String {
        """
        \(spool.map { "spool: { path: \"\($0)\" }" } ?? "")
        instances:
          \(name)Src: { plugin: fake }
          \(name)Snk: { plugin: fake }
        routes:
          - { name: r, from: \(name)Src.out, to: \(name)Snk.any, delivery: \(delivery) }
        """
    }

    /// Starts a router (waiting an hour for a word) whose route `r` goes from `NAME`Src to
    /// `NAME`Snk, which answers "full", and emits one envelope; the sink and the router.
    private static func routeToAFullSink(_ name: String, spool: Spool? = nil) throws -> (FakeInstance, Router) {
        let source = FakeInstance.register(name + "Src")
        let sink = FakeInstance.register(name + "Snk")
        sink.answersFull.store(true, ordering: .relaxed)
        let yaml = Self.yaml(name, delivery: spool == nil ? "at-most-once" : "at-least-once", spool: spool?.path)
        let router = Router(
            plan: try plan(yaml), logger: quietLogger, spool: spool, routeThreads: 1, sinkSafetyPause: .seconds(3600))
        try router.start()
        #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 1))) == SY_OK)
        return (sink, router)
    }

    /// Makes the sink speak up while it is still full: tried again at once (and refused); from
    /// then on the route waits for its next word.
    private static func speakUp(_ sink: FakeInstance) async {
        #expect(await waitUntil { sink.state.withLock { $0.refusedAsFull.count } >= 1 })
        let refused = sink.state.withLock { $0.refusedAsFull.count }
        sinkReady(sink)
        #expect(await waitUntil { sink.state.withLock { $0.refusedAsFull.count } > refused })
        #expect(sink.deliveries.isEmpty)
    }

    /// Gives the sink room and says so: the delivery comes.
    private static func makeRoom(_ sink: FakeInstance) async {
        sink.answersFull.store(false, ordering: .relaxed)
        sinkReady(sink)
        #expect(await waitUntil { sink.deliveries.count == 1 })
    }

    @Test func aPooledRouteTriesAFullSinkAgainWhenItSaysItHasRoom() async throws {
        let (sink, router) = try Self.routeToAFullSink("readyPool")
        defer { router.shutdown(drainTimeout: .seconds(5)) }
        await Self.speakUp(sink)
        await Self.makeRoom(sink)
        let refusedIDs = Set(sink.state.withLock { $0.refusedAsFull })
        #expect(refusedIDs == [try #require(sink.deliveries.first).id])
    }

    @Test func anAtLeastOnceRouteTriesAFullSinkAgainWhenItSaysItHasRoom() async throws {
        let folder = try TemporaryFolder()
        defer { withExtendedLifetime(folder) {} }
        let (sink, router) = try Self.routeToAFullSink("readyAlo", spool: try Spool(path: folder.path + "/spool.db", owner: true))
        defer { router.shutdown(drainTimeout: .seconds(5)) }
        await Self.speakUp(sink)
        await Self.makeRoom(sink)
    }

    @Test func aSinkThatSpokeUpAndThenAnswersStoppedIsTriedOnTheTimer() async throws {
        let (sink, router) = try Self.routeToAFullSink("readyStopped")
        defer { router.shutdown(drainTimeout: .seconds(5)) }
        await Self.speakUp(sink)
        // "Stopped" is followed by no word: tried again on the timer, not after the hour.
        sink.answersStopped.store(true, ordering: .relaxed)
        sink.answersFull.store(false, ordering: .relaxed)
        Self.sinkReady(sink)
        #expect(await waitUntil { sink.state.withLock { $0.refusedAsStopped } >= 3 })
        sink.answersStopped.store(false, ordering: .relaxed)
        #expect(await waitUntil { sink.deliveries.count == 1 })
    }

    @Test func shutdownEndsTheWaitOfARouteWhoseSinkSaidItHasRoomBefore() async throws {
        let (sink, router) = try Self.routeToAFullSink("readyStop")
        await Self.speakUp(sink)
        // The route now waits an hour for a word; stopping the instance ends the wait, so the
        // drain gives the envelope up and shutdown returns.
        #expect(router.shutdown(drainTimeout: .milliseconds(200)) >= 1)
        #expect(sink.state.withLock { $0.stopped })
    }

    /// Waits an hour at most on a thread of its own; true once the wait has ended.
    private static func waitOnAThread(_ room: SinkRoom, after seen: UInt64) -> Mutex<Bool> {
        let ended = Mutex(false)
        Thread {
            room.wait(after: seen, atMost: .seconds(3600))
            ended.withLock { $0 = true }
        }.start()
        return ended
    }

    @Test func aPluginKitSinkSaysItHasRoomWhenADeliveryEnds() async throws {
        // testkit's collect sink takes one delivery at a time (`max_in_flight: 1`) and ends it
        // after 20 ms; the SDK marks each refusal and the sink's `sinkHasRoom()` tells the router.
        let directory = try temporaryDirectory("ready")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = FakeInstance.register("readyKitSrc")
        let collected = "\(directory)/collected.txt"
        let plan = try planWithTestKit(
            """
            instances:
              readyKitSrc: { plugin: fake }
              readyKit: { plugin: testkit, collect: { path: "\(collected)", delay_ms: 20, max_in_flight: 1 } }
            routes:
              - { name: r, from: readyKitSrc.out, to: readyKit.collect }
            """)
        let router = Router(plan: plan, logger: quietLogger, routeThreads: 1, sinkSafetyPause: .seconds(3600))
        try router.start()
        defer { router.shutdown(drainTimeout: .seconds(5)) }
        for x in 1...4 { #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "n\(x)", body: bodyA(x: x))) == SY_OK) }
        // Refused while the one before is in flight, each: without the word, the third and the
        // fourth would wait an hour.
        #expect(await waitUntil { ((try? String(contentsOfFile: collected, encoding: .utf8)) ?? "").split(separator: "\n").count == 4 })
        let subjects = ((try? String(contentsOfFile: collected, encoding: .utf8)) ?? "").split(separator: "\n").map {
            $0.split(separator: " ").last.map(String.init)
        }
        #expect(subjects == ["n1", "n2", "n3", "n4"])
        // The deliveries after the first word waited for the next (an hour on the timer).
        #expect(router.instances.first { $0.name == "readyKit" }?.sinkRoom.pluginSpeaksUp == true)
        #expect(router.routes.first?.counters.sinkFull.load(ordering: .relaxed) ?? 0 >= 3)
    }

    @Test func aWaitEndsOnAWordThatCameAfterTheCountWasNoted() async throws {
        let room = SinkRoom(safetyPause: .seconds(3600))
        let seen = room.count
        room.signal(fromPlugin: true)
        // The word came between the try and the wait: the wait does not start.
        let early = Self.waitOnAThread(room, after: seen)
        #expect(await waitUntil { early.withLock { $0 } })
        // The word comes while it waits (or before it began to: either way it ends).
        let late = Self.waitOnAThread(room, after: room.count)
        room.signal(fromPlugin: true)
        #expect(await waitUntil { late.withLock { $0 } })
        #expect(room.pause(after: nil) == .seconds(3600))
        #expect(room.pause(after: nil, timerOnly: true) == .milliseconds(1))
    }

    @Test func aSinkThatNeverSaysItHasRoomIsTriedOnATimer() {
        let room = SinkRoom(safetyPause: .seconds(3600))
        #expect(room.pause(after: nil) == .milliseconds(1))
        #expect(room.pause(after: .milliseconds(1)) == .milliseconds(2))
        #expect(room.pause(after: .milliseconds(40)) == .milliseconds(50))
        room.signal(fromPlugin: false)  // the instance stopping is not the plugin's word
        #expect(room.pause(after: .milliseconds(50)) == .milliseconds(50))
    }
}
