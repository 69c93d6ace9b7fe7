import Foundation
import Testing

@testable import IntegrationSupport

/// The Mosquitto harness itself, with Mosquitto's own clients only: if these fail, the MQTT
/// plugin tests cannot be trusted.
@Suite(.timeLimit(.minutes(2)))
struct MosquittoHarnessTests {
    @Test func plainBrokerRoundTrip() throws {
        let broker = try Mosquitto()
        #expect(broker.port != 1883)
        #expect(broker.caFile == nil)
        #expect(broker.url == "mqtt://127.0.0.1:\(broker.port)")
        let subscriber = try MosquittoSubscriber(broker, topic: "harness/#", qos: 1)
        try broker.publish(topic: "harness/a", message: "first", qos: 1)
        try broker.publish(topic: "elsewhere", message: "not for us", qos: 1)
        try broker.publish(topic: "harness/b/c", message: "second message", qos: 0)
        let lines = subscriber.waitForLines(2)
        #expect(lines == ["harness/a first", "harness/b/c second message"], "\(subscriber.errorText)")
        #expect(broker.logText.contains("Opening ipv4 listen socket on port \(broker.port)"))
    }

    @Test func formatAndVersionReachMosquittoSub() throws {
        let broker = try Mosquitto()
        let subscriber = try MosquittoSubscriber(broker, topic: "f/#", qos: 2, version: "mqttv5", format: "%t %q %r %p")
        try broker.publish(topic: "f/x", message: "payload", qos: 2, retain: false, version: "mqttv5")
        #expect(subscriber.waitForLines(1) == ["f/x 2 0 payload"])
        #expect(broker.logText.contains("as \(subscriber.clientID) (p5"))
    }

    @Test func passwordListenerRejectsAWrongPasswordAndAcceptsTheRightOne() throws {
        let broker = try Mosquitto(users: ["alice": "right-Pa55", "bob": "other"])
        let wrong = try broker.publishResult(topic: "t", message: "x", username: "alice", password: "wrong")
        #expect(wrong.status != 0)
        #expect(wrong.output.contains("refused") || wrong.output.contains("not authorised"), "\(wrong.output)")
        let anonymous = try broker.publishResult(topic: "t", message: "x")
        #expect(anonymous.status != 0)
        let subscriber = try MosquittoSubscriber(broker, topic: "t", qos: 1, username: "bob", password: "other")
        try broker.publish(topic: "t", message: "welcome", qos: 1, username: "alice", password: "right-Pa55")
        #expect(subscriber.waitForLines(1) == ["t welcome"])
    }

    @Test func tlsListenerWorksWithTheGeneratedCA() throws {
        let broker = try Mosquitto(tls: true)
        let caFile = try #require(broker.caFile)
        #expect(FileManager.default.fileExists(atPath: caFile))
        #expect(broker.url == "mqtts://127.0.0.1:\(broker.port)")
        // clientArguments adds --cafile for a TLS broker.
        let subscriber = try MosquittoSubscriber(broker, topic: "secure/#", qos: 1)
        try broker.publish(topic: "secure/one", message: "over tls", qos: 1)
        #expect(subscriber.waitForLines(1) == ["secure/one over tls"])
        // The certificate names localhost too.
        let byName = try Tool.run(
            "/usr/bin/mosquitto_pub", ["-h", "localhost", "-p", String(broker.port), "--cafile", caFile, "-t", "secure/two", "-m", "x"])
        #expect(byName.status == 0, "\(byName.output)")
        // Without the CA (system CAs only) the handshake fails; plain MQTT on a TLS port too.
        let systemCAs = try Tool.run(
            "/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", String(broker.port), "--capath", "/etc/ssl/certs", "-t", "t", "-m", "x"])
        #expect(systemCAs.status != 0)
        let plain = try Tool.run("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", String(broker.port), "-t", "t", "-m", "x"])
        #expect(plain.status != 0)
    }

    @Test func restartKeepsThePortAndForgetsSessions() throws {
        let broker = try Mosquitto()
        let port = broker.port
        let before = try MosquittoSubscriber(broker, topic: "r/#", qos: 1)
        try broker.publish(topic: "r/1", message: "before", qos: 1)
        #expect(before.waitForLines(1) == ["r/1 before"])
        try broker.restart()
        #expect(broker.port == port)
        #expect(broker.isRunning)
        #expect(LoopbackPort.acceptsConnections(port))
        // A new subscriber works on the same port. (The old one lost its connection; libmosquitto
        // may reconnect it by itself, so it is not looked at.)
        let after = try MosquittoSubscriber(broker, topic: "r/#", qos: 1)
        try broker.publish(topic: "r/2", message: "after", qos: 1)
        #expect(after.waitForLines(1) == ["r/2 after"])
        #expect(broker.logText.contains("Sending SUBACK to \(before.clientID)"))
        #expect(broker.stop() == 0)
        #expect(!broker.isRunning)
        #expect(!LoopbackPort.acceptsConnections(port))
    }
}
