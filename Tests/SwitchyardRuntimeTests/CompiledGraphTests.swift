import SwitchyardABI
import SwitchyardCore
import Testing

@testable import SwitchyardRuntime

/// A reload swaps in a new ``CompiledGraph`` whole: a snapshot taken before stays the graph it
/// was, the new one holds exactly the new plan's instances and routes, and the route table
/// keeps a retired route for its late acknowledgements.
@Suite struct CompiledGraphTests {
    @Test func aReloadSwapsInANewGraphAndLeavesTheOldSnapshotAsItWas() async throws {
        let source = FakeInstance.register("graphSrc")
        let sink = FakeInstance.register("graphSnk")
        let added = FakeInstance.register("graphAdded")
        let before = """
            instances:
              graphSrc: { plugin: fake }
              graphSnk: { plugin: fake }
            routes:
              - { name: first, from: graphSrc.out, to: graphSnk.any }
            """
        let after = """
            instances:
              graphSrc: { plugin: fake }
              graphAdded: { plugin: fake }
            routes:
              - { name: second, from: graphSrc.out, to: graphAdded.any }
            """
        try await withRouter(before) { router in
            let old = router.graph
            #expect(old.instances.map(\.name) == ["graphSrc", "graphSnk"])
            #expect(old.routes.map(\.name) == ["first"])
            let firstRoute = try #require(old.routes.first)

            let newPlan = try plan(after)
            let summary = router.reload(to: newPlan, drainTimeout: .seconds(5))
            #expect(summary.isApplied, "\(summary)")

            let new = router.graph
            #expect(new !== old)
            #expect(new.plan.instances.map(\.name) == ["graphSrc", "graphAdded"])
            #expect(new.instances.map(\.name) == new.plan.instances.map(\.name))
            #expect(new.routes.map(\.name) == ["second"])
            // The unchanged source is the same running instance in both graphs.
            #expect(new.instance(named: "graphSrc") === old.instance(named: "graphSrc"))
            // The snapshot taken before is untouched by the swap.
            #expect(old.plan.instances.map(\.name) == ["graphSrc", "graphSnk"])
            #expect(old.instances.map(\.name) == ["graphSrc", "graphSnk"])
            #expect(old.routes.map(\.name) == ["first"])
            // A retired route keeps its place in the route table.
            #expect(router.routeTable[firstRoute.index] === firstRoute)
            #expect(router.routeTable[-1] == nil)
            #expect(router.routeTable[Int.max] == nil)

            #expect(source.emit(port: "out", Envelope(type: "t.A", subject: "s", body: bodyA(x: 1))) == SY_OK)
            #expect(await waitUntil { added.deliveries.count == 1 })
            #expect(sink.deliveries.isEmpty)
            #expect(sink.state.withLock { $0.stopped })
        }
    }
}
