import Foundation
import Testing

@testable import IntegrationSupport

/// The Swift SDK end to end: the example plugin `libshout.so`, built by this package, loaded
/// from a plugin folder and routed through.
@Suite(.timeLimit(.minutes(2)))
struct SwiftPluginTests {
    @Test func exampleSwiftPluginShoutsAndKeepsTheTrace() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("shout")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 10ms, count: 3 } }
              loud:  { plugin: shout, suffix: "!" }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - from: clock.tick
                template: "tick {{body.count}}"
                to: loud.in
              - from: loud.out
                to: out.write
            """
        )
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("three shouted envelopes") { sandbox.lines(of: "out.jsonl").count >= 3 }
        #expect(router.stop() == 0)
        let lines = try sandbox.jsonLines(of: "out.jsonl")
        #expect(lines.compactMap { $0["body"] as? String } == ["TICK 1!", "TICK 2!", "TICK 3!"])
        #expect(lines.allSatisfy { $0["trace"] as? [String] == ["clock", "loud"] })
        #expect(lines.allSatisfy { $0["type"] as? String == "text" })
        #expect(lines.allSatisfy { $0["source"] as? String == "loud.out" })
    }

    @Test func configSchemaOfASwiftPluginIsEnforced() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("shout")
        try sandbox.writeRoutes(
            """
            instances:
              loud: { plugin: shout, suffix: 12, volume: 11 }
            """
        )
        let result = try RouterProcess.runToExit(["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1)
        #expect(result.errors.contains("main.yaml:2:26: error: instance 'loud' (plugin shout): suffix expected string, found integer"))
        #expect(
            result.errors.contains("main.yaml:2:38: error: instance 'loud' (plugin shout): volume is not a known field (known: suffix)"))
    }
}
