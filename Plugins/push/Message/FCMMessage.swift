public import SwitchyardCore

/// An FCM HTTP v1 `Message`, checked the way FCM checks one: exactly one target, string-only
/// data without reserved keys, a payload of at most 4096 bytes, no unknown fields.
public struct FCMMessage: Sendable, Equatable {
    /// Where the message goes: exactly one of FCM's target fields.
    public enum Target: Sendable, Equatable {
        /// A registration token: one app instance.
        case token(String)
        /// A topic name, without `/topics/`.
        case topic(String)
        /// A topic condition such as `'a' in topics && 'b' in topics`.
        case condition(String)
        /// A Firebase installation id.
        case fid(String)

        /// The field name in the message.
        public var field: String {
            switch self {
            case .token: "token"
            case .topic: "topic"
            case .condition: "condition"
            case .fid: "fid"
            }
        }

        /// The field's value.
        public var value: String {
            switch self {
            case .token(let value), .topic(let value), .condition(let value), .fid(let value): value
            }
        }
    }

    /// How values of `data` that are not strings are treated.
    public enum DataValues: Sendable {
        /// Refused as FCM refuses them (`TYPE_STRING`): the FCM-compatible endpoint.
        case strict
        /// Numbers and Booleans become their JSON text; anything else is refused. For plain
        /// JSON clients and for envelopes sent to FCM.
        case coerced
    }

    /// The target, when there is one (the plain `/push` endpoint allows none).
    public var target: Target?
    /// The data payload: string keys and values.
    public var data: [String: String]
    /// The notification (`title`, `body`, `image`), if any.
    public var notification: [String: String]?
    /// `android`, `apns`, `webpush` and `fcm_options` as written: passed on, not interpreted.
    public var options: [String: JSONValue]

    /// The largest payload FCM accepts, in bytes.
    public static let maximumPayloadSize = 4096
    /// The target fields, in FCM's order.
    public static let targetFields = ["token", "topic", "condition", "fid"]
    static let optionFields: Set<String> = ["android", "apns", "webpush", "fcm_options"]
    static let notificationFields: Set<String> = ["title", "body", "image"]

    /// Creates a message.
    public init(target: Target?, data: [String: String] = [:], notification: [String: String]? = nil, options: [String: JSONValue] = [:]) {
        self.target = target
        self.data = data
        self.notification = notification
        self.options = options
    }

    /// Checks `message` (the value of a send request's `message` field) as FCM would.
    /// - Parameters:
    ///   - requireTarget: whether exactly one target is required (FCM) or at most one (plain clients).
    ///   - context: the field path used in messages (`message`).
    public init(validating message: JSONValue, dataValues: DataValues, requireTarget: Bool = true, context: String = "message")
        throws(FCMError)
    {
        guard let fields = message.objectValue else {
            throw .invalidArgument(
                "Invalid value at '\(context)' (type.googleapis.com/google.firebase.fcm.v1.Message), expected an object, got \(message.typeName)"
            )
        }
        for name in fields.keys.sorted()
        where !Self.targetFields.contains(name) && !Self.optionFields.contains(name) && name != "data" && name != "notification"
            && name != "name"
        {
            throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(name)\" at '\(context)': Cannot find field.")
        }
        let targets = Self.targetFields.filter { fields[$0] != nil }
        if targets.count > 1 || (requireTarget && targets.isEmpty) {
            throw .invalidArgument(
                "Exactly one of token, topic, condition or fid must be specified (got \(targets.isEmpty ? "none" : targets.joined(separator: ", ")))"
            )
        }
        if let field = targets.first {
            guard let value = fields[field]?.stringValue, !value.isEmpty else {
                throw .invalidArgument("Invalid value at '\(context).\(field)' (TYPE_STRING): a non-empty string is required")
            }
            target = try Self.target(field, value, context: context)
        } else {
            target = nil
        }
        data = try Self.data(fields["data"], dataValues: dataValues, context: context)
        notification = try Self.notification(fields["notification"], context: context)
        var options: [String: JSONValue] = [:]
        for name in Self.optionFields {
            guard let value = fields[name] else { continue }
            guard case .object = value else {
                throw .invalidArgument("Invalid value at '\(context).\(name)': expected an object, got \(value.typeName)")
            }
            options[name] = value
        }
        self.options = options
        let size = payloadSize
        if size > Self.maximumPayloadSize {
            throw .invalidArgument("Message is too big: the payload is \(size) bytes, the limit is \(Self.maximumPayloadSize)")
        }
    }

    private static func target(_ field: String, _ value: String, context: String) throws(FCMError) -> Target {
        switch field {
        case "token": return .token(value)
        case "condition": return .condition(value)
        case "fid": return .fid(value)
        default:
            let name = value.hasPrefix("/topics/") ? String(value.dropFirst("/topics/".count)) : value
            let allowed = name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"): true
                default: false
                }
            }
            guard allowed, !name.isEmpty, name.utf8.count <= 900 else {
                throw .invalidArgument(
                    "Invalid value at '\(context).topic': \"\(value)\" is not a valid topic name ([a-zA-Z0-9-_.~%]{1,900})")
            }
            return .topic(name)
        }
    }

    /// Whether `key` is reserved by FCM and may not be a data key.
    public static func isReservedDataKey(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key.hasPrefix("google") || key.hasPrefix("gcm")
    }

    private static func data(_ value: JSONValue?, dataValues: DataValues, context: String) throws(FCMError) -> [String: String] {
        guard let value, value != .null else { return [:] }
        guard let members = value.objectValue else {
            throw .invalidArgument("Invalid value at '\(context).data' (Map): expected an object, got \(value.typeName)")
        }
        var data: [String: String] = [:]
        data.reserveCapacity(members.count)
        // FCM numbers map entries in request order; object key order is not kept here, so
        // the index is that of the sorted keys.
        for (index, key) in members.keys.sorted().enumerated() {
            if isReservedDataKey(key) {
                throw .invalidArgument("Invalid data payload key: \"\(key)\" is reserved (from, message_type, google*, gcm*)")
            }
            switch (members[key], dataValues) {
            case (.string(let text)?, _): data[key] = text
            case (.int(let number)?, .coerced): data[key] = String(number)
            case (.bool(let flag)?, .coerced): data[key] = flag ? "true" : "false"
            case (.double?, .coerced): data[key] = members[key]?.serialized()
            case (let other?, .coerced):
                throw .invalidArgument(
                    "Invalid value at '\(context).data[\(index)].value' (TYPE_STRING): \"\(key)\" is \(other.typeName == "null" ? "null" : "an \(other.typeName)"), which has no string form"
                )
            case (nil, _), (_, .strict):
                throw .invalidArgument(
                    "Invalid value at '\(context).data[\(index)].value' (TYPE_STRING), \(members[key]?.serialized() ?? "")")
            }
        }
        return data
    }

    private static func notification(_ value: JSONValue?, context: String) throws(FCMError) -> [String: String]? {
        guard let value, value != .null else { return nil }
        guard let members = value.objectValue else {
            throw .invalidArgument("Invalid value at '\(context).notification': expected an object, got \(value.typeName)")
        }
        var notification: [String: String] = [:]
        for key in members.keys.sorted() {
            guard notificationFields.contains(key) else {
                throw .invalidArgument(
                    "Invalid JSON payload received. Unknown name \"\(key)\" at '\(context).notification': Cannot find field.")
            }
            guard let text = members[key]?.stringValue else {
                throw .invalidArgument(
                    "Invalid value at '\(context).notification.\(key)' (TYPE_STRING), \(members[key]?.serialized() ?? "")")
            }
            notification[key] = text
        }
        return notification
    }

    /// The bytes that count against the 4096-byte limit: data keys and values, notification
    /// values (UTF-8).
    public var payloadSize: Int {
        let dataSize = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        return dataSize + (notification ?? [:]).values.reduce(0) { $0 + $1.utf8.count }
    }

    /// The message as FCM HTTP v1 expects it in a send request's `message` field.
    public var json: JSONValue {
        var fields = options
        if let target { fields[target.field] = .string(target.value) }
        if !data.isEmpty { fields["data"] = .object(data.mapValues { .string($0) }) }
        if let notification { fields["notification"] = .object(notification.mapValues { .string($0) }) }
        return .object(fields)
    }
}

/// A parsed `POST /v1/projects/{project}/messages:send` body.
public struct FCMSendRequest: Sendable, Equatable {
    /// The message.
    public var message: FCMMessage
    /// Checked only, not sent (FCM answers with a fake message id).
    public var validateOnly: Bool

    /// Parses and checks a send request body as FCM does.
    public init(body: some Collection<UInt8>) throws(FCMError) {
        let parsed: JSONValue
        do {
            parsed = try JSONValue(parsing: body)
        } catch {
            throw .invalidArgument("Invalid JSON payload received. \(error)")
        }
        guard let fields = parsed.objectValue else {
            throw .invalidArgument("Invalid JSON payload received. Expected an object, got \(parsed.typeName)")
        }
        for name in fields.keys.sorted() where name != "message" && name != "validate_only" && name != "validateOnly" {
            throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(name)\": Cannot find field.")
        }
        guard let message = fields["message"] else {
            throw .invalidArgument("Request contains an invalid argument: 'message' is required")
        }
        let validateOnly = fields["validate_only"] ?? fields["validateOnly"] ?? .bool(false)
        guard let flag = validateOnly.boolValue else {
            throw .invalidArgument("Invalid value at 'validate_only' (TYPE_BOOL), \(validateOnly.serialized())")
        }
        self.message = try FCMMessage(validating: message, dataValues: .strict)
        self.validateOnly = flag
    }
}
