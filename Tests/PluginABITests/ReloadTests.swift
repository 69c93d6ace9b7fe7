import Foundation
import Testing

@testable import IntegrationSupport

/// SIGHUP and `run --watch`: a valid new graph replaces the running one without touching
/// unchanged instances; an invalid one is rejected and the old graph keeps running.
@Suite(.timeLimit(.minutes(2)))
struct ReloadTests {
    private static let clientID = "reload-test"

    private static func routes(broker: Mosquitto, sandbox: Sandbox, writeTo file: String) -> String {
        """
        instances:
          broker:
            plugin: mqtt
            url: "\(broker.url)"
            client_id: \(clientID)
            subscriptions: [ { topic: "a/#", qos: 1 } ]
          \(file): { plugin: core, file: { path: "\(sandbox.path(file + ".jsonl"))", format: body } }
        routes:
          - name: to-\(file)
            from: broker.messages
            to: \(file).write
        """
    }

    @Test func sighupKeepsTheUnchangedBrokerConnectionAndRejectsABrokenFile() async throws {
        let broker = try Mosquitto()
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("mqtt")
        try sandbox.writeRoutes(Self.routes(broker: broker, sandbox: sandbox, writeTo: "first"))
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        try broker.publish(topic: "a/1", message: "one", qos: 1)
        await router.waitUntil("the first message in first.jsonl") { sandbox.lines(of: "first.jsonl").count == 1 }

        // A new sink and a new route; the broker instance is unchanged.
        try sandbox.writeRoutes(Self.routes(broker: broker, sandbox: sandbox, writeTo: "second"))
        router.send(signal: SIGHUP)
        await router.waitUntil("the reload") { router.occurrences(of: "routes reloaded") == 1 }
        try broker.publish(topic: "a/2", message: "two", qos: 1)
        await router.waitUntil("the second message in second.jsonl") { sandbox.lines(of: "second.jsonl").count == 1 }
        #expect(sandbox.lines(of: "first.jsonl") == ["\"one\""])
        #expect(sandbox.lines(of: "second.jsonl") == ["\"two\""])
        let log = router.standardError
        #expect(log.contains("instances kept 1, reconfigured [], started [\"second\"], stopped [\"first\"]"), "\(log)")

        // A broken file: rejected with its position, the running graph untouched.
        try sandbox.writeRoutes(
            """
            instances:
              broker: { plugin: mqtt, url: "\(broker.url)", client_id: \(Self.clientID) }
            routes:
              - from: broker.nope
                to: broker.publish
            """
        )
        router.send(signal: SIGHUP)
        await router.waitUntil("the rejection") { router.occurrences(of: "reload rejected") == 1 }
        #expect(router.logged("main.yaml:4:"), "\(router.standardError)")
        try broker.publish(topic: "a/3", message: "three", qos: 1)
        await router.waitUntil("the third message in second.jsonl") { sandbox.lines(of: "second.jsonl").count == 2 }

        // One connection for the whole run: the reloads never reconnected the broker instance.
        #expect(broker.occurrences(of: " as \(Self.clientID) ") == 1, "\(broker.logText)")
        #expect(broker.occurrences(of: "Client \(Self.clientID) disconnected") == 0)
        #expect(router.stop() == 0)
    }

    @Test func watchReloadsWhenARouteFileChanges() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        func routes(_ file: String) -> String {
            """
            instances:
              clock: { plugin: core, timer: { interval: 20ms } }
              \(file): { plugin: core, file: { path: "\(sandbox.path(file + ".jsonl"))" } }
            routes:
              - { name: ticks, from: clock.tick, to: \(file).write }
            """
        }
        try sandbox.writeRoutes(routes("before"))
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--watch"], in: sandbox.root)
        await router.waitUntil("ticks in before.jsonl") { sandbox.lines(of: "before.jsonl").count >= 2 }
        try sandbox.writeRoutes(routes("after"))
        await router.waitUntil("ticks in after.jsonl") { sandbox.lines(of: "after.jsonl").count >= 2 }
        let before = sandbox.lines(of: "before.jsonl").count
        let after = try sandbox.jsonLines(of: "after.jsonl").compactMap { ($0["body"] as? [String: Any])?["count"] as? Int }
        #expect(router.stop() == 0)
        // The clock was kept: its count goes on where it was instead of starting again at 1.
        #expect((after.first ?? 0) > before, "before \(before), after \(after)")
        #expect(router.logged("instances kept 1"))
    }
}
