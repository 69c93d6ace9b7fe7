import PushMessage
import PushTokens
import SwitchyardCore

/// The envelopes the push plugin emits and the JSON it answers with.
enum PushEnvelopes {
    /// A message accepted by the webhook.
    static let dataMessageType = "push.DataMessage"

    /// The schema of a `push.DataMessage` body: the FCM message fields, the project it was sent
    /// to, and `notification_id` lifted out of `data` so that an iiidea's `remote:` port can
    /// match on it.
    static let dataMessageSchema: JSONValue = [
        "type": "object",
        "required": ["data"],
        "properties": [
            "project": ["type": "string"],
            "token": ["type": "string"],
            "topic": ["type": "string"],
            "condition": ["type": "string"],
            "fid": ["type": "string"],
            "data": ["type": "object", "additionalProperties": ["type": "string"]],
            "notification": [
                "type": "object",
                "properties": ["title": ["type": "string"], "body": ["type": "string"], "image": ["type": "string"]],
            ],
            "android": ["type": "object"],
            "apns": ["type": "object"],
            "webpush": ["type": "object"],
            "fcm_options": ["type": "object"],
            "notification_id": ["type": "string"],
        ],
    ]

    /// The envelope for an accepted message. Its subject is the target's value (token, topic,
    /// condition or fid), empty for a plain push without one.
    static func dataMessage(_ message: FCMMessage, project: String?, requestID: String?) -> Envelope {
        var body = message.json.objectValue ?? [:]
        // `json` leaves out an empty `data`; the envelope's schema requires it.
        if message.data.isEmpty { body["data"] = .object([:]) }
        if let project { body["project"] = .string(project) }
        if let notificationID = message.data["notification_id"] { body["notification_id"] = .string(notificationID) }
        var headers = Headers()
        if let target = message.target { headers.append(name: "push.target", value: target.field) }
        if let project { headers.append(name: "push.project", value: project) }
        if let requestID { headers.append(name: "webhook-id", value: requestID) }
        return Envelope(
            type: dataMessageType, subject: message.target?.value ?? "", headers: headers,
            body: JSONValue.object(body).serializedBytes())
    }

    /// The W3C trace context of an HTTP request (its `traceparent` and `tracestate` fields)
    /// copied into `envelope`'s headers of the same names; the router checks them (a malformed
    /// one is ignored there). Longer values than trace context allows are not taken.
    static func carryTraceContext(into envelope: inout Envelope, parent: String?, state: String?) {
        if let parent, parent.utf8.count <= TraceContext.maximumStateLength { envelope.headers[TraceContext.parentHeader] = parent }
        if let state, state.utf8.count <= TraceContext.maximumStateLength { envelope.headers[TraceContext.stateHeader] = state }
    }

    /// A registry record as the token endpoints answer it.
    static func json(_ record: PushTokenRecord) -> JSONValue {
        var fields: [String: JSONValue] = [
            "token": .string(record.token), "registered_at": .int(Int(record.registeredAt)), "updated_at": .int(Int(record.updatedAt)),
        ]
        if let device = record.device { fields["device"] = .string(device) }
        if let user = record.user { fields["user"] = .string(user) }
        if let platform = record.platform { fields["platform"] = .string(platform) }
        return .object(fields)
    }
}
