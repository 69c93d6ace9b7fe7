import Foundation
import Testing

@testable import IntegrationSupport

/// The loop guard: an envelope is not delivered to an instance already in its trace unless
/// the route says `loop: allow`, and a cycle made only of `loop: allow` routes is refused.
@Suite(.timeLimit(.minutes(2)))
struct LoopTests {
    /// Two relays feeding each other, with a file tapping the second one.
    static func relayGraph(file: String, count: Int, allowLoops: Bool) -> String {
        let loop = allowLoops ? "\n    loop: allow" : ""
        return """
            instances:
              clock: { plugin: core, timer: { interval: 10ms, count: \(count) } }
              p1:    { plugin: core, relay: {} }
              p2:    { plugin: core, relay: {} }
              sink:  { plugin: core, file: { path: "\(file)" } }
            routes:
              - name: tick-in
                from: clock.tick
                to: p1.in
              - name: forth
                from: p1.out
                to: p2.in\(loop)
              - name: back
                from: p2.out
                to: p1.in\(loop)
              - name: keep
                from: p2.out
                to: sink.write
            """
    }

    @Test func relayCycleIsCutAtTheInstanceAlreadyInTheTrace() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let count = 8
        try sandbox.writeRoutes(Self.relayGraph(file: sandbox.path("loop.jsonl"), count: count, allowLoops: false))
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("\(count) envelopes in loop.jsonl") { sandbox.lines(of: "loop.jsonl").count >= count }
        await router.waitUntil("the timer finished") { router.standardError.contains("timer finished after \(count) ticks") }
        await router.waitUntil("the loop notice") { router.standardError.contains("loop stopped") }
        #expect(router.stop() == 0)

        let lines = try sandbox.jsonLines(of: "loop.jsonl")
        #expect(lines.count == count)
        #expect(lines.allSatisfy { ($0["trace"] as? [String]) == ["clock", "p1", "p2"] })
        #expect(lines.compactMap { ($0["body"] as? [String: Any])?["count"] as? Int } == Array(1...count))

        let log = router.standardError
        // The notice is logged once per route, not once per envelope.
        #expect(log.components(separatedBy: "loop stopped").count - 1 == 1)
        #expect(log.split(separator: "\n").contains { $0.contains("loop stopped") && $0.contains("route=back") })
        let back = RouteTotals.parse(route: "back", in: log)
        #expect(back == RouteTotals(received: count, filtered: 0, delivered: 0, droppedFull: 0, droppedLoop: count))
        #expect(RouteTotals.parse(route: "forth", in: log)?.droppedLoop == 0)
        #expect(RouteTotals.parse(route: "keep", in: log)?.delivered == count)
    }

    @Test func validateRefusesACycleOfLoopAllowRoutes() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let yaml = Self.relayGraph(file: sandbox.path("loop.jsonl"), count: 1, allowLoops: true)
        try sandbox.writeRoutes(yaml)
        let file = sandbox.routes.appendingPathComponent("main.yaml").path
        let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1)
        #expect(!result.output.contains("ok:"))
        let cycle = result.errors.split(separator: "\n").map(String.init).filter { $0.contains("form a cycle") }
        #expect(cycle.count == 1, "\(result.errors)")
        let forth = try #require(position(of: "name: forth", in: yaml))
        let back = try #require(position(of: "name: back", in: yaml))
        let places = ["\(file):\(forth.line):\(forth.column): error: ", "\(file):\(back.line):\(back.column): error: "]
        #expect(cycle.allSatisfy { line in places.contains { line.hasPrefix($0) } }, "\(cycle)")
        #expect(cycle.allSatisfy { $0.contains("forth") && $0.contains("back") && $0.contains("loop: allow") })
    }

    @Test func loopAllowOnOneRouteOfTheCycleIsNotACycleError() throws {
        // Only `back` allows the loop; `forth` still guards, so the graph is valid.
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let yaml = Self.relayGraph(file: sandbox.path("loop.jsonl"), count: 1, allowLoops: false)
            .replacingOccurrences(of: "from: p2.out\n    to: p1.in", with: "from: p2.out\n    to: p1.in\n    loop: allow")
        #expect(yaml.contains("loop: allow"))
        try sandbox.writeRoutes(yaml)
        let file = sandbox.routes.appendingPathComponent("main.yaml").path
        let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.hasPrefix("ok:"))
    }
}
