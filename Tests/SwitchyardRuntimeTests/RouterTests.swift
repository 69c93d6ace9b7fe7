import Dispatch
import SwitchyardABI
import SwitchyardBridge
import SwitchyardCore
import Testing

@testable import SwitchyardRuntime

/// Starts a router for `yaml`, runs `body`, and shuts the router down.
private func routeStatistics(_ router: Router, _ name: String) -> RouterStatistics.Route? {
    router.statistics.routes.first { $0.name == name }
}

private func instanceStatistics(_ router: Router, _ name: String) -> RouterStatistics.Instance? {
    router.statistics.instances.first { $0.name == name }
}

// Every test uses its own instance names: the fake plugin keeps per-name state and tests
// run in parallel.
@Suite struct RouterTests {
    @Test func emitReachesTheSinkWithTrace() async throws {
        let source = FakeInstance.register("emitSrc")
        let sink = FakeInstance.register("emitSnk")
        let yaml = """
            instances:
              emitSrc: { plugin: fake, n: 3 }
              emitSnk: { plugin: fake }
            routes:
              - { name: pass, from: emitSrc.out, to: emitSnk.any }
            """
        try await withRouter(yaml) { router in
            #expect(source.state.withLock { $0.started })
            #expect(source.state.withLock { $0.config } == #"{"n":3}"#)
            let sent = Envelope(
                id: "", type: "t.A", source: "ignored", subject: "s/1", time: 0, headers: ["h.x": "1"],
                body: bodyA(x: 1), trace: ["upstream"]
            )
            #expect(source.emit(port: "out", sent) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == 1 })
            let delivery = try #require(sink.deliveries.first)
            #expect(delivery.port == "any")
            #expect(delivery.envelope.trace == ["upstream", "emitSrc"])
            #expect(delivery.envelope.source == "emitSrc.out")
            #expect(delivery.envelope.type == "t.A")
            #expect(delivery.envelope.subject == "s/1")
            #expect(delivery.envelope.headers["h.x"] == "1")
            #expect(delivery.envelope.body == bodyA(x: 1))
            #expect(delivery.envelope.id.count == 26)
            #expect(delivery.envelope.time > 0)
            #expect(await waitUntil { instanceStatistics(router, "emitSnk")?.acknowledged == 1 })
            // The sink acknowledges inside its deliver call, before the route counts the dispatch.
            #expect(await waitUntil { routeStatistics(router, "pass")?.sent == 1 })
            let route = try #require(routeStatistics(router, "pass"))
            #expect(route.received == 1)
            #expect(instanceStatistics(router, "emitSrc")?.emitted == 1)
        }
        #expect(source.state.withLock { $0.quiesced && $0.stopped })
        #expect(sink.state.withLock { $0.stopped })
    }

    @Test func emitKeepsGivenIdAndTime() async throws {
        let source = FakeInstance.register("idSrc")
        let sink = FakeInstance.register("idSnk")
        let yaml = """
            instances:
              idSrc: { plugin: fake }
              idSnk: { plugin: fake }
            routes:
              - { from: idSrc.out, to: idSnk.any }
            """
        try await withRouter(yaml) { _ in
            #expect(source.emit(port: "out", Envelope(id: "my-id", type: "t.A", time: 42, body: bodyA(x: 1))) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == 1 })
            #expect(sink.deliveries.first?.envelope.id == "my-id")
            #expect(sink.deliveries.first?.envelope.time == 42)
        }
    }

    @Test func emitRefusals() async throws {
        let source = FakeInstance.register("refSrc")
        FakeInstance.register("refSnk")
        let yaml = """
            instances:
              refSrc: { plugin: fake, extra: {} }
              refSnk: { plugin: fake }
            routes:
              - { from: refSrc.out, to: refSnk.any }
            """
        try await withRouter(yaml) { router in
            #expect(source.emit(port: "nope", Envelope(type: "t.A")) == SY_ERR_UNKNOWN_PORT)
            #expect(source.emit(port: "any", Envelope(type: "t.A")) == SY_ERR_UNKNOWN_PORT)
            #expect(source.emit(port: "out", Envelope(type: "")) == SY_ERR_INVALID)
            // A source port no route reads from takes the envelope and counts it.
            #expect(source.emit(port: "opt", Envelope(type: "t.A")) == SY_OK)
            #expect(instanceStatistics(router, "refSrc")?.unrouted == 1)
            #expect(instanceStatistics(router, "refSrc")?.emitted == 0)
            #expect(instanceStatistics(router, "refSrc")?.invalid == 3)
            // With nothing to deliver, a settle token is settled at once.
            #expect(source.emit(port: "opt", Envelope(type: "t.A"), settleToken: 9) == SY_OK)
            #expect(source.settled == [FakeInstance.Settled(token: 9, outcome: SY_OUTCOME_OK)])
        }
    }

    @Test func whenFilterIsCounted() async throws {
        let source = FakeInstance.register("whenSrc")
        let sink = FakeInstance.register("whenSnk")
        let yaml = """
            instances:
              whenSrc: { plugin: fake }
              whenSnk: { plugin: fake }
            routes:
              - { name: only-ones, from: whenSrc.out, to: whenSnk.any, when: body.x == 1 }
            """
        try await withRouter(yaml) { router in
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "no", body: bodyA(x: 2))) == SY_OK)
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "yes", body: bodyA(x: 1))) == SY_OK)
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "no", body: bodyA(x: 3))) == SY_OK)
            #expect(
                await waitUntil {
                    guard let route = routeStatistics(router, "only-ones") else { return false }
                    return route.filtered + route.sent == 3
                })
            let route = try #require(routeStatistics(router, "only-ones"))
            #expect(route.received == 3)
            #expect(route.filtered == 2)
            #expect(route.sent == 1)
            #expect(sink.deliveries.map(\.envelope.subject) == ["yes"])
        }
    }

    @Test func transformIsAppliedBeforeDelivery() async throws {
        let source = FakeInstance.register("mapSrc")
        let sink = FakeInstance.register("mapSnk", autoAck: true)
        let yaml = """
            instances:
              mapSrc: { plugin: fake }
              mapSnk: { plugin: fake }
            routes:
              - { from: mapSrc.out, to: mapSnk.in, map: { z: "{{body.y}}-{{body.x}}" } }
            """
        try await withRouter(yaml) { _ in
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 5, y: "v"))) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == 1 })
            let delivered = try #require(sink.deliveries.first)
            #expect(delivered.port == "in")
            #expect(delivered.envelope.type == "t.B")
            #expect(delivered.envelope.decodedBody() == ["z": "v-5"])
            #expect(delivered.envelope.trace == ["mapSrc"])
        }
    }

    @Test func dropOldestCountsDrops() async throws {
        let gate = DispatchSemaphore(value: 0)
        let source = FakeInstance.register("dropSrc")
        let sink = FakeInstance.register("dropSnk", gate: gate)
        let yaml = """
            instances:
              dropSrc: { plugin: fake }
              dropSnk: { plugin: fake }
            routes:
              - name: lossy
                from: dropSrc.out
                to: dropSnk.any
                queue: { size: 1, on_full: drop_oldest }
            """
        try await withRouter(yaml) { router in
            defer { for _ in 0..<3 { gate.signal() } }
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "1", body: bodyA(x: 1))) == SY_OK)
            // The worker holds envelope 1 in the stalled sink; the queue (size 1) is empty again.
            #expect(await waitUntil { sink.entered == 1 })
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "2", body: bodyA(x: 2))) == SY_OK)
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "3", body: bodyA(x: 3))) == SY_OK)
            #expect(routeStatistics(router, "lossy")?.droppedFull == 1)
            #expect(routeStatistics(router, "lossy")?.queued == 1)
            gate.signal()
            gate.signal()
            #expect(await waitUntil { sink.deliveries.count == 2 })
            #expect(sink.deliveries.map(\.envelope.subject) == ["1", "3"])
            let route = try #require(routeStatistics(router, "lossy"))
            #expect(route.received == 3)
            #expect(route.droppedFull == 1)
            #expect(instanceStatistics(router, "dropSrc")?.refusedFull == 0)
        }
    }

    @Test func blockRefusesWhenFullAndResumesLater() async throws {
        let gate = DispatchSemaphore(value: 0)
        let source = FakeInstance.register("blockSrc")
        let sink = FakeInstance.register("blockSnk", gate: gate)
        let yaml = """
            instances:
              blockSrc: { plugin: fake }
              blockSnk: { plugin: fake }
            routes:
              - name: strict
                from: blockSrc.out
                to: blockSnk.any
                queue: { size: 1, on_full: block }
            """
        try await withRouter(yaml) { router in
            defer { for _ in 0..<4 { gate.signal() } }
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "1", body: bodyA(x: 1))) == SY_OK)
            #expect(await waitUntil { sink.entered == 1 })
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "2", body: bodyA(x: 2))) == SY_OK)
            // The queue holds envelope 2 and the worker is stuck on 1: no room.
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "3", body: bodyA(x: 3))) == SY_ERR_FULL)
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "3", body: bodyA(x: 3))) == SY_ERR_FULL)
            #expect(instanceStatistics(router, "blockSrc")?.refusedFull == 2)
            #expect(routeStatistics(router, "strict")?.received == 2)
            #expect(source.resumes.isEmpty)
            gate.signal()
            // Room frees up once the worker takes envelope 2: the source is told, once.
            #expect(await waitUntil { source.resumes == ["out"] })
            gate.signal()
            #expect(await waitUntil { sink.deliveries.count == 2 })
            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "4", body: bodyA(x: 4))) == SY_OK)
            gate.signal()
            #expect(await waitUntil { sink.deliveries.count == 3 })
            #expect(sink.deliveries.map(\.envelope.subject) == ["1", "2", "4"])
            #expect(source.resumes == ["out"])
        }
    }

    @Test func settleTokenIsSettledOnceAfterEverySinkAcks() async throws {
        let source = FakeInstance.register("setSrc")
        let first = FakeInstance.register("setSnk1", autoAck: false)
        let second = FakeInstance.register("setSnk2", autoAck: false)
        let yaml = """
            instances:
              setSrc: { plugin: fake }
              setSnk1: { plugin: fake }
              setSnk2: { plugin: fake }
            routes:
              - { from: setSrc.out, to: [setSnk1.any, setSnk2.any] }
            """
        try await withRouter(yaml) { router in
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 1)), settleToken: 42) == SY_OK)
            #expect(await waitUntil { first.deliveries.count == 1 && second.deliveries.count == 1 })
            #expect(source.settled.isEmpty)
            first.ack(try #require(first.deliveries.first).id, outcome: SY_OUTCOME_OK)
            #expect(instanceStatistics(router, "setSnk1")?.acknowledged == 1)
            #expect(source.settled.isEmpty, "one sink has not acknowledged yet")
            second.ack(try #require(second.deliveries.first).id, outcome: SY_OUTCOME_OK)
            #expect(await waitUntil { !source.settled.isEmpty })
            #expect(source.settled == [FakeInstance.Settled(token: 42, outcome: SY_OUTCOME_OK)])

            // The worst outcome wins.
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 2)), settleToken: 43) == SY_OK)
            #expect(await waitUntil { first.deliveries.count == 2 && second.deliveries.count == 2 })
            first.ack(first.deliveries[1].id, outcome: SY_OUTCOME_REJECT)
            second.ack(second.deliveries[1].id, outcome: SY_OUTCOME_OK)
            #expect(await waitUntil { source.settled.count == 2 })
            #expect(source.settled.last == FakeInstance.Settled(token: 43, outcome: SY_OUTCOME_REJECT))
            #expect(instanceStatistics(router, "setSnk1")?.failed == 1)
        }
        #expect(source.settled.count == 2)
    }

    @Test func settleTokenOfAFilteredEnvelopeIsSettled() async throws {
        let source = FakeInstance.register("setFSrc")
        let sink = FakeInstance.register("setFSnk")
        let yaml = """
            instances:
              setFSrc: { plugin: fake }
              setFSnk: { plugin: fake }
            routes:
              - { from: setFSrc.out, to: setFSnk.any, when: body.x == 1 }
            """
        try await withRouter(yaml) { _ in
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 9)), settleToken: 7) == SY_OK)
            #expect(await waitUntil { source.settled.count == 1 })
            #expect(source.settled == [FakeInstance.Settled(token: 7, outcome: SY_OUTCOME_OK)])
            #expect(sink.deliveries.isEmpty)
        }
    }

    @Test func loopIsStoppedUnlessAllowed() async throws {
        let source = FakeInstance.register("loopSrc")
        let sink = FakeInstance.register("loopSnk")
        let yaml = """
            instances:
              loopSrc: { plugin: fake }
              loopSnk: { plugin: fake }
            routes:
              - { name: guarded, from: loopSrc.out, to: loopSnk.any }
              - { name: open, from: loopSrc.out, to: loopSnk.in, map: { z: "{{body.y}}" }, loop: allow }
            """
        try await withRouter(yaml) { router in
            // The envelope says it already passed through loopSnk.
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: 1), trace: ["loopSnk"])) == SY_OK)
            #expect(await waitUntil { routeStatistics(router, "guarded")?.droppedLoop == 1 && sink.deliveries.count == 1 })
            #expect(sink.deliveries.map(\.port) == ["in"])
            #expect(routeStatistics(router, "open")?.droppedLoop == 0)
        }
    }

    @Test func pluginMetricsAreRecorded() async throws {
        let source = FakeInstance.register("metSrc")
        let yaml = """
            instances:
              metSrc: { plugin: fake }
            """
        try await withRouter(yaml) { router in
            let host = hostAPI()
            let context = source.context
            var counter = "hits"
            counter.withUTF8 { name in
                host.metric?(context, SY_METRIC_COUNTER, sy_bytes(name), 2)
                host.metric?(context, SY_METRIC_COUNTER, sy_bytes(name), 3)
            }
            var gauge = "level"
            gauge.withUTF8 { name in
                host.metric?(context, SY_METRIC_GAUGE, sy_bytes(name), 7)
                host.metric?(context, SY_METRIC_GAUGE, sy_bytes(name), 4)
            }
            let metrics = router.statistics.pluginMetrics
            #expect(metrics["metSrc.hits"] == 5)
            #expect(metrics["metSrc.level"] == 4)
        }
    }
}
