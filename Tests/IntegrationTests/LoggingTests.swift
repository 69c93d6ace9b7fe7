import Foundation
import Testing

/// `--log-format json` and per-instance `log_level:`.
@Suite(.timeLimit(.minutes(1)))
struct LoggingTests {
    @Test func jsonLinesAndAnInstanceLevelAboveTheGlobalOne() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              chatty: { plugin: core, log_level: info, timer: { interval: 10ms, count: 2 } }
              quiet:  { plugin: core, timer: { interval: 10ms, count: 2 } }
              out:    { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { from: chatty.tick, to: out.write }
              - { from: quiet.tick, to: out.write }
            """
        )
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--log-level", "warning", "--log-format", "json"],
            in: sandbox.root)
        router.waitUntil("both timers done") {
            sandbox.lines(of: "out.jsonl").count == 4 && router.standardError.contains("timer finished")
        }
        #expect(router.stop() == 0)
        let lines = router.standardError.split(separator: "\n")
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == lines.count, "every line is a JSON object: \(lines)")
        for object in objects {
            #expect(object["time"] is String && object["level"] is String && object["message"] is String && object["label"] is String)
        }
        let finished = objects.filter { ($0["message"] as? String)?.hasPrefix("timer finished") == true }
        #expect(finished.count == 1, "\(objects)")
        #expect(finished.first?["instance"] as? String == "chatty")
        #expect(finished.first?["level"] as? String == "info")
        #expect(!objects.contains { $0["message"] as? String == "router started" }, "info lines of the router stay below --log-level")
    }

    @Test func anUnknownInstanceLogLevelIsAnErrorWithItsPosition() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes("instances:\n  clock: { plugin: core, log_level: loud, timer: { interval: 1s } }\n")
        let result = try RouterProcess.runToExit(["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1)
        #expect(
            result.errors.contains("main.yaml:2:37: error: log_level must be one of: trace, debug, info, notice, warning, error, critical"),
            "\(result.errors)")
    }
}
