import Foundation
import Testing

/// Several routers running the same routes act as one (issue 25, first part): with `share:`,
/// an mqtt instance's subscriptions join one shared group (`$share/switchyard-<instance>/…`,
/// MQTT 5) and each router takes a client id of its own, so Mosquitto hands every message to
/// one router.
@Suite(.timeLimit(.minutes(2)))
struct ScaleOutTests {
    /// The same routes in a sandbox of the router's own: `broker.messages` to `out.jsonl`.
    static func router(broker: Mosquitto) throws -> (RouterProcess, Sandbox) {
        let sandbox = try MQTTTests.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                share: true
                subscriptions: [ { topic: "jobs/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { name: jobs, from: broker.messages, to: out.write }
            """)
        return (try MQTTTests.run(sandbox), sandbox)
    }

    @Test func twoRoutersWithTheSameRoutesHandleEachMessageOnce() async throws {
        let broker = try Mosquitto()
        let (first, firstSandbox) = try Self.router(broker: broker)
        let (second, secondSandbox) = try Self.router(broker: broker)
        // Both subscribed, each with a client id of its own, to the group derived from the instance.
        let subscribed = broker.waitForLog("$share/switchyard-broker/jobs/# (QoS 1)", count: 2, timeout: .seconds(15))
        try #require(subscribed, "\(broker.logText)\n\(first.standardError)\n\(second.standardError)")
        #expect(broker.occurrences(of: "as switchyard-broker-") >= 2, "\(broker.logText)")

        let jobs = 40
        for job in 1...jobs { try broker.publish(topic: "jobs/\(job)", message: "job \(job)", qos: 1) }
        await first.waitUntil("\(jobs) jobs in the two files", timeout: .seconds(30)) {
            firstSandbox.lines(of: "out.jsonl").count + secondSandbox.lines(of: "out.jsonl").count >= jobs
        }
        #expect(first.stop() == 0, "\(first.standardError)")
        #expect(second.stop() == 0, "\(second.standardError)")
        let handled = (try firstSandbox.jsonLines(of: "out.jsonl") + secondSandbox.jsonLines(of: "out.jsonl")).compactMap {
            $0["body"] as? String
        }
        #expect(handled.count == jobs && Set(handled) == Set((1...jobs).map { "job \($0)" }), "\(handled.sorted())")
        #expect(!firstSandbox.lines(of: "out.jsonl").isEmpty && !secondSandbox.lines(of: "out.jsonl").isEmpty)
    }
}
