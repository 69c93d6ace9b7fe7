import Foundation
import Testing

@testable import IntegrationSupport

/// End-to-end routing through the built `switchyard` binary and the real `libcore.so`.
@Suite(.timeLimit(.minutes(2)))
struct RoutingTests {
    @Test func timerThroughWhenAndMapLandsInFile() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 20ms, count: 6 } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: even-ticks
                from: clock.tick
                when: body.count > 2
                map: { n: "{{body.count}}", label: "tick {{body.count}}", via: "{{source}}" }
                to: out.write
            """
        )
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("four envelopes in out.jsonl") { sandbox.lines(of: "out.jsonl").count >= 4 }
        #expect(router.stop() == 0)
        let lines = try sandbox.jsonLines(of: "out.jsonl")
        #expect(lines.count == 4)
        let bodies = lines.compactMap { $0["body"] as? [String: Any] }
        #expect(bodies.compactMap { $0["n"] as? Int } == [3, 4, 5, 6])
        #expect(bodies.compactMap { $0["label"] as? String } == ["tick 3", "tick 4", "tick 5", "tick 6"])
        #expect(bodies.allSatisfy { $0["via"] as? String == "clock.tick" })
        #expect(lines.allSatisfy { ($0["trace"] as? [String]) == ["clock"] })
        #expect(router.logged("loaded plugin"))
        #expect(router.logged(sandbox.plugins.appendingPathComponent("libcore.so").path))
    }
}
