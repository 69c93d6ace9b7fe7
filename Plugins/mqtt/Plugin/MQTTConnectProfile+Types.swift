import SwitchyardCore

/// The JSON formats of the MQTT Connect iOS app as envelope types (JSON Schemas of the body).
///
/// Based on the app's documentation (github.com/cedalo/ios-docs, README "JSON Formats"): the
/// dialog message, the settings message, the sensor values and the QR-code content are
/// documented there, with the session object ("attached to every message published", set by a
/// top-level `SessionObject` in any message to the phone). Not documented, and so modelled by
/// analogy and kept open: NFC content (`NFCContent`, like `QRContent`), camera pictures
/// (`Picture`, base64) and dialog replies (`ReplyObject` of the chosen option, `InputFields`
/// by key).
///
/// What is sent to the phone (`DialogMessage`, `Settings`) is closed: an unknown key is a
/// mistake the app would silently ignore. What the phone sends is open: a newer app may add
/// fields, and a route's `when:` may read fields of other payloads on the same port.
extension MQTTConnectProfile {
    static let dialogMessageType = "mqttconnect.DialogMessage"
    static let settingsType = "mqttconnect.Settings"
    static let sensorValuesType = "mqttconnect.SensorValues"
    static let qrCodeType = "mqttconnect.QRCode"
    static let nfcType = "mqttconnect.NFC"
    static let cameraPictureType = "mqttconnect.CameraPicture"
    static let dialogReplyType = "mqttconnect.DialogReply"
    static let settingsReceiptType = "mqttconnect.SettingsReceipt"

    /// Types a route builds for the phone; the plugin checks their bodies before publishing.
    static let outboundTypes = [dialogMessageType, settingsType]
    /// Types the `messages` port emits for what a phone sends (with `mqtt_connect: true`).
    static let inboundTypes = [sensorValuesType, qrCodeType, nfcType, cameraPictureType, dialogReplyType, settingsReceiptType]

    /// Every MQTT Connect type by name, for the manifest.
    static let typeSchemas: [String: JSONValue] = [
        dialogMessageType: dialogMessageSchema,
        settingsType: settingsSchema,
        sensorValuesType: phoneMessage(properties: [:], required: []),
        qrCodeType: phoneMessage(
            properties: ["QRContent": ["type": ["string", "object"], "description": "The code's text, or its JSON when it holds JSON"]],
            required: ["QRContent"]),
        nfcType: phoneMessage(
            properties: ["NFCContent": ["type": ["string", "object"], "description": "The tag's text, or its JSON when it holds JSON"]],
            required: ["NFCContent"]),
        cameraPictureType: phoneMessage(
            properties: ["Picture": ["type": "string", "minLength": 1, "description": "The picture, base64-encoded"]],
            required: ["Picture"]),
        settingsReceiptType: phoneMessage(
            properties: [
                "Settings": [
                    "type": "object",
                    "description":
                        "Every setting after a change, as the app echoes them; temporary: the app restores its own when it disconnects",
                ]
            ],
            required: ["Settings"]),
        dialogReplyType: phoneMessage(
            properties: [
                "ReplyObject": ["type": "object", "description": "The ReplyObject of the option the user chose"],
                "InputFields": ["type": "object", "description": "The input fields' values by their Key"],
            ],
            required: []),
    ]

    // MARK: To the phone

    private static let topicName: JSONValue = [
        "type": "string", "minLength": 1, "pattern": "^[^+#]*$", "description": "An MQTT topic name (no wildcards)",
    ]

    private static let sessionObject: JSONValue = [
        "type": "object",
        "description": "Stored by the app and attached to everything it publishes until replaced",
    ]

    private static let iPhoneID: JSONValue = ["type": "string", "minLength": 1, "description": "The phone the message is for"]

    /// `{"DialogMessage": {...}}`: what the app shows on its "messages" tab.
    static let dialogMessageSchema: JSONValue = [
        "type": "object",
        "additionalProperties": false,
        "required": ["DialogMessage"],
        "properties": [
            "DialogMessage": [
                "type": "object",
                "additionalProperties": false,
                "properties": [
                    "Maintitle": ["type": "string"],
                    "Subtitle": ["type": "string"],
                    "Image": ["type": "string", "description": "An image as a data URL (data:image/jpeg;base64,...)"],
                    "Comment": ["type": "string"],
                    "InputFields": ["type": "array", "items": inputField],
                    "Options": ["type": "array", "items": option],
                    "OptionsMode": ["enum": ["None", "Single", "Multiple"], "description": "How many options the user may choose"],
                    "SwitchToTab": ["enum": ["QR", "NFC", "Camera"], "description": "The tab to switch to after SwitchDelay"],
                    "SwitchDelay": ["type": "integer", "minimum": 0, "description": "Milliseconds before switching tabs"],
                    "AlertCode": ["type": "integer", "minimum": 0, "description": "The alert sound to play"],
                    "FlashDuration": ["type": "number", "minimum": 0, "description": "How long the flashlight flashes"],
                ],
            ],
            "SessionObject": sessionObject,
            "iPhoneID": iPhoneID,
        ],
    ]

    private static let inputField: JSONValue = [
        "type": "object",
        "additionalProperties": false,
        "required": ["Key", "Type"],
        "properties": [
            "Label": ["type": "string"],
            "Key": ["type": "string", "minLength": 1, "description": "The name the value is sent back under"],
            "Type": ["enum": ["NumberField", "TextView", "Switch", "Slider", "Stepper", "TextField"]],
            "DefaultValue": ["type": ["string", "number", "boolean"]],
            "InstantSending": ["type": "boolean", "description": "Send every change at once"],
            // The documentation's last revision spells it InstantSender.
            "InstantSender": ["type": "boolean", "description": "Send every change at once (later spelling)"],
            "Required": ["type": "boolean"],
            "MinimumValue": ["type": "number", "description": "Slider and Stepper"],
            "MaximumValue": ["type": "number", "description": "Slider and Stepper"],
        ],
    ]

    private static let option: JSONValue = [
        "type": "object",
        "additionalProperties": false,
        "required": ["Label"],
        "properties": [
            "Label": ["type": "string", "minLength": 1],
            "Topic": topicName,
            "ReplyObject": ["type": "object", "description": "What the app sends back when the option is chosen"],
        ],
    ]

    /// `{"iPhoneID": ..., "Settings": {...}}`: changes the app's settings until it disconnects.
    static let settingsSchema: JSONValue = [
        "type": "object",
        "additionalProperties": false,
        "required": ["Settings"],
        "properties": [
            "iPhoneID": iPhoneID,
            "SessionObject": sessionObject,
            "Settings": [
                "type": "object",
                "additionalProperties": false,
                "properties": [
                    "SubscribeTopic": [
                        "type": "array", "items": ["type": "string", "minLength": 1], "description": "Topic filters the app subscribes to",
                    ],
                    "PublishTopic": topicName,
                    "OnIncoming": ["type": "boolean", "description": "Send sensor values on every incoming message"],
                    "OnInterval": ["type": "boolean", "description": "Send sensor values every IntervalCycle"],
                    "IntervalOnChange": ["type": "boolean"],
                    "OnThreshold": ["type": "boolean"],
                    "IntervalCycle": ["type": "integer", "minimum": 0, "description": "Milliseconds between sensor messages"],
                    "ThresholdValue": ["type": "number"],
                ],
            ],
        ],
    ]

    // MARK: From the phone

    private static func vector(_ names: [String]) -> JSONValue {
        .object([
            "type": "object",
            "properties": .object(Dictionary(uniqueKeysWithValues: names.map { ($0, ["type": "number"] as JSONValue) })),
        ])
    }

    /// What the app sends about itself and its sensors (every documented payload carries
    /// sensor values), plus `extra`.
    private static func phoneMessage(properties extra: [String: JSONValue], required: [String]) -> JSONValue {
        var properties: [String: JSONValue] = [
            "iPhoneID": ["type": "string"],
            "iPhoneName": ["type": "string"],
            "Model": ["type": "string"],
            "SessionObject": sessionObject,
            "Timestamp": ["type": "number"],
            "Proximity": ["type": "boolean"],
            "Battery": ["type": "number", "minimum": -100, "maximum": 100, "description": "Percent; negative when unknown"],
            "Acceleration": vector(["LinearX", "LinearY", "LinearZ"]),
            "Altitude": vector(["Pressure", "Relative"]),
            "GPS": [
                "type": "object",
                "properties": [
                    "Latitude": ["type": "number", "minimum": -90, "maximum": 90],
                    "Longitude": ["type": "number", "minimum": -180, "maximum": 180],
                    "Altitude": ["type": "number"],
                ],
            ],
            "Gravity": vector(["GravityX", "GravityY", "GravityZ"]),
            "Magneticfield": vector(["AxisX", "AxisY", "AxisZ"]),
            "Orientation": vector(["Roll", "Yaw", "Pitch"]),
            "Rotation": vector(["RotationRoll", "RotationYaw", "RotationPitch"]),
            "Beacons": ["type": ["array", "object"]],
        ]
        properties.merge(extra) { _, new in new }
        var schema: [String: JSONValue] = ["type": "object", "properties": .object(properties)]
        if !required.isEmpty { schema["required"] = .array(required.map { .string($0) }) }
        return .object(schema)
    }

    /// Top-level keys that make a phone's payload sensor values.
    static let sensorKeys: Set<String> = [
        "Proximity", "Battery", "Acceleration", "Altitude", "GPS", "Gravity", "Magneticfield", "Orientation", "Rotation", "Beacons",
    ]
}
