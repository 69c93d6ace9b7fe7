import Foundation
import Testing

@testable import IntegrationSupport

/// One route with several sinks: every sink gets every envelope, in emission order.
@Suite(.timeLimit(.minutes(2)))
struct FanOutTests {
    @Test func oneRouteToTwoFilesDeliversTheSameEnvelopesInTheSameOrder() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let count = 25
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 5ms, count: \(count) } }
              a:     { plugin: core, file: { path: "\(sandbox.path("a.jsonl"))" } }
              b:     { plugin: core, file: { path: "\(sandbox.path("b.jsonl"))" } }
            routes:
              - name: both
                from: clock.tick
                to: [a.write, b.write]
            """
        )
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("\(count) envelopes in both files") {
            sandbox.lines(of: "a.jsonl").count >= count && sandbox.lines(of: "b.jsonl").count >= count
        }
        await router.waitUntil("the timer finished") { router.standardError.contains("timer finished after \(count) ticks") }
        #expect(router.stop() == 0)
        let a = try sandbox.jsonLines(of: "a.jsonl")
        let b = try sandbox.jsonLines(of: "b.jsonl")
        #expect(a.count == count)
        #expect(b.count == count)
        let idsA = a.compactMap { $0["id"] as? String }
        let idsB = b.compactMap { $0["id"] as? String }
        #expect(idsA.count == count)
        #expect(idsA == idsB)
        #expect(Set(idsA).count == count)
        // Emission order: the tick counts run 1...count in both files.
        let ticksA = a.compactMap { ($0["body"] as? [String: Any])?["count"] as? Int }
        let ticksB = b.compactMap { ($0["body"] as? [String: Any])?["count"] as? Int }
        #expect(ticksA == Array(1...count))
        #expect(ticksB == Array(1...count))
        #expect(a.allSatisfy { ($0["trace"] as? [String]) == ["clock"] })
        let totals = RouteTotals.parse(route: "both", in: router.standardError)
        #expect(totals?.received == count)
        #expect(totals?.delivered == 2 * count)
    }
}
