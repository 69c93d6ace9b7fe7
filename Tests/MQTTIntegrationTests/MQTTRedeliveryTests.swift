import Foundation
import Testing

@testable import IntegrationSupport

#if canImport(Glibc)
    import Glibc
#endif

/// An inbound QoS 1 publish the router settles with retry is not confirmed to the broker: the
/// link holds it and offers it again (with backoff, or when the route resumes it), so nothing
/// the router did not take is acknowledged upstream.
@Suite(.timeLimit(.minutes(2)))
struct MQTTRedeliveryTests {
    static let clientID = "switchyard-redelivery"

    /// 200 QoS 1 publishes reach a sink that answers retry at first: the broker gets no PUBACK
    /// while the sink is down, and once it is back every message is delivered exactly once, in
    /// order, and confirmed exactly once.
    @Test func publishesTheRouterSettlesWithRetryAreHeldUnconfirmedAndOfferedAgain() async throws {
        let broker = try Mosquitto()
        let sandbox = try Sandbox()
        try sandbox.installPlugin("mqtt")
        try sandbox.installPlugin("testkit")
        let down = sandbox.path("sink-down")
        #expect(FileManager.default.createFile(atPath: down, contents: nil))
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                subscriptions: [ { topic: "sensors/#", qos: 1 } ]
              sink: { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", fail_while: "\(down)" } }
            routes:
              - { name: inbound, from: broker.messages, to: sink.collect }
            """
        )
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox)
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        let total = 200
        let script =
            "for n in $(seq 1 \(total)); do mosquitto_pub \(broker.clientArguments().joined(separator: " ")) -q 1 -t sensors/$n -m $n || exit 1; done"
        let published = try Tool.run("/bin/sh", ["-c", script], timeout: .seconds(60))
        try #require(published.status == 0, "\(published.output)")

        // The sink stays down while the link offers the held publishes again a few times.
        try await router.waitUntil("publishes offered to the router again") {
            try MetricsExposition.pluginMetric("mqtt_redelivered_to_router_total", instance: "broker", admin: admin) >= 3
        }
        #expect(try MetricsExposition.pluginMetric("mqtt_handed_back_total", instance: "broker", admin: admin) >= 3)
        #expect(broker.occurrences(of: "Received PUBACK from \(Self.clientID)") == 0, "\(broker.currentLogText.suffix(3000))")
        #expect(sandbox.lines(of: "collected.txt").isEmpty)
        #expect(try MetricsExposition.pluginMetric("mqtt_unconfirmed_deliveries_total", instance: "broker", admin: admin) == 0)

        try FileManager.default.removeItem(atPath: down)
        await router.waitUntil("every publish collected", timeout: .seconds(60)) { sandbox.lines(of: "collected.txt").count >= total }
        broker.waitForLog("Received PUBACK from \(Self.clientID)", count: total, timeout: .seconds(20))
        let subjects = sandbox.lines(of: "collected.txt").compactMap { $0.split(separator: " ").last.map(String.init) }
        #expect(subjects == (1...total).map { "sensors/\($0)" }, "every publish once, in order")
        #expect(broker.occurrences(of: "Received PUBACK from \(Self.clientID)") == total)
        #expect(try MetricsExposition.pluginMetric("mqtt_unconfirmed_deliveries_total", instance: "broker", admin: admin) == 0)
        #expect(router.stop() == 0, "\(router.standardError)")
        #expect(!router.standardError.contains("confirmed to the broker anyway"))
    }
}
