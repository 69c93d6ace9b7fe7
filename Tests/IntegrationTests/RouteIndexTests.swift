import Foundation
import Testing

@testable import IntegrationSupport

/// Routes from one source whose conditions the router looks up (`subject == "s3"`,
/// `startsWith`) rather than evaluates one by one: each envelope reaches exactly the routes
/// whose condition holds, and every route's totals read as if it had evaluated every envelope.
@Suite(.timeLimit(.minutes(2)))
struct RouteIndexTests {
    @Test func indexedRoutesGetWhatTheirConditionsHoldForAndCountTheRestAsFiltered() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("testkit")
        let equalityRoutes = (0..<12).map { index in
            "  - { name: only-s\(index), from: source.numbers, to: sink.collect, when: 'subject == \"s\(index)\"' }"
        }
        try sandbox.writeRoutes(
            """
            instances:
              source: { plugin: testkit, numbers: { count: 120, subjects: 12, state: "\(sandbox.path("source.state"))" } }
              sink:   { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))" } }
            routes:
            \(equalityRoutes.joined(separator: "\n"))
              - { name: s1-family, from: source.numbers, to: sink.collect, when: 'subject startsWith "s1"' }
              - { name: big, from: source.numbers, to: sink.collect, when: 'body.n > 1000000' }
              - { name: everything, from: source.numbers, to: sink.collect }
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox)
        // 12 × 10 + 30 (s1, s10, s11) + 0 + 120.
        await router.waitUntil("every delivery collected") { sandbox.lines(of: "collected.txt").count == 270 }
        var metrics = ""
        await router.waitUntil("every route's totals") {
            metrics = (try? HTTPExchange.send("http://\(admin)/metrics").body) ?? ""
            return MetricsExposition.sample("switchyard_route_delivered_total{route=\"everything\"}", in: metrics) == 120
        }
        for index in 0..<12 {
            let route = "route=\"only-s\(index)\""
            #expect(MetricsExposition.sample("switchyard_route_received_total{\(route)}", in: metrics) == 120, "\(route)")
            #expect(MetricsExposition.sample("switchyard_route_filtered_total{\(route)}", in: metrics) == 110, "\(route)")
            #expect(MetricsExposition.sample("switchyard_route_delivered_total{\(route)}", in: metrics) == 10, "\(route)")
        }
        #expect(MetricsExposition.sample("switchyard_route_received_total{route=\"s1-family\"}", in: metrics) == 120)
        #expect(MetricsExposition.sample("switchyard_route_filtered_total{route=\"s1-family\"}", in: metrics) == 90)
        #expect(MetricsExposition.sample("switchyard_route_received_total{route=\"big\"}", in: metrics) == 120)
        #expect(MetricsExposition.sample("switchyard_route_filtered_total{route=\"big\"}", in: metrics) == 120)
        let collected = sandbox.lines(of: "collected.txt")
        for index in 0..<12 {
            // Each envelope of subject sK: once through its own route, once through `everything`,
            // and once more through s1-family for s1, s10 and s11.
            let expected = 10 * (2 + (["s1", "s10", "s11"].contains("s\(index)") ? 1 : 0))
            #expect(collected.count { $0.hasSuffix(" s\(index)") } == expected, "s\(index)")
        }
        #expect(router.stop() == 0)
        #expect(router.logged("received=120") && router.standardError.contains("route=only-s7"))
    }
}
