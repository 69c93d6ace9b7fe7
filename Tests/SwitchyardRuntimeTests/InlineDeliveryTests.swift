import Foundation
import SwitchyardABI
import SwitchyardCore
import Synchronization
import Testing

@testable import SwitchyardRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// A route whose sinks all deliver inline (the description's `delivers_inline`) runs on the
/// emitting thread while it is idle; anything else, or a full sink, goes to the route workers.
@Suite struct InlineDeliveryTests {
    /// `src` (the fake) feeds `SINK` (the describing plugin, describing itself with DESCRIBE)
    /// through route `r`.
    private static func graph(sink: String, describe: String, route: String = "") -> String {
        """
        instances:
          \(sink)Src: { plugin: fake }
          \(sink): { plugin: desc, describe: \(describe) }
        routes:
          - { name: r, from: \(sink)Src.out, to: \(sink).in \(route) }
        """
    }

    private static func plugins() throws -> [LoadedPlugin] { [try loadFakePlugin(), try loadDescribingPlugin()] }

    @Test func anIdleRouteToAnInlineSinkDeliversBeforeTheEmitReturns() async throws {
        let source = FakeInstance.register("inlNowSrc")
        let sink = FakeInstance.register("inlNow")
        try await withRouter(Self.graph(sink: "inlNow", describe: "{ delivers_inline: [in] }"), plugins: Self.plugins()) { router in
            for x in 1...3 {
                let emitting = pthread_self()
                #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK)
                // No waiting: the emit itself delivered, on this thread.
                let delivered = sink.deliveries
                #expect(delivered.count == x)
                #expect(delivered.last.map { pthread_equal($0.thread, emitting) != 0 } == true)
            }
            #expect(router.statistics.routes.first?.sent == 3)
            // Nothing needed a route worker.
            #expect(router.workerPool.threadCount == 0)
        }
    }

    @Test func aSinkThatDoesNotSaySoIsDeliveredByARouteWorker() async throws {
        let source = FakeInstance.register("inlNoSrc")
        let sink = FakeInstance.register("inlNo")
        try await withRouter(Self.graph(sink: "inlNo", describe: "{}"), plugins: Self.plugins()) { router in
            let emitting = pthread_self()
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 1))) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == 1 })
            #expect(sink.deliveries.first.map { pthread_equal($0.thread, emitting) == 0 } == true)
            #expect(router.workerPool.threadCount == 1)
        }
    }

    @Test func aRouteWithAScriptIsDeliveredByARouteWorker() async throws {
        let source = FakeInstance.register("inlLuaSrc")
        let sink = FakeInstance.register("inlLua")
        let yaml = Self.graph(sink: "inlLua", describe: "{ delivers_inline: [in] }", route: ", script: 'return envelope'")
        try await withRouter(yaml, plugins: Self.plugins()) { router in
            let emitting = pthread_self()
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 1))) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == 1 })
            #expect(sink.deliveries.first.map { pthread_equal($0.thread, emitting) == 0 } == true)
        }
    }

    @Test func aFullInlineSinkIsRetriedByARouteWorkerWithoutHoldingTheEmitter() async throws {
        let source = FakeInstance.register("inlFullSrc")
        let sink = FakeInstance.register("inlFull")
        sink.answersFull.store(true, ordering: .relaxed)
        try await withRouter(Self.graph(sink: "inlFull", describe: "{ delivers_inline: [in] }"), plugins: Self.plugins()) { router in
            let emitting = pthread_self()
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 1))) == SY_OK)
            // The emit tried, was told "full" and returned; the retries are the pool's (its
            // first may already have come: it is due 1 ms later).
            #expect(sink.state.withLock { $0.refusedAsFull.count } >= 1)
            #expect(sink.deliveries.isEmpty)
            #expect(await waitUntil { sink.state.withLock { $0.refusedAsFull.count } >= 2 })
            sink.answersFull.store(false, ordering: .relaxed)
            #expect(await waitUntil { sink.deliveries.count == 1 })
            let delivery = try #require(sink.deliveries.first)
            #expect(pthread_equal(delivery.thread, emitting) == 0)
            // Tried again with the delivery id it was refused with.
            #expect(sink.state.withLock { $0.refusedAsFull.allSatisfy { $0 == delivery.id } })
            #expect(router.workerPool.threadCount == 1)
        }
    }

    @Test func anEmitThatFindsTheInlineRouteBusyQueuesBehindTheDeliveryInHand() async throws {
        let gate = DispatchSemaphore(value: 0)
        let source = FakeInstance.register("inlBusySrc")
        let sink = FakeInstance.register("inlBusy", gate: gate)
        try await withRouter(Self.graph(sink: "inlBusy", describe: "{ delivers_inline: [in] }"), plugins: Self.plugins()) { router in
            // The first emit delivers on its own thread, past the queue, and stalls in the sink.
            let firstStatus = Atomic<Int32>(SY_ERR_FAILED)
            let firstReturned = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                firstStatus.store(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 1))), ordering: .relaxed)
                firstReturned.signal()
            }
            #expect(await waitUntil { sink.state.withLock { $0.entered } == 1 })
            // The route is busy: the second emit queues behind it and returns at once.
            let emitting = pthread_self()
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 2))) == SY_OK)
            #expect(sink.state.withLock { $0.entered } == 1)
            #expect(router.statistics.routes.first?.queued == 1)
            gate.signal()
            gate.signal()
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread {
                    firstReturned.wait()
                    done.resume()
                }
            }
            #expect(firstStatus.load(ordering: .relaxed) == SY_OK)
            // The thread that held the route delivered the queued one too before it let go:
            // in order, once each, and no route worker was needed.
            let deliveries = sink.deliveries
            #expect(deliveries.map(\.envelope.body) == [bodyA(x: 1), bodyA(x: 2)])
            #expect(deliveries.count == 2 && pthread_equal(deliveries[0].thread, deliveries[1].thread) != 0)
            #expect(deliveries.last.map { pthread_equal($0.thread, emitting) == 0 } == true)
            #expect(router.workerPool.threadCount == 0)
            #expect(router.statistics.routes.first.map { $0.sent == 2 && $0.queued == 0 } == true)
        }
    }

    @Test func aThreadDeliversInlineOneLevelDeep() {
        #expect(InlineDelivery.enter())
        #expect(!InlineDelivery.enter())
        InlineDelivery.leave()
        #expect(InlineDelivery.enter())
        InlineDelivery.leave()
    }
}
