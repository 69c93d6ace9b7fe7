import Foundation
import Testing

@testable import IntegrationSupport

/// `--log-format json` and per-instance `log_level:`.
@Suite(.timeLimit(.minutes(1)))
struct LoggingTests {
    @Test func jsonLinesAndAnInstanceLevelAboveTheGlobalOne() async throws {
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
        await router.waitUntil("both timers done") {
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

    /// Route file problems (at start, as at a reload) are JSON lines too, with their position.
    @Test func routeFileProblemsAreJSONLinesWithJSONLogs() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes("instances:\n  clock: { plugin: core, timer: { interval: 1s, bogus: 1 } }\n")
        let result = try RouterProcess.runToExit(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--log-format", "json"], in: sandbox.root)
        #expect(result.status != 0)
        let lines = result.errors.split(separator: "\n")
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(!lines.isEmpty && objects.count == lines.count, "every line is a JSON object: \(lines)")
        #expect(
            objects.contains { ($0["problem"] as? String)?.contains("main.yaml:2:") == true && $0["level"] as? String == "error" },
            "\(objects)")
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

/// Secrets never reach a log line: not the URL's password, not a value from the environment.
@Suite(.timeLimit(.minutes(2)))
struct SecretRedactionTests {
    @Test func aBrokerPasswordIsMaskedInEveryLine() async throws {
        let sandbox = try Sandbox(plugins: ["core", "mqtt"])
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "mqtt://127.0.0.1:1"
                username: bridge
                password: "${BROKER_PASSWORD}"
                client_id: redaction-test
                reconnect: { initial_delay: 50ms, max_delay: 100ms }
                subscriptions: [ { topic: "a/#", qos: 1 } ]
              literal:
                plugin: mqtt
                url: "mqtt://127.0.0.1:1"
                username: other
                password: written-in-the-file
                client_id: redaction-test-2
                reconnect: { initial_delay: 50ms, max_delay: 100ms }
                subscriptions: [ { topic: "b/#", qos: 1 } ]
              out: { plugin: core, console: {} }
            routes:
              - { from: broker.messages, to: out.print }
              - { from: literal.messages, to: out.print }
            """
        )
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--log-level", "debug"], in: sandbox.root,
            environment: ["BROKER_PASSWORD": "hunter22-from-env"])
        await router.waitUntil("both instances logged a failed connection") {
            router.standardError.contains("instance=broker") && router.standardError.contains("instance=literal")
                && router.occurrences(of: "127.0.0.1:1") >= 2
        }
        #expect(router.stop() == 0)
        #expect(!router.standardError.contains("hunter22-from-env"))
        #expect(!router.standardError.contains("written-in-the-file"))
    }
}

/// A URL with credentials in it is refused before anything could log it.
@Suite(.timeLimit(.minutes(2)))
struct CredentialsInURLTests {
    @Test func anMQTTURLWithAPasswordIsRefusedWithoutEchoingIt() throws {
        let sandbox = try Sandbox(plugins: ["core", "mqtt"])
        try sandbox.writeRoutes(
            """
            instances:
              broker: { plugin: mqtt, url: "mqtt://bridge:pw-in-the-url@127.0.0.1:1883", subscriptions: [ { topic: "a/#" } ] }
              out: { plugin: core, console: {} }
            routes:
              - { from: broker.messages, to: out.print }
            """
        )
        let run = try RouterProcess.runToExit(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(run.status != 0)
        #expect(run.errors.contains("must not carry credentials"), "\(run.errors)")
        #expect(!run.errors.contains("pw-in-the-url"))
    }
}
