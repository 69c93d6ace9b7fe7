import Foundation
import Testing

@testable import IntegrationSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The `mqtt` plugin end to end: the built `switchyard` with the real `libmqtt.so` and
/// `libcore.so` against a real Mosquitto broker per test (see `IntegrationSupport/Mosquitto.swift`), and a
/// fake broker for malformed input. Every wait is bounded; every process dies with its test.
@Suite(.timeLimit(.minutes(2)))
struct MQTTTests {
    static let clientID = "switchyard-test"

    /// The log lines of `level` (`error`, `warning`, …) that satisfy `condition`.
    static func logLines(_ log: String, level: String? = nil, where condition: (String) -> Bool = { _ in true }) -> [String] {
        log.split(separator: "\n").map(String.init).filter { line in
            (level.map { line.contains(" \($0) ") } ?? true) && condition(line)
        }
    }

    /// Lines of the router log saying a delivery was acknowledged with retry or reject.
    static func failedDeliveries(_ log: String) -> [String] { logLines(log) { $0.contains("delivery failed") } }

    /// Parses "topic/N …" into N.
    static func number(inTopicOf line: String, prefix: String) -> Int? {
        guard line.hasPrefix(prefix) else { return nil }
        return Int(line.dropFirst(prefix.count).prefix { $0 != " " })
    }

    // MARK: - a. Inbound

    @Test(arguments: [1, 2])
    func inboundPublishesReachTheFileInOrder(qos: Int) async throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                keep_alive: 10
                clean_start: true
                subscriptions: [ { topic: "sensors/#", qos: \(qos) } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: inbound
                from: broker.messages
                to: out.write
            """
        )
        let router = try MQTTRouter.run(sandbox)
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        let sent: [(topic: String, payload: String)] = [
            ("sensors/a", "reading 1"), ("sensors/b", "reading 2"), ("sensors/a", "reading 3"),
            ("other/x", "not subscribed"), ("sensors/b", "reading 4"), ("sensors/a/deep", "reading 5"),
        ]
        // One mosquitto_pub after the other: each has its PUBACK/PUBCOMP before the next starts,
        // so the broker forwards them in this order. other/x comes before the last one: had it
        // been forwarded, it would be in the file by the time the last one is.
        for message in sent { try broker.publish(topic: message.topic, message: message.payload, qos: qos) }
        await router.waitUntil("five envelopes in out.jsonl") { sandbox.lines(of: "out.jsonl").count >= 5 }
        #expect(router.stop() == 0, "\(router.standardError)")

        let expected = sent.filter { $0.topic.hasPrefix("sensors/") }
        let lines = try sandbox.jsonLines(of: "out.jsonl")
        #expect(lines.count == 5, "\(lines)")
        #expect(lines.compactMap { $0["body"] as? String } == expected.map(\.payload))
        #expect(lines.compactMap { $0["subject"] as? String } == expected.map(\.topic))
        #expect(lines.allSatisfy { $0["type"] as? String == "mqtt.Message" })
        #expect(lines.allSatisfy { $0["source"] as? String == "broker.messages" })
        #expect(lines.allSatisfy { ($0["trace"] as? [String]) == ["broker"] })
        let headers = lines.compactMap { $0["headers"] as? [String: String] }
        #expect(headers.count == 5)
        #expect(headers.map { $0["mqtt.topic"] } == expected.map(\.topic))
        #expect(headers.allSatisfy { $0["mqtt.qos"] == String(qos) }, "\(headers)")
        #expect(headers.allSatisfy { $0["mqtt.retain"] == "false" }, "\(headers)")
        #expect(headers.allSatisfy { $0["mqtt.dup"] == "false" }, "\(headers)")
        #expect(!sandbox.lines(of: "out.jsonl").contains { $0.contains("not subscribed") })
        let totals = try #require(RouteTotals.parse(route: "inbound", in: router.standardError), "\(router.standardError)")
        #expect(totals.received == 5 && totals.delivered == 5, "\(totals)")
        // The broker saw the router connect with the configured id, MQTT 5 and keep-alive 10.
        #expect(broker.logText.contains("as \(Self.clientID) (p5, c1, k10)"), "\(broker.logText)")
        #expect(Self.failedDeliveries(router.standardError).isEmpty)
    }

    @Test func inboundMQTT5PropertiesBecomeHeaders() async throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                subscriptions: [ { topic: "props/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: inbound
                from: broker.messages
                to: out.write
            """
        )
        let router = try MQTTRouter.run(sandbox)
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        try broker.publish(
            topic: "props/one", message: "with properties", qos: 1, version: "mqttv5",
            arguments: [
                "-D", "publish", "content-type", "text/plain",
                "-D", "publish", "response-topic", "reply/here",
                "-D", "publish", "correlation-data", "abc",
                "-D", "publish", "user-property", "room", "kitchen",
            ])
        try broker.publish(topic: "props/json", message: #"{"temp": 21.5}"#, qos: 1, retain: true)
        await router.waitUntil("two envelopes in out.jsonl") { sandbox.lines(of: "out.jsonl").count >= 2 }
        #expect(router.stop() == 0, "\(router.standardError)")
        let lines = try sandbox.jsonLines(of: "out.jsonl")
        #expect(lines.count == 2)
        let first = try #require(lines.first)
        let headers = try #require(first["headers"] as? [String: String])
        #expect(first["body"] as? String == "with properties")
        #expect(first["contentType"] as? String == "text/plain")
        #expect(headers["mqtt.content_type"] == "text/plain", "\(headers)")
        #expect(headers["mqtt.response_topic"] == "reply/here", "\(headers)")
        #expect(headers["mqtt.correlation_data"] == "616263", "\(headers)")
        #expect(headers["mqtt.user.room"] == "kitchen", "\(headers)")
        // A JSON payload is embedded as JSON by the file sink. The router subscribed before the
        // retained publish, which still arrives flagged retained: MQTT 5 Retain As Published.
        let second = try #require(lines.last)
        #expect((second["body"] as? [String: Any])?["temp"] as? Double == 21.5, "\(second)")
        #expect((second["headers"] as? [String: String])?["mqtt.retain"] == "true", "\(second)")
    }

    // MARK: - b, c. Outbound

    @Test(arguments: [(1, "5"), (2, "5"), (1, "3.1.1"), (2, "3.1.1")])
    func timerTicksArePublishedWithTheirTopics(qos: Int, version: String) throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        let versionYAML = version == "5" ? "5" : "\"\(version)\""
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 20ms, count: 5 } }
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                version: \(versionYAML)
                client_id: \(Self.clientID)
                keep_alive: 10
            routes:
              - name: outbound
                from: clock.tick
                map: { topic: "out/{{body.count}}", payload: "tick {{body.count}}", qos: \(qos) }
                type: mqtt.Publish
                to: broker.publish
            """
        )
        // Subscribed at QoS 2 so %q shows the QoS the router published with.
        let subscriber = try MosquittoSubscriber(broker, topic: "out/#", qos: 2, format: "%t %q %r %p")
        let router = try MQTTRouter.run(sandbox)
        let lines = subscriber.waitForLines(5)
        #expect(lines == (1...5).map { "out/\($0) \(qos) 0 tick \($0)" }, "\(router.standardError)")
        #expect(router.stop() == 0, "\(router.standardError)")
        let log = router.standardError
        let totals = try #require(RouteTotals.parse(route: "outbound", in: log), "\(log)")
        #expect(totals.received == 5 && totals.delivered == 5, "\(totals)")
        #expect(Self.failedDeliveries(log).isEmpty, "\(log)")
        #expect(Self.logLines(log) { $0.contains("router stopped") && $0.contains("drained=true") }.count == 1, "\(log)")
        // What the broker saw: the protocol version and QoS asked for.
        let protocolLevel = version == "5" ? "p5" : "p2"
        #expect(broker.logText.contains("as \(Self.clientID) (\(protocolLevel), c1, k10)"), "\(broker.logText)")
        _ = broker.waitForLog("Received PUBLISH from \(Self.clientID) (d0, q\(qos), r0", count: 5)
        #expect(broker.occurrences(of: "Received PUBLISH from \(Self.clientID) (d0, q\(qos), r0") == 5, "\(broker.logText)")
        if qos == 2 {
            _ = broker.waitForLog("Sending PUBCOMP to \(Self.clientID)", count: 5)
            #expect(broker.occurrences(of: "Sending PUBCOMP to \(Self.clientID)") == 5, "\(broker.logText)")
        }
        #expect(subscriber.lines.count == 5)
    }

    @Test func plainBodiesUseThePublishDefaultsAndHeaderTopics() throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 20ms, count: 3 } }
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                publish: { topic: "out/default", qos: 1, retain: false }
            routes:
              - name: ticks
                from: clock.tick
                template: "plain {{body.count}}"
                to: broker.publish
            """
        )
        let subscriber = try MosquittoSubscriber(broker, topic: "out/#", qos: 2, format: "%t %q %r %p")
        let router = try MQTTRouter.run(sandbox)
        let lines = subscriber.waitForLines(3)
        #expect(lines == (1...3).map { "out/default 1 0 plain \($0)" }, "\(router.standardError)")
        #expect(router.stop() == 0, "\(router.standardError)")
        #expect(Self.failedDeliveries(router.standardError).isEmpty)
    }

    @Test func bridgeBetweenTwoBrokersKeepsTopicsPayloadsAndQoS() throws {
        let upstream = try Mosquitto()
        let downstream = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              up:
                plugin: mqtt
                url: "\(upstream.url)"
                client_id: bridge-up
                subscriptions: [ { topic: "plant/#", qos: 1 } ]
              down:
                plugin: mqtt
                url: "\(downstream.url)"
                client_id: bridge-down
            routes:
              - name: bridge
                from: up.messages
                to: down.publish
            """
        )
        let subscriber = try MosquittoSubscriber(downstream, topic: "plant/#", qos: 2, format: "%t %q %p")
        let router = try MQTTRouter.run(sandbox)
        upstream.waitForLog("Sending SUBACK to bridge-up")
        downstream.waitForLog("as bridge-down (")
        for index in 1...4 { try upstream.publish(topic: "plant/line\(index % 2)/temp", message: "value \(index)", qos: 1) }
        let lines = subscriber.waitForLines(4)
        #expect(lines == (1...4).map { "plant/line\($0 % 2)/temp 1 value \($0)" }, "\(router.standardError)")
        #expect(router.stop() == 0, "\(router.standardError)")
        #expect(Self.failedDeliveries(router.standardError).isEmpty)
    }

    // MARK: - d. Password

    @Test func wrongPasswordIsLoggedAndNeverPrintedAndTheRouterKeepsRunning() async throws {
        let wrongPassword = "Wr0ng-Secret-\(UUID().uuidString.prefix(6))"
        let broker = try Mosquitto(users: ["switchyard": "Right-Pa55word"])
        let sandbox = try MQTTRouter.sandbox()
        let yaml = """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                username: switchyard
                password: "${MQTT_PASSWORD}"
                keep_alive: 10
                reconnect: { initial_delay: 100ms, max_delay: 500ms }
                subscriptions: [ { topic: "sensors/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: inbound
                from: broker.messages
                to: out.write
            """
        try sandbox.writeRoutes(yaml)
        let environment = ["MQTT_PASSWORD": wrongPassword]

        // validate, when all is well and when the instance has an error, prints no password.
        let valid = try RouterProcess.runToExit(
            ["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--log-level", "trace"], in: sandbox.root,
            environment: environment)
        #expect(valid.status == 0, "\(valid.output)\(valid.errors)")
        #expect(!(valid.output + valid.errors).contains(wrongPassword))
        let broken = try Sandbox()
        try broken.installPlugin("core")
        try broken.installPlugin("mqtt")
        try broken.writeRoutes(yaml.replacingOccurrences(of: "keep_alive: 10", with: "keep_alive: \"soon\""))
        let invalid = try RouterProcess.runToExit(
            ["validate", broken.routes.path, "--plugins", broken.plugins.path], in: broken.root, environment: environment)
        #expect(invalid.status != 0, "\(invalid.output)\(invalid.errors)")
        #expect(invalid.errors.contains("keep_alive"), "\(invalid.errors)")
        #expect(!(invalid.output + invalid.errors).contains(wrongPassword), "\(invalid.errors)")

        let router = try MQTTRouter.run(sandbox, environment: environment, arguments: ["--log-level", "trace"])
        await router.waitUntil("the refusal logged") {
            !Self.logLines(router.standardError, level: "error") { $0.contains("refused") }.isEmpty
        }
        let refusal = Self.logLines(router.standardError, level: "error") { $0.contains("refused") }
        #expect(
            refusal.contains { $0.contains("not authorized") || $0.contains("bad user name or password") }, "\(router.standardError)")
        // It tries again, and is still running.
        #expect(broker.waitForLog("New connection from 127.0.0.1", count: 2))
        #expect(router.process.isRunning)
        #expect(!broker.logText.contains("as \(Self.clientID) ("))
        #expect(router.stop() == 0, "\(router.standardError)")
        #expect(!router.standardError.contains(wrongPassword))
        #expect(!router.standardOutput.contains(wrongPassword))

        // The right password: connected, subscribed, messages flow.
        let good = try MQTTRouter.run(sandbox, environment: ["MQTT_PASSWORD": "Right-Pa55word"])
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        // A QoS 1 subscription keeps its session by default (c0).
        #expect(broker.logText.contains("as \(Self.clientID) (p5, c0, k10, u'switchyard')"), "\(broker.logText)")
        try broker.publish(topic: "sensors/door", message: "open", qos: 1, username: "switchyard", password: "Right-Pa55word")
        await good.waitUntil("the message in out.jsonl") { !sandbox.lines(of: "out.jsonl").isEmpty }
        #expect(good.stop() == 0, "\(good.standardError)")
        let lines = try sandbox.jsonLines(of: "out.jsonl")
        #expect(lines.compactMap { $0["body"] as? String } == ["open"])
        #expect(!good.standardError.contains("Right-Pa55word"))
    }

    // MARK: - e. TLS

    @Test func aMalformedReconnectDelayIsRefusedNamingTheSetting() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("mqtt")
        try sandbox.writeRoutes(
            """
            instances:
              broker: { plugin: mqtt, url: "mqtt://127.0.0.1:1", reconnect: { initial_delay: soon } }
            """)
        let result = try RouterProcess.runToExit(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status != 0)
        // The plugin names the setting by its JSON Pointer, and validation (before anything
        // starts: the configuration type is decoded in describe) turns it into the position.
        #expect(result.errors.contains("'soon' is not a duration like 500ms, 10s or 5m"), "\(result.errors)")
        let line = try #require(result.errors.split(separator: "\n").first { $0.contains("'soon' is not a duration") })
        #expect(line.contains("main.yaml:2:67: error: instance 'broker' (plugin mqtt): /reconnect/initial_delay: "), "\(line)")
    }

    @Test func aClientCertificateWithoutItsKeyIsRefused() throws {
        let sandbox = try Sandbox(plugins: ["mqtt"])
        try sandbox.writeRoutes(
            """
            instances:
              broker: { plugin: mqtt, url: "mqtts://127.0.0.1:1", tls: { cert_file: client.pem } }
            """)
        let result = try RouterProcess.runToExit(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status != 0)
        #expect(result.errors.contains("tls: give both cert_file and key_file, or neither"), "\(result.errors)")
    }

    @Test func tlsWithTheTestCAWorksAndWithoutItTheHandshakeFails() async throws {
        let broker = try Mosquitto(tls: true)
        let caFile = try #require(broker.caFile)
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                tls: { ca_file: "\(caFile)", server_name: "localhost" }
                subscriptions: [ { topic: "sensors/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: inbound
                from: broker.messages
                to: out.write
            """
        )
        let router = try MQTTRouter.run(sandbox)
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        try broker.publish(topic: "sensors/secure", message: "encrypted", qos: 1)
        await router.waitUntil("the message in out.jsonl") { !sandbox.lines(of: "out.jsonl").isEmpty }
        #expect(router.stop() == 0, "\(router.standardError)")
        #expect(try sandbox.jsonLines(of: "out.jsonl").compactMap { $0["body"] as? String } == ["encrypted"])

        // Without ca_file the system CAs are used, and they do not know the test CA.
        let untrusting = try MQTTRouter.sandbox()
        try untrusting.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: untrusting
                reconnect: { initial_delay: 100ms, max_delay: 500ms }
                subscriptions: [ { topic: "sensors/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(untrusting.path("out.jsonl"))" } }
            routes:
              - name: inbound
                from: broker.messages
                to: out.write
            """
        )
        let failing = try MQTTRouter.run(untrusting)
        let isTLSError = { (line: String) -> Bool in
            let lower = line.lowercased()
            return lower.contains("certificate") || lower.contains("handshake") || lower.contains("ssl") || lower.contains("tls")
        }
        await failing.waitUntil("a TLS error in the log") {
            !Self.logLines(failing.standardError, level: "error", where: isTLSError).isEmpty
        }
        #expect(failing.process.isRunning)
        #expect(!broker.currentLogText.contains("as untrusting ("), "\(broker.logText)")
        #expect(failing.stop() == 0, "\(failing.standardError)")
    }

    // MARK: - f. Broker restart

    @Test func brokerRestartMidStreamLosesNoAcknowledgedEnvelope() throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 20ms, count: 100 } }
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                keep_alive: 10
                reconnect: { initial_delay: 100ms, max_delay: 1s }
            routes:
              - name: stream
                from: clock.tick
                map: { topic: "stream/{{body.count}}", payload: "n {{body.count}}", qos: 1 }
                type: mqtt.Publish
                to: broker.publish
            """
        )
        let before = try MosquittoSubscriber(broker, topic: "stream/#", qos: 1)
        let router = try MQTTRouter.run(sandbox)
        let early = before.waitForLines(10, timeout: .seconds(20))
        try #require(early.count >= 10, "\(router.standardError)")
        try broker.restart()
        let after = try MosquittoSubscriber(broker, topic: "stream/#", qos: 1)
        let lines = after.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("stream/100 ") }
        #expect(lines.contains { $0.hasPrefix("stream/100 ") }, "\(router.standardError)\n\(broker.currentLogText)")
        #expect(router.stop() == 0, "\(router.standardError)\nbroker log:\n\(broker.logText)")

        let log = router.standardError
        let totals = try #require(RouteTotals.parse(route: "stream", in: log), "\(log)")
        #expect(totals.received == 100 && totals.delivered == 100, "\(totals)")
        #expect(Self.failedDeliveries(log).isEmpty, "\(log)")
        #expect(Self.logLines(log) { $0.contains("router stopped") && $0.contains("drained=true") }.count == 1, "\(log)")
        #expect(Self.logLines(log) { $0.contains("lost") }.count >= 1, "\(log)")
        #expect(Self.logLines(log) { $0.contains("connected to 127.0.0.1") }.count >= 2, "\(log)")
        // After the restart: the latest ticks, in increasing order, ending with the last one.
        let numbers = after.lines.compactMap { Self.number(inTopicOf: $0, prefix: "stream/") }
        #expect(numbers.count == after.lines.count)
        #expect(numbers.last == 100)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "\(numbers)")
        #expect(
            after.lines.allSatisfy { line in Self.number(inTopicOf: line, prefix: "stream/").map { line.hasSuffix(" n \($0)") } ?? false })
    }

    /// SIGTERM while QoS 1 publishes are in flight: the router drains, so the link must still
    /// read the broker's PUBACKs after it stops taking inbound messages, and every envelope the
    /// route took reaches the broker exactly once, in order.
    @Test func sigtermWithPublishesInFlightDrainsThemAll() throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1ms, count: 1000000 } }
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
            routes:
              - name: flood
                from: clock.tick
                map: { topic: "flood/{{body.count}}", payload: "n {{body.count}}", qos: 1 }
                type: mqtt.Publish
                to: broker.publish
            """
        )
        let subscriber = try MosquittoSubscriber(broker, topic: "flood/#", qos: 1)
        let router = try MQTTRouter.run(sandbox)
        #expect(subscriber.waitForLines(200, timeout: .seconds(20)).count >= 200, "\(router.standardError)")
        let status = router.stop()
        let log = router.standardError
        #expect(status == 0, "\(log)")
        #expect(Self.failedDeliveries(log).isEmpty, "\(log)")
        #expect(Self.logLines(log) { $0.contains("router stopped") && $0.contains("drained=true") }.count == 1, "\(log)")
        let totals = try #require(RouteTotals.parse(route: "flood", in: log), "\(log)")
        #expect(totals.delivered == totals.received)
        // Everything the route took reached the broker once, and the subscriber, in order. (The
        // broker's log is read from its pipe, which may lag behind.)
        _ = broker.waitForLog("Received PUBLISH from \(Self.clientID)", count: totals.received)
        #expect(broker.occurrences(of: "Received PUBLISH from \(Self.clientID)") == totals.received)
        let lines = subscriber.waitForLines(totals.received)
        #expect(lines == (1...max(1, totals.received)).map { "flood/\($0) n \($0)" })
    }

    /// SIGTERM while inbound QoS 1 publishes stream in and a small queue holds the link back:
    /// the router exits cleanly, what it took is in the file once and in order, and the broker
    /// got a PUBACK for exactly what was taken (the rest stays the broker's).
    @Test func sigtermDuringABlockedInboundStreamConfirmsExactlyWhatWasTaken() async throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: \(Self.clientID)
                subscriptions: [ { topic: "sensors/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body, fsync: true } }
            routes:
              - name: inbound
                from: broker.messages
                to: out.write
                queue: { size: 8 }
            """
        )
        let router = try MQTTRouter.run(sandbox)
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        // mosquitto_pub -l publishes each line of its input: 2000 QoS 1 messages as fast as it can.
        let input = sandbox.root.appendingPathComponent("lines.txt")
        try (1...2000).map { "m \($0)\n" }.joined().write(to: input, atomically: true, encoding: .utf8)
        let publisher = Process()
        publisher.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        publisher.arguments = broker.clientArguments() + ["-t", "sensors/flood", "-q", "1", "-l"]
        publisher.standardInput = try FileHandle(forReadingFrom: input)
        publisher.standardOutput = FileHandle.nullDevice
        publisher.standardError = FileHandle.nullDevice
        try ChildProcess.start(publisher)
        defer {
            if publisher.isRunning { kill(publisher.processIdentifier, SIGKILL) }
            publisher.waitUntilExit()
        }
        await router.waitUntil("100 lines in out.jsonl") { sandbox.lines(of: "out.jsonl").count >= 100 }
        let status = router.stop()
        let log = router.standardError
        #expect(status == 0, "\(log)")
        #expect(Self.logLines(log) { $0.contains("router stopped") && $0.contains("drained=true") }.count == 1, "\(log)")
        #expect(Self.failedDeliveries(log).isEmpty, "\(log)")
        let totals = try #require(RouteTotals.parse(route: "inbound", in: log), "\(log)")
        let lines = sandbox.lines(of: "out.jsonl")
        #expect(lines.count == totals.received)
        #expect(lines == (1...max(1, totals.received)).map { "\"m \($0)\"" })
        // Every message taken was confirmed to the broker, and no other.
        broker.waitForLog("Client \(Self.clientID) disconnected")
        #expect(broker.occurrences(of: "Received PUBACK from \(Self.clientID)") == lines.count, "\(broker.currentLogText.suffix(3000))")
    }

    // MARK: - g. Will

    @Test func killedRouterLeavesItsWill() throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(Self.willYAML(broker: broker, sandbox: sandbox))
        let subscriber = try MosquittoSubscriber(broker, topic: "status/#", qos: 1)
        let router = try MQTTRouter.run(sandbox)
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        #expect(broker.logText.contains("Will message specified"), "\(broker.logText)")
        #expect(subscriber.lines.isEmpty)
        kill(router.process.processIdentifier, SIGKILL)
        let lines = subscriber.waitForLines(1)
        #expect(lines == ["status/switchyard offline"], "\(broker.logText)")
        router.waitForExit()
    }

    @Test func stoppedRouterLeavesNoWill() throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(Self.willYAML(broker: broker, sandbox: sandbox))
        let subscriber = try MosquittoSubscriber(broker, topic: "status/#", qos: 1)
        let router = try MQTTRouter.run(sandbox)
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        #expect(router.stop() == 0, "\(router.standardError)")
        broker.waitForLog("Client \(Self.clientID) disconnected")
        // A marker after the disconnect: a will would have come before it.
        try broker.publish(topic: "status/marker", message: "done", qos: 1)
        #expect(subscriber.waitForLines(1) == ["status/marker done"], "\(broker.logText)")
        #expect(broker.logText.contains("Received DISCONNECT from \(Self.clientID)"), "\(broker.logText)")
    }

    static func willYAML(broker: Mosquitto, sandbox: Sandbox) -> String {
        """
        instances:
          broker:
            plugin: mqtt
            url: "\(broker.url)"
            client_id: \(clientID)
            keep_alive: 10
            will: { topic: "status/switchyard", payload: "offline", qos: 1, retain: false }
            subscriptions: [ { topic: "sensors/#", qos: 1 } ]
          out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
        routes:
          - name: inbound
            from: broker.messages
            to: out.write
        """
    }

    // MARK: - h. Malformed or stalled broker

    @Test func aBrokerThatStopsReadingHoldsTheRouteBackInsteadOfBufferingWithoutBound() async throws {
        // CONNACK (MQTT 5, success, no properties), then the broker reads nothing more.
        let fake = try FakeBroker(reply: [0x20, 0x03, 0x00, 0x00, 0x00], readsAfterReply: false)
        let sandbox = try MQTTRouter.sandbox()
        let line = String(repeating: "x", count: 200)
        try sandbox.writeRoutes(
            """
            instances:
              flood: { plugin: core, subprocess: { command: [yes, "\(line)"] } }
              broker:
                plugin: mqtt
                url: "mqtt://127.0.0.1:\(fake.port)"
                client_id: \(Self.clientID)
                keep_alive: 0
                publish: { topic: flood, qos: 0 }
            routes:
              - name: flood
                from: flood.stdout
                to: broker.publish
                queue: { size: 8 }
            """
        )
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, extra: ["--drain-timeout", "1s"])
        await router.waitUntil("the link to report a stalled socket") {
            (try? MetricsExposition.pluginMetric("mqtt_write_stalls_total", instance: "broker", admin: admin)) ?? 0 >= 1
        }
        await router.waitUntil("the stall in the log") { router.standardError.contains("the broker is not reading fast enough") }
        // The link answers "full" and the route's worker waits for room …
        let fullAnswers = "switchyard_route_sink_full_total{route=\"flood\"}"
        let taken = "switchyard_port_envelopes_total{instance=\"broker\",port=\"publish\",direction=\"sink\"}"
        await router.waitUntil("the link to answer full") { (try? MetricsExposition.sample(fullAnswers, admin: admin)) ?? 0 >= 1 }
        let takenWhileFull = try #require(try MetricsExposition.sample(taken, admin: admin))
        let fullSoFar = try #require(try MetricsExposition.sample(fullAnswers, admin: admin))
        // … and keeps being told so. The link may take a little more when the kernel grows the
        // socket's buffers (loopback autotuning), but never more than those buffers and its own
        // 1 MiB of unsent bytes can hold: nothing piles up in the router.
        await router.waitUntil("ten more full answers") {
            (try? MetricsExposition.sample(fullAnswers, admin: admin)) ?? 0 >= fullSoFar + 10
        }
        let socketBytes = Self.kernelBufferLimit("tcp_wmem") + Self.kernelBufferLimit("tcp_rmem") + 1_048_576
        let takenSince = try #require(try MetricsExposition.sample(taken, admin: admin)) - takenWhileFull
        #expect(takenSince <= Double(socketBytes / line.utf8.count), "\(takenSince) more publishes taken while full")
        #expect(Self.logLines(router.standardError) { $0.contains("the broker is not reading fast enough") }.count == 1)
        // Stopping while the broker still does not read: the drain times out (exit status 3)
        // and the DISCONNECT that cannot be written does not hold the router up.
        #expect(router.stop() == 3, "\(router.standardError)")
        #expect(router.logged("drain timed out"))
        fake.stop()
    }

    /// The largest buffer the kernel may give one TCP socket (the third field of
    /// /proc/sys/net/ipv4/tcp_wmem or tcp_rmem).
    static func kernelBufferLimit(_ name: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/\(name)", encoding: .utf8)) ?? ""
        return text.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) } ?? 4_194_304
    }

    @Test(arguments: ["5", "3.1.1"])
    func garbageInsteadOfConnAckIsLoggedAndTheLinkReconnects(version: String) async throws {
        // 0xF0 claims an AUTH packet (reserved in 3.1.1); its remaining length runs past the
        // four bytes a variable byte integer may have.
        let fake = try FakeBroker(reply: [0xF0, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F])
        let sandbox = try MQTTRouter.sandbox()
        let versionYAML = version == "5" ? "5" : "\"\(version)\""
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "mqtt://127.0.0.1:\(fake.port)"
                version: \(versionYAML)
                client_id: \(Self.clientID)
                keep_alive: 10
                reconnect: { initial_delay: 100ms, max_delay: 500ms }
                subscriptions: [ { topic: "sensors/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: inbound
                from: broker.messages
                to: out.write
            """
        )
        let router = try MQTTRouter.run(sandbox)
        let isDecodingError = { (line: String) -> Bool in
            line.contains("packet") && (line.contains("malformed") || line.contains("protocol violation") || line.contains("too large"))
        }
        await router.waitUntil("a decoding error in the log") {
            !Self.logLines(router.standardError, level: "error", where: isDecodingError).isEmpty
        }
        await router.waitUntil("a second connection to the fake broker") { fake.connections >= 2 }
        #expect(router.process.isRunning)
        // What the router sent first on every connection was a CONNECT.
        #expect(fake.firstBytes.allSatisfy { $0 == 0x10 }, "\(fake.firstBytes)")
        #expect(router.stop() == 0, "\(router.standardError)")
        fake.stop()
    }
}

/// A TCP listener on a free loopback port that answers whatever it is sent first with fixed
/// bytes and then keeps the connection open until the peer closes it. Counts connections.
/// With `readsAfterReply: false` it reads nothing more after its reply: a stalled broker.
final class FakeBroker: @unchecked Sendable {
    // `state` is only touched under `lock`; `listener` and `reply` are immutable.
    private struct State {
        var connections = 0
        var firstBytes: [UInt8] = []
        /// Everything the peers sent, over every connection (the first 64 KiB).
        var received: [UInt8] = []
        var stopped = false
        var threads = 0
    }

    let port: UInt16
    let reply: [UInt8]
    let readsAfterReply: Bool
    private let listener: Int32
    private let lock = NSLock()
    private var state = State()

    init(reply: [UInt8], readsAfterReply: Bool = true) throws {
        self.reply = reply
        self.readsAfterReply = readsAfterReply
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw SandboxError("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = LoopbackPort.loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
            }
        }
        guard bound, listen(socket, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(socket)
            throw SandboxError("fake broker cannot listen: \(reason)")
        }
        listener = socket
        port = UInt16(bigEndian: address.sin_port)
        lock.withLock { state.threads += 1 }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "fake broker"
        thread.start()
    }

    deinit { stop() }

    /// Connections accepted so far.
    var connections: Int { lock.withLock { state.connections } }

    /// The first byte each connection sent.
    var firstBytes: [UInt8] { lock.withLock { state.firstBytes } }

    /// The bytes the peers sent, over every connection (the first 64 KiB).
    var received: [UInt8] { lock.withLock { state.received } }

    private var stopped: Bool { lock.withLock { state.stopped } }

    /// Stops accepting, closes every connection and waits (bounded) for the threads.
    func stop() {
        lock.withLock { state.stopped = true }
        let deadline = ContinuousClock.now + .seconds(5)
        while lock.withLock({ state.threads }) > 0, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
    }

    private func acceptLoop() {
        defer {
            close(listener)
            lock.withLock { state.threads -= 1 }
        }
        while !stopped {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            lock.withLock {
                state.connections += 1
                state.threads += 1
            }
            let thread = Thread { [self] in serve(client) }
            thread.name = "fake broker connection"
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        defer {
            close(client)
            lock.withLock { state.threads -= 1 }
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var answered = false
        while !stopped {
            // Stalled: read nothing more until stop().
            let events = answered && !readsAfterReply ? 0 : Int16(POLLIN)
            var ready = pollfd(fd: client, events: events, revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return }  // the peer closed (or failed): done
            lock.withLock { state.received += buffer.prefix(min(count, 65536 - state.received.count)) }
            if !answered {
                answered = true
                let first = buffer[0]
                lock.withLock { state.firstBytes.append(first) }
                _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }
    }
}
