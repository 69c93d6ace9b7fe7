import Foundation
import Testing

@testable import IntegrationSupport

/// The MQTT Connect profile against the app's own documentation (cedalo/ios-docs, README.md at
/// f06f13e): its Settings, QR-code and dialog messages exactly as the seed prints them, the
/// settings receipt, QR and NFC content kept as JSON or text, camera pictures in base64, and
/// a session object set by the router that the next message and the answer carry.
@Suite(.timeLimit(.minutes(2)))
struct MQTTConnectSeedTests {
    /// The seed's "Settings Message [RECEIVES]", verbatim.
    static let settings = #"""
        {
            "iPhoneID": "9A093D8F-D1A2-4E2B-8E20-04DA0897578A",
            "Settings": {
                "SubscribeTopic": [
                    "hello/world",
                    "hello/mars"
                ],
                "PublishTopic": "cedalo/iPhone",
                "OnIncoming": false,
                "OnInterval": false,
                "IntervalOnChange": false,
                "OnThreshold": false,
                "IntervalCycle": 500,
                "ThresholdValue": 100
            }
        }
        """#

    /// The seed's "QR-Code Content [SENDS]", verbatim.
    static let qrCode = #"""
        {
            "iPhoneID": "9A093D8F-D1A2-4E2B-8E20-04DA0897578A",
            "iPhoneName": "Cedalo iPhone",
            "Model": "iPhone8,4",
            "QRContent": "cedalo.com",
            "Rotation": {
                "RotationRoll": 3,
                "RotationPitch": -2,
                "RotationYaw": 2
            },
            "Acceleration": {
                "LinearX": 0,
                "LinearY": 0,
                "LinearZ": -1
            },
            "Proximity": false,
            "GPS": {
                "Altitude": 269.8218,
                "Latitude": 47.9942,
                "Longitude": 7.8397
            },
            "Magneticfield": {
                "AxisX": 0,
                "AxisY": 0,
                "AxisZ": 0
            },
            "Orientation": {
                "Yaw": 0,
                "Pitch": 53,
                "Roll": -4
            },
            "Battery": 50,
            "Gravity": {
                "GravityX": -2,
                "GravityY": -45,
                "GravityZ": -34
            }
        }
        """#

    /// The seed's "Dialog Message [RECEIVES]", verbatim: `OptionsMode` and `SwitchToTab` hold
    /// the lists of choices ("None/Single/Multiple", "QR/NFC/Camera"), not values.
    static let dialog = #"""
        {
            "DialogMessage": {
                "Maintitle": "Sample Maintitle",
                "Subtitle": "Sample Subtitle",
                "Image": "data:image/jpeg;base64…",
                "Comment": "This is a  sample comment",
                "InputFields": [
                    {
                        "Label": "Alter",
                        "Key": "Age",
                        "Type": "NumberField",
                        "DefaultValue": "42",
                        "InstantSender":true,
                        "Required":false
                    },
                    {
                        "Label": "Text",
                        "Key": "Text",
                        "Type": "TextView",
                        "DefaultValue": "Don't panic!",
                        "InstantSender":false,
                        "Required":false
                    },
                    {
                        "Label": "Brille",
                        "Key": "Glasses",
                        "Type": "Switch",
                        "DefaultValue": "False",
                        "InstantSender":false,
                        "Required":false
                    },
                    {
                        "Label": "Liter",
                        "Key": "Liter",
                        "Type": "Slider",
                        "MinimumValue":0,
                        "MaximumValue":1,
                        "DefaultValue": 0.5,
                        "InstantSender":false,
                        "Required":false
                    },
                    {
                        "Label": "Monitore",
                        "Key": "Displays",
                        "Type": "Stepper",
                        "MinimumValue":1,
                        "MaximumValue":5,
                        "DefaultValue":2,
                        "InstantSender":false,
                        "Required":false
                    },
                    {
                        "Label": "Name",
                        "Key": "Name",
                        "Type": "TextField",
                        "DefaultValue": "Kristian",
                        "InstantSender":false,

                        "Required":true
                    }
                ],
                "Options": [
                    {
                        "Label": "SampleOption1",
                        "Topic": "optional/topic/toSend/replyTo/ifnot/set/use/default",
                        "ReplyObject": {
                            "TestAttr1": {
                                "Testattr11": "",
                                "Testattr12": ""
                            },
                            "TestAttr2": {}
                        }
                    },
                    {
                        "Label": "SampleOption2",
                        "ReplyObject": {
                            "TestAttr3": {
                                "Testattr31": "",
                                "Testattr32": ""
                            },
                            "TestAttr4": {}
                        }
                    },
                    {
                        "Label": "SampleOption3",
                        "ReplyObject": {
                            "TestAttr5": {},
                            "TestAttr6": {
                                "TestAttr7": ""
                            }
                        }
                    }
                ],
                "OptionsMode": "None/Single/Multiple",
                "SwitchToTab": "QR/NFC/Camera",
                "SwitchDelay": 1000,
                "AlertCode": 23,
                "FlashDuration": 0
            }
        }
        """#

    static let phoneID = "9A093D8F-D1A2-4E2B-8E20-04DA0897578A"

    /// A JSON text with one member replaced (or added) at the top level.
    static func replacing(_ json: String, _ key: String, with value: Any) -> String {
        var object = MQTTConnectTests.object(json) ?? [:]
        object[key] = value
        return String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }

    /// A router between an office side (`office/settings` and `office/dialog…` pass their JSON
    /// on to the phone as `mqttconnect.Settings` and `mqttconnect.DialogMessage`) and the phones
    /// (`mqtt_connect: true`: they publish on `phone/out`, on `cedalo/iPhone` once the seed's
    /// settings told them to, and answer on the seed option's topic); what phones send is
    /// recorded in phones.jsonl.
    static func start(_ broker: Mosquitto, _ sandbox: Sandbox) throws -> RouterProcess {
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
                mqtt_connect: true
                subscriptions:
                  - { topic: "phone/out", qos: 1 }
                  - { topic: "cedalo/iPhone", qos: 1 }
                  - { topic: "optional/topic/toSend/replyTo/ifnot/set/use/default", qos: 1 }
                publish: { topic: "phone/in", qos: 1 }
              out: { plugin: core, file: { path: "\(sandbox.path("phones.jsonl"))" } }
            routes:
              - name: settings
                from: office.messages
                when: subject == "office/settings"
                map: { iPhoneID: "{{body.iPhoneID}}", Settings: "{{body.Settings}}" }
                type: mqttconnect.Settings
                to: phones.publish
              # A dialog as it comes; for a phone; for a phone with a session object.
              - name: dialog
                from: office.messages
                when: subject == "office/dialog"
                map: { DialogMessage: "{{body.DialogMessage}}" }
                type: mqttconnect.DialogMessage
                to: phones.publish
              - name: dialog-to
                from: office.messages
                when: subject == "office/dialog-to"
                map: { iPhoneID: "{{body.iPhoneID}}", DialogMessage: "{{body.DialogMessage}}" }
                type: mqttconnect.DialogMessage
                to: phones.publish
              - name: dialog-session
                from: office.messages
                when: subject == "office/dialog-session"
                map: { iPhoneID: "{{body.iPhoneID}}", DialogMessage: "{{body.DialogMessage}}", SessionObject: "{{body.SessionObject}}" }
                type: mqttconnect.DialogMessage
                to: phones.publish
              - { name: record, from: phones.messages, to: out.write }
            """)
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        broker.waitForLog("Sending SUBACK to office")
        broker.waitForLog("Sending SUBACK to phones")
        return router
    }

    /// The recorded phone messages, waiting for `count`.
    static func recorded(_ sandbox: Sandbox, _ router: RouterProcess, count: Int) async throws -> [[String: Any]] {
        await router.waitUntil("\(count) phone messages recorded") { sandbox.lines(of: "phones.jsonl").count >= count }
        return try sandbox.jsonLines(of: "phones.jsonl")
    }

    @Test func theSeedsSettingsGoOutAsTheyAreAndTheReceiptIsTyped() async throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTConnectTests.sandbox()
        let phone = try MosquittoSubscriber(broker, topic: "phone/in", qos: 1, format: "%p")
        let router = try Self.start(broker, sandbox)

        try broker.publish(topic: "office/settings", message: Self.settings, qos: 1)
        let sent = try #require(phone.waitForLines(1).first, "\(router.standardError)")
        #expect(MQTTConnectTests.same(MQTTConnectTests.object(sent), MQTTConnectTests.object(Self.settings)), "\(sent)")

        // The receipt: every setting after the change, on the new PublishTopic, with the
        // phone's session object. (Temporary: the app restores its own settings when it
        // disconnects; nothing is sent then.)
        let receipt = Self.replacing(Self.settings, "SessionObject", with: ["sheet": "S1"])
        try broker.publish(topic: "cedalo/iPhone", message: receipt, qos: 1)
        let message = try await #require(try Self.recorded(sandbox, router, count: 1).first)
        #expect(message["type"] as? String == "mqttconnect.SettingsReceipt", "\(message)")
        #expect(message["subject"] as? String == "cedalo/iPhone")
        #expect((message["headers"] as? [String: String])?["mqttconnect.iphone_id"] == Self.phoneID)
        #expect(MQTTConnectTests.same(message["session"], ["sheet": "S1"]))
        #expect(MQTTConnectTests.same(message["body"], MQTTConnectTests.object(receipt)), "\(message)")

        // The next settings message carries the session object the phone attached.
        try broker.publish(topic: "office/settings", message: Self.settings, qos: 1)
        let second = try #require(MQTTConnectTests.object(phone.waitForLines(2).last ?? ""))
        #expect(MQTTConnectTests.same(second["SessionObject"], ["sheet": "S1"]), "\(second)")
        #expect(router.stop() == 0, "\(router.standardError)")
        #expect(MQTTConnectTests.failedDeliveries(router.standardError).isEmpty, "\(router.standardError)")
    }

    @Test func qrAndNFCContentStaysJSONOrTextAndPicturesAreBase64() async throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTConnectTests.sandbox()
        let router = try Self.start(broker, sandbox)
        let picture = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAA=="
        var nfc = MQTTConnectTests.object(Self.qrCode) ?? [:]
        nfc["QRContent"] = nil
        // The seed's QR message as printed, with JSON content, and with text that looks like JSON.
        var payloads: [(String, String, Any)] = [
            (Self.qrCode, "mqttconnect.QRCode", "cedalo.com"),
            (Self.replacing(Self.qrCode, "QRContent", with: ["room": "R1", "seat": 4]), "mqttconnect.QRCode", ["room": "R1", "seat": 4]),
            (Self.replacing(Self.qrCode, "QRContent", with: #"{"room":"R1"}"#), "mqttconnect.QRCode", #"{"room":"R1"}"#),
        ]
        // The same phone's NFC tags (text and JSON) and a picture, built on its QR message.
        for content in ["Hello NFC", ["tag": "door-3"]] as [Any] {
            var object = nfc
            object["NFCContent"] = content
            payloads.append(
                (String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self), "mqttconnect.NFC", content))
        }
        var camera = nfc
        camera["Picture"] = picture
        payloads.append(
            (String(decoding: try JSONSerialization.data(withJSONObject: camera), as: UTF8.self), "mqttconnect.CameraPicture", picture))
        for (payload, _, _) in payloads { try broker.publish(topic: "phone/out", message: payload, qos: 1) }

        let recorded = try await Self.recorded(sandbox, router, count: payloads.count)
        #expect(recorded.compactMap { $0["type"] as? String } == payloads.map(\.1), "\(recorded)")
        for (message, expected) in zip(recorded, payloads) {
            let body = message["body"] as? [String: Any] ?? [:]
            let key = expected.1 == "mqttconnect.NFC" ? "NFCContent" : expected.1 == "mqttconnect.CameraPicture" ? "Picture" : "QRContent"
            // JSON content is an object; text that looks like JSON stays text.
            #expect(MQTTConnectTests.same(body[key], expected.2), "\(key): \(body[key] ?? "nil")")
            #expect((message["headers"] as? [String: String])?["mqttconnect.iphone_id"] == Self.phoneID)
        }
        let shot = try #require((recorded.last?["body"] as? [String: Any])?["Picture"] as? String)
        #expect(Data(base64Encoded: shot).map { Array($0.prefix(3)) } == [0xFF, 0xD8, 0xFF], "a JPEG, base64-encoded")
        #expect(router.stop() == 0, "\(router.standardError)")
    }

    @Test func theSeedsDialogIsCheckedAndASessionObjectSetByTheRouterRoundTrips() async throws {
        let broker = try Mosquitto()
        let sandbox = try MQTTConnectTests.sandbox()
        let phone = try MosquittoSubscriber(broker, topic: "phone/in", qos: 1, format: "%p")
        let router = try Self.start(broker, sandbox)

        // As printed, the seed's dialog lists the choices where one belongs: refused, counted,
        // not published.
        try broker.publish(topic: "office/dialog", message: Self.dialog, qos: 1)
        await router.waitUntil("the refusal") { !MQTTConnectTests.failedDeliveries(router.standardError).isEmpty }
        let refusal = MQTTConnectTests.failedDeliveries(router.standardError).joined()
        #expect(refusal.contains("DialogMessage.OptionsMode must be one of"), "\(refusal)")
        #expect(refusal.contains("DialogMessage.SwitchToTab must be one of"), "\(refusal)")

        // With one choice each, it goes to the phone as it is, with the router's session object.
        var message = MQTTConnectTests.object(Self.dialog)?["DialogMessage"] as? [String: Any] ?? [:]
        message["OptionsMode"] = "Single"
        message["SwitchToTab"] = "QR"
        let session: [String: Any] = ["Sheet": "Doorbell", "Step": 1]
        let dialog: [String: Any] = ["DialogMessage": message, "iPhoneID": Self.phoneID, "SessionObject": session]
        let text = String(decoding: try JSONSerialization.data(withJSONObject: dialog), as: UTF8.self)
        try broker.publish(topic: "office/dialog-session", message: text, qos: 1)
        let first = try #require(MQTTConnectTests.object(phone.waitForLines(1).first ?? ""))
        #expect(MQTTConnectTests.same(first, dialog), "\(first)")

        // The app replaced its session object with the router's: the next dialog carries it.
        let next: [String: Any] = ["DialogMessage": ["Maintitle": "Still there?"], "iPhoneID": Self.phoneID]
        try broker.publish(
            topic: "office/dialog-to", message: String(decoding: try JSONSerialization.data(withJSONObject: next), as: UTF8.self), qos: 1)
        let second = try #require(MQTTConnectTests.object(phone.waitForLines(2).last ?? ""))
        #expect(MQTTConnectTests.same(second["SessionObject"], session), "\(second)")

        // The answer, on the option's topic, with the input fields by their keys and the session.
        let answer = #"""
            {"iPhoneID": "9A093D8F-D1A2-4E2B-8E20-04DA0897578A",
             "ReplyObject": {"TestAttr1": {"Testattr11": "", "Testattr12": ""}, "TestAttr2": {}},
             "InputFields": {"Age": "42", "Text": "Don't panic!", "Glasses": "False", "Liter": 0.5, "Displays": 2, "Name": "Kristian"},
             "SessionObject": {"Sheet": "Doorbell", "Step": 1}}
            """#
        try broker.publish(topic: "optional/topic/toSend/replyTo/ifnot/set/use/default", message: answer, qos: 1)
        let reply = try await #require(try Self.recorded(sandbox, router, count: 1).first)
        #expect(reply["type"] as? String == "mqttconnect.DialogReply", "\(reply)")
        #expect(MQTTConnectTests.same(reply["session"], session), "\(reply)")
        #expect(MQTTConnectTests.same((reply["body"] as? [String: Any])?["InputFields"], MQTTConnectTests.object(answer)?["InputFields"]))
        #expect(router.stop() == 0, "\(router.standardError)")
        #expect(MQTTConnectTests.failedDeliveries(router.standardError).count == 1, "only the seed's dialog as printed")
    }
}
