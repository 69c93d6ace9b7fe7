import Foundation
import Testing

@testable import IntegrationSupport

/// The MQTT Connect profile of the `mqtt` plugin end to end: the built `switchyard` with the
/// real plugins against a real Mosquitto per test, `mosquitto_pub` and `MosquittoSubscriber`
/// playing the phone running the app. Every wait is bounded.
@Suite(.timeLimit(.minutes(2)))
struct MQTTConnectTests {
    /// `examples/mqtt-connect/routes.yaml`.
    static let example = BuildProducts.packageRoot.appendingPathComponent("examples/mqtt-connect/routes.yaml").path

    /// A sandbox with `core` and `mqtt` installed.
    static func sandbox() throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("mqtt")
        return sandbox
    }

    /// A JSON object from one line of text.
    static func object(_ text: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }

    /// Whether two JSON values (as `JSONSerialization` gives them) are equal.
    static func same(_ lhs: Any?, _ rhs: Any?) -> Bool {
        guard let lhs, let rhs else { return lhs == nil && rhs == nil }
        guard let left = canonical(lhs) else { return false }
        return left == canonical(rhs)
    }

    /// A JSON value as text with sorted keys, for comparing.
    static func canonical(_ value: Any) -> Data? {
        try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
    }

    static func failedDeliveries(_ log: String) -> [String] {
        log.split(separator: "\n").map(String.init).filter { $0.contains("delivery failed") }
    }

    // MARK: - The example

    @Test func exampleDoorbellBecomesADialogAndThePhonesAnswerOpensTheDoor() async throws {
        let broker = try Mosquitto()
        let sandbox = try Self.sandbox()
        let environment = ["MQTT_URL": broker.url, "PHONE_ID": "office-iphone"]
        let valid = try RouterProcess.runToExit(
            ["validate", Self.example, "--plugins", sandbox.plugins.path], in: sandbox.root, environment: environment)
        #expect(valid.status == 0, "\(valid.output)\(valid.errors)")

        let phone = try MosquittoSubscriber(broker, topic: "office/phone/in", qos: 1, format: "%p")
        let door = try MosquittoSubscriber(broker, topic: "office/door/command", qos: 1, format: "%p")
        let router = try RouterProcess(
            ["run", Self.example, "--plugins", sandbox.plugins.path], in: sandbox.root, environment: environment)
        broker.waitForLog("Sending SUBACK to switchyard-office")
        broker.waitForLog("Sending SUBACK to switchyard-phones")

        // 1. The phone says hello: sensor values with its session object. The link confirms a
        // QoS 1 publish only after taking it, so the PUBACK means the session is remembered.
        let session: [String: Any] = ["desk": "reception", "shift": "early"]
        let sessionJSON = #"{"desk": "reception", "shift": "early"}"#
        try broker.publish(
            topic: "office/phone/out",
            message: #"{"iPhoneID": "office-iphone", "Battery": 80, "Proximity": false, "SessionObject": \#(sessionJSON)}"#, qos: 1)
        broker.waitForLog("Received PUBACK from switchyard-phones")

        // 2. The doorbell rings; 3. the phone gets the dialog, with its session object.
        try broker.publish(topic: "office/doorbell", message: "Front door", qos: 1)
        let dialogLine = try #require(phone.waitForLines(1).first, "\(router.standardError)")
        let dialog = try #require(Self.object(dialogLine), "\(dialogLine)")
        #expect(dialog["iPhoneID"] as? String == "office-iphone")
        #expect(Self.same(dialog["SessionObject"], session), "\(dialogLine)")
        let message = try #require(dialog["DialogMessage"] as? [String: Any], "\(dialogLine)")
        #expect(message["Maintitle"] as? String == "Someone is at the door")
        #expect(message["Subtitle"] as? String == "Front door")
        #expect(message["OptionsMode"] as? String == "Single")
        let options = try #require(message["Options"] as? [[String: Any]], "\(dialogLine)")
        #expect(options.compactMap { $0["Label"] as? String } == ["Open", "Ignore"])
        #expect(options.allSatisfy { $0["Topic"] as? String == "office/phone/out" }, "\(options)")
        #expect(Self.same(options.first?["ReplyObject"], ["Door": "open"]), "\(options)")
        #expect(Set(dialog.keys) == ["DialogMessage", "SessionObject", "iPhoneID"], "\(dialogLine)")

        // 4. The user taps Open; 5. the door gets the command, the console the answer.
        try broker.publish(
            topic: "office/phone/out",
            message: #"{"iPhoneID": "office-iphone", "ReplyObject": {"Door": "open"}, "SessionObject": \#(sessionJSON)}"#, qos: 1)
        let commandLine = try #require(door.waitForLines(1).first, "\(router.standardError)")
        #expect(Self.same(Self.object(commandLine), ["command": "open", "phone": "office-iphone"]), "\(commandLine)")
        await router.waitUntil("the answer on the console") { router.standardOutput.contains("mqttconnect.DialogReply") }
        #expect(router.stop() == 0, "\(router.standardError)")

        let printed = router.standardOutput.split(separator: "\n").compactMap { Self.object(String($0)) }
        #expect(printed.count == 1, "\(router.standardOutput)")
        let answer = try #require(printed.first)
        #expect(answer["type"] as? String == "mqttconnect.DialogReply")
        #expect((answer["headers"] as? [String: String])?["mqttconnect.iphone_id"] == "office-iphone", "\(answer)")
        #expect(Self.same(answer["session"], session), "\(answer)")
        #expect(Self.failedDeliveries(router.standardError).isEmpty, "\(router.standardError)")
        #expect(phone.lines.count == 1 && door.lines.count == 1)
    }

    // MARK: - Checked before publishing

    @Test func invalidDialogsAndSettingsAreRefusedCountedAndNeverPublished() async throws {
        let broker = try Mosquitto()
        let sandbox = try Self.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              office:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: office
                subscriptions: [ { topic: "office/#", qos: 1 } ]
              phones:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: phones
                publish: { topic: "phone/in", qos: 1 }
            routes:
              - name: ask
                from: office.messages
                when: subject == "office/ask"
                map:
                  DialogMessage:
                    Maintitle: "{{body.title}}"
                    OptionsMode: "{{body.mode}}"
                    Options: [ { Label: "Yes", ReplyObject: { answer: "yes" } } ]
                type: mqttconnect.DialogMessage
                to: phones.publish
              - name: settings
                from: office.messages
                when: subject == "office/settings"
                map:
                  iPhoneID: "{{body.phone}}"
                  Settings: { PublishTopic: "{{body.topic}}", OnInterval: true, IntervalCycle: 500 }
                type: mqttconnect.Settings
                to: phones.publish
            """
        )
        let phone = try MosquittoSubscriber(broker, topic: "phone/in", qos: 1, format: "%p")
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        broker.waitForLog("Sending SUBACK to office")
        broker.waitForLog("as phones (")
        for (title, mode) in [("one", "Single"), ("two", "Maybe"), ("three", "Multiple")] {
            try broker.publish(topic: "office/ask", message: #"{"title": "\#(title)", "mode": "\#(mode)"}"#, qos: 1)
        }
        for topic in ["phone/out", "phone/#"] {
            try broker.publish(topic: "office/settings", message: #"{"phone": "p1", "topic": "\#(topic)"}"#, qos: 1)
        }
        // One after the other through one route each: once "three" and the good settings are
        // out, "two" and the settings with a wildcard topic would have been too.
        let lines = phone.waitForLines(3)
        let published = lines.compactMap(Self.object)
        #expect(published.count == 3, "\(lines)\n\(router.standardError)")
        let titles = published.compactMap { ($0["DialogMessage"] as? [String: Any])?["Maintitle"] as? String }
        #expect(titles == ["one", "three"], "\(lines)")
        let settings = published.compactMap { $0["Settings"] as? [String: Any] }
        #expect(settings.count == 1 && settings.first?["PublishTopic"] as? String == "phone/out", "\(lines)")
        await router.waitUntil("both refusals logged") { Self.failedDeliveries(router.standardError).count >= 2 }
        #expect(router.stop() == 0, "\(router.standardError)")

        let log = router.standardError
        let failures = Self.failedDeliveries(log)
        #expect(failures.count == 2, "\(log)")
        #expect(failures.allSatisfy { $0.contains("reject") }, "\(log)")
        #expect(failures.contains { $0.contains("mqttconnect.DialogMessage") && $0.contains("DialogMessage.OptionsMode must be one of") })
        #expect(failures.contains { $0.contains("mqttconnect.Settings") && $0.contains("Settings.PublishTopic must match") })
        // Counted: the plugin's counter, also in its warning.
        #expect(log.contains("mqttconnect_invalid_total=1"), "\(log)")
        #expect(log.contains("mqttconnect_invalid_total=2"), "\(log)")
        #expect(phone.lines.count == 3, "\(phone.lines)")
        #expect(!phone.lines.contains { $0.contains("Maybe") || $0.contains("phone/#") })
    }

    @Test func validateNamesTheMapPositionOfAMissingOrMisplacedDialogField() throws {
        let sandbox = try Self.sandbox()
        let yaml = """
            instances:
              office: { plugin: mqtt, url: "mqtt://127.0.0.1:1883", subscriptions: [ { topic: "office/doorbell" } ] }
              phones: { plugin: mqtt, url: "mqtt://127.0.0.1:1883", mqtt_connect: true, publish: { topic: "phone/in" } }
            routes:
              - name: broken
                from: office.messages
                map:
                  iPhoneID: "office-iphone"
                  Maintitle: "Someone is at the door"
                type: mqttconnect.DialogMessage
                to: phones.publish
            """
        try sandbox.writeRoutes(yaml)
        let file = sandbox.routes.appendingPathComponent("main.yaml").path
        let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1, "\(result.output)\(result.errors)")
        let errors = result.errors.split(separator: "\n").map(String.init)
        let misplaced = try #require(position(of: "Maintitle", in: yaml))
        #expect(
            errors.contains {
                $0.hasPrefix("\(file):\(misplaced.line):\(misplaced.column): error: ") && $0.contains("mqttconnect.DialogMessage")
                    && $0.contains("Maintitle is not a field of it")
            }, "\(result.errors)")
        let map = try #require(position(of: "iPhoneID", in: yaml))
        #expect(
            errors.contains {
                $0.hasPrefix("\(file):\(map.line):\(map.column): error: ") && $0.contains("required field 'DialogMessage' is not set")
            }, "\(result.errors)")
        #expect(errors.allSatisfy { $0.wholeMatch(of: /^.+:\d+:\d+: error: .+$/) != nil }, "\(result.errors)")

        // The example passes.
        let example = try RouterProcess.runToExit(["validate", Self.example, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(example.status == 0, "\(example.output)\(example.errors)")
        #expect(example.output.hasPrefix("ok:"), "\(example.output)")
    }

    // MARK: - Sessions per phone

    @Test func eachPhoneGetsItsOwnSessionObjectAndInboundPayloadsAreTyped() async throws {
        let broker = try Mosquitto()
        let sandbox = try Self.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              office:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: office
                subscriptions: [ { topic: "office/ask", qos: 1 } ]
              phones:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: phones
                mqtt_connect: true
                subscriptions: [ { topic: "phone/out", qos: 1 } ]
                publish: { topic: "phone/in", qos: 1 }
              out: { plugin: core, file: { path: "\(sandbox.path("phones.jsonl"))" } }
            routes:
              - name: ask
                from: office.messages
                map:
                  iPhoneID: "{{body.phone}}"
                  DialogMessage: { Maintitle: "{{body.title}}" }
                type: mqttconnect.DialogMessage
                to: phones.publish
              - name: thanks
                from: phones.messages
                when: type == "mqttconnect.DialogReply"
                map:
                  DialogMessage: { Maintitle: "Thanks", Comment: "{{body.ReplyObject.answer}}" }
                type: mqttconnect.DialogMessage
                to: phones.publish
                loop: allow
              - name: record
                from: phones.messages
                to: out.write
            """
        )
        let phone = try MosquittoSubscriber(broker, topic: "phone/in", qos: 1, format: "%p")
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        broker.waitForLog("Sending SUBACK to office")
        broker.waitForLog("Sending SUBACK to phones")

        // Two phones introduce themselves, each with its own session object.
        let sensors = #""Battery": 50, "GPS": {"Latitude": 47.99, "Longitude": 7.84}"#
        try broker.publish(
            topic: "phone/out", message: #"{"iPhoneID": "A", \#(sensors), "SessionObject": {"who": "A", "n": 1}}"#, qos: 1)
        let qrCode = #"{"iPhoneID": "B", "iPhoneName": "Bee", "QRContent": "x", "SessionObject": {"who": "B"}}"#
        try broker.publish(topic: "phone/out", message: qrCode, qos: 1)
        broker.waitForLog("Received PUBACK from phones", count: 2)

        for name in ["A", "B", "C"] {
            try broker.publish(topic: "office/ask", message: #"{"phone": "\#(name)", "title": "for \#(name)"}"#, qos: 1)
        }
        let dialogs = phone.waitForLines(3).compactMap(Self.object)
        #expect(dialogs.count == 3, "\(phone.lines)\n\(router.standardError)")
        func dialog(for name: String) -> [String: Any]? { dialogs.first { $0["iPhoneID"] as? String == name } }
        #expect(Self.same(dialog(for: "A")?["SessionObject"], ["who": "A", "n": 1]), "\(dialogs)")
        #expect(Self.same(dialog(for: "B")?["SessionObject"], ["who": "B"]), "\(dialogs)")
        #expect(dialog(for: "C") != nil && dialog(for: "C")?["SessionObject"] == nil, "an unknown phone gets no session: \(dialogs)")

        // Phone A answers with a new session object: the thanks (addressed by the header the
        // answer carries, no iPhoneID in its body) gets the new one.
        try broker.publish(
            topic: "phone/out", message: #"{"iPhoneID": "A", "ReplyObject": {"answer": "yes"}, "SessionObject": {"who": "A", "n": 2}}"#,
            qos: 1)
        let all = phone.waitForLines(4).compactMap(Self.object)
        #expect(all.count == 4, "\(phone.lines)\n\(router.standardError)")
        let thanks = try #require(all.last)
        #expect((thanks["DialogMessage"] as? [String: Any])?["Maintitle"] as? String == "Thanks", "\(thanks)")
        #expect((thanks["DialogMessage"] as? [String: Any])?["Comment"] as? String == "yes", "\(thanks)")
        #expect(Self.same(thanks["SessionObject"], ["who": "A", "n": 2]), "\(thanks)")
        #expect(thanks["iPhoneID"] == nil)

        // And B's is still its own.
        try broker.publish(topic: "office/ask", message: #"{"phone": "B", "title": "again"}"#, qos: 1)
        let again = try #require(phone.waitForLines(5).compactMap(Self.object).last)
        #expect((again["DialogMessage"] as? [String: Any])?["Maintitle"] as? String == "again", "\(again)")
        #expect(Self.same(again["SessionObject"], ["who": "B"]), "\(again)")

        await router.waitUntil("three phone messages recorded") { sandbox.lines(of: "phones.jsonl").count >= 3 }
        #expect(router.stop() == 0, "\(router.standardError)")
        #expect(Self.failedDeliveries(router.standardError).isEmpty, "\(router.standardError)")

        // What the phones sent, typed, with the phone as a header and the session attached.
        let recorded = try sandbox.jsonLines(of: "phones.jsonl")
        let types = recorded.compactMap { $0["type"] as? String }
        #expect(types == ["mqttconnect.SensorValues", "mqttconnect.QRCode", "mqttconnect.DialogReply"], "\(recorded)")
        #expect(recorded.compactMap { ($0["headers"] as? [String: String])?["mqttconnect.iphone_id"] } == ["A", "B", "A"])
        #expect(Self.same(recorded.first?["session"], ["who": "A", "n": 1]), "\(recorded)")
        #expect(Self.same(recorded.last?["session"], ["who": "A", "n": 2]), "\(recorded)")
        #expect(recorded.allSatisfy { $0["contentType"] as? String == "application/json" }, "\(recorded)")
    }
}
