import Foundation
import Testing

@testable import IntegrationSupport

/// Scripts between real peers: an MQTT JSON sensor stream through a script to SIPp as a SIP
/// MESSAGE of plain text, and a BLE board's bytes (the BlueZ double) through the
/// transformations example's script to Mosquitto as numbers.
@Suite(.timeLimit(.minutes(2)))
struct ScriptPeerTests {
    @Test func anMQTTReadingBecomesASIPMessageOfText() async throws {
        let broker = try Mosquitto()
        let uas = try SIPp(scenario: SIPp.uasScenario())
        let sandbox = try Sandbox()
        for plugin in ["mqtt", "sip"] { try sandbox.installPlugin(plugin) }
        let sipPort = try LoopbackPort.freeForUDPAndTCP()
        try sandbox.writeRoutes(
            """
            instances:
              sensors:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: script-sensors
                subscriptions: [ { topic: "sensors/+/celsius", qos: 1 } ]
              pager:
                plugin: sip
                identity: { impu: "sip:alice@example.test" }
                listen: { host: 127.0.0.1, port: \(sipPort) }
                send: { to: "sip:bob@127.0.0.1:\(uas.port)" }
            routes:
              - name: reading-to-text
                from: sensors.messages
                script: |
                  local room = envelope.subject:match("^sensors/([^/]+)/celsius$")
                  local celsius = envelope.body.celsius
                  return { body = string.format("%s is at %.1f °F", room, celsius * 9 / 5 + 32), headers = {} }
                to: pager.send
            """)
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox)
        broker.waitForLog("Sending SUBACK to script-sensors")
        // A reading the script cannot compute fails that envelope only (logged with the line).
        try broker.publish(topic: "sensors/attic/celsius", message: #"{"celsius": "warm"}"#, qos: 1)
        await router.waitUntil("the failure logged") { router.standardError.contains("script failed on an envelope") }
        #expect(router.logged("main.yaml:18: attempt to mul a 'string' with a 'number'"), "\(router.standardError)")
        try broker.publish(topic: "sensors/kitchen/celsius", message: #"{"celsius": 21.5}"#, qos: 1)
        #expect(uas.waitForExit() == 0, "\(uas.diagnostics)\n\(router.standardError)")
        let seen = uas.messages
        #expect(seen.contains("kitchen is at 70.7 °F"), "\(seen)")
        #expect(seen.contains("Content-Type: text/plain; charset=utf-8"), "\(seen)")
        #expect(router.stop() == 0)
        #expect(RouteTotals.counter("script_errors", route: "reading-to-text", in: router.standardError) == 1, "\(router.standardError)")
        #expect(RouteTotals.counter("script_calls", route: "reading-to-text", in: router.standardError) == 2)
    }

    @Test func theBLEDecodeExampleTurnsABoardsBytesIntoMQTTNumbers() async throws {
        let double = try BlueZDouble()
        defer { double.stop() }
        try SlateBoard.add(to: double)
        let broker = try Mosquitto()
        let sandbox = try Sandbox()
        for plugin in ["ble", "mqtt"] { try sandbox.installPlugin(plugin) }
        let example = BuildProducts.packageRoot.appendingPathComponent("examples/transformations/ble-decode.yaml")
        try sandbox.writeRoutes(
            try String(contentsOf: example, encoding: .utf8)
                .replacingOccurrences(of: "${MQTT_URL:-mqtt://127.0.0.1:1883}", with: broker.url)
                .replacingOccurrences(of: "AA:BB:CC:DD:EE:02", with: SlateBoard.address))
        let subscriber = try MosquittoSubscriber(broker, topic: "ble/+/climate", qos: 1)
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root,
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": double.address])
        await router.waitUntil("connected to the board") { router.occurrences(of: "connected to \(SlateBoard.address)") == 1 }
        // 22.58 °C as int16 0x08d2 and 50.00 % as uint16 0x1388, little-endian.
        #expect(try double.control("org.bluez.Mock.Notify", [SlateBoard.button1Path, "[0xd2, 0x08, 0x88, 0x13]"]).contains("true"))
        let lines = subscriber.waitForLines(1)
        let line = try #require(lines.first, "\(router.standardError)")
        #expect(line.hasPrefix("ble/\(SlateBoard.address)/climate "), "\(line)")
        let payload = try #require(line.split(separator: " ", maxSplits: 1).last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
        #expect(object["celsius"] as? Double == 22.58)
        #expect(object["humidity"] as? Double == 50)
        #expect(router.stop() == 0)
    }
}
