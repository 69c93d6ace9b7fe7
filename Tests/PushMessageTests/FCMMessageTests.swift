import PushMessage
import SwitchyardCore
import Testing

/// The FCM HTTP v1 rules the webhook enforces, each with FCM's status and a message naming the
/// field.
@Suite struct FCMMessageTests {
    private func parse(_ body: String) throws(FCMError) -> FCMSendRequest {
        try FCMSendRequest(body: Array(body.utf8))
    }

    private func refusal(_ body: String) -> FCMError? {
        do {
            _ = try parse(body)
            return nil
        } catch {
            return error
        }
    }

    @Test func aDataMessageToATokenIsAccepted() throws {
        let request = try parse(#"{"message": {"token": "abc", "data": {"notification_id": "n1", "k": "v"}}}"#)
        #expect(request.message.target == .token("abc"))
        #expect(request.message.data == ["notification_id": "n1", "k": "v"])
        #expect(!request.validateOnly)
        #expect(request.message.json == ["token": "abc", "data": ["notification_id": "n1", "k": "v"]])
    }

    @Test func platformOptionsAndNotificationAreKept() throws {
        let request = try parse(
            #"{"validate_only": true, "message": {"topic": "/topics/news", "notification": {"title": "T", "body": "B"}, "android": {"priority": "high"}, "apns": {"headers": {}}}}"#
        )
        #expect(request.validateOnly)
        #expect(request.message.target == .topic("news"))
        #expect(request.message.notification == ["title": "T", "body": "B"])
        #expect(request.message.options["android"] == ["priority": "high"])
    }

    @Test func aNonStringDataValueIsRefusedAsFCMDoes() throws {
        let error = try #require(refusal(#"{"message": {"token": "t", "data": {"a": "x", "b": 12}}}"#))
        #expect(error.httpStatus == 400)
        #expect(error.status == "INVALID_ARGUMENT")
        #expect(error.message == "Invalid value at 'message.data[1].value' (TYPE_STRING), 12")
    }

    @Test(arguments: [
        (#"{"message": {"data": {"a": "b"}}}"#, "Exactly one of token, topic, condition or fid must be specified (got none)"),
        (
            #"{"message": {"token": "t", "topic": "x"}}"#,
            "Exactly one of token, topic, condition or fid must be specified (got token, topic)"
        ),
        (#"{"message": {"token": ""}}"#, "Invalid value at 'message.token' (TYPE_STRING): a non-empty string is required"),
        (
            #"{"message": {"topic": "a b"}}"#,
            "Invalid value at 'message.topic': \"a b\" is not a valid topic name ([a-zA-Z0-9-_.~%]{1,900})"
        ),
        (
            #"{"message": {"token": "t", "colour": 1}}"#,
            "Invalid JSON payload received. Unknown name \"colour\" at 'message': Cannot find field."
        ),
        (
            #"{"message": {"token": "t", "notification": {"sound": "x"}}}"#,
            "Invalid JSON payload received. Unknown name \"sound\" at 'message.notification': Cannot find field."
        ),
        (#"{"mesage": {"token": "t"}}"#, "Invalid JSON payload received. Unknown name \"mesage\": Cannot find field."),
        (#"{}"#, "Request contains an invalid argument: 'message' is required"),
        (#"{"message": {"token": "t", "android": []}}"#, "Invalid value at 'message.android': expected an object, got array"),
    ])
    func malformedRequestsAreRefused(body: String, message: String) throws {
        let error = try #require(refusal(body))
        #expect(error.httpStatus == 400)
        #expect(error.errorCode == "INVALID_ARGUMENT")
        #expect(error.message == message)
    }

    @Test(arguments: ["from", "message_type", "google.c.a.e", "googleFoo", "gcm.notification.x"])
    func reservedDataKeysAreRefused(key: String) throws {
        let error = try #require(refusal(#"{"message": {"token": "t", "data": {"\#(key)": "x"}}}"#))
        #expect(error.httpStatus == 400)
        #expect(error.message.contains("\"\(key)\" is reserved"))
    }

    @Test func thePayloadLimitIs4096Bytes() throws {
        // key "k" (1 byte) + value: exactly at the limit passes, one byte over fails.
        let fits = String(repeating: "x", count: 4095)
        _ = try parse(#"{"message": {"token": "t", "data": {"k": "\#(fits)"}}}"#)
        let error = try #require(refusal(#"{"message": {"token": "t", "data": {"k": "\#(fits)x"}}}"#))
        #expect(error.httpStatus == 400)
        #expect(error.message == "Message is too big: the payload is 4097 bytes, the limit is 4096")
    }

    @Test func notJSONIsRefusedWithTheOffset() throws {
        let error = try #require(refusal(#"{"message": "#))
        #expect(error.httpStatus == 400)
        #expect(error.message.hasPrefix("Invalid JSON payload received. invalid JSON at byte"))
    }

    @Test func coercedDataTurnsScalarsIntoTextButNotContainers() throws {
        let message = try FCMMessage(validating: ["topic": "t", "data": ["n": 12, "b": true, "s": "x"]], dataValues: .coerced)
        #expect(message.data == ["n": "12", "b": "true", "s": "x"])
        #expect(throws: FCMError.self) {
            try FCMMessage(validating: ["topic": "t", "data": ["o": ["x": 1]]], dataValues: .coerced)
        }
        #expect(throws: FCMError.self) {
            try FCMMessage(validating: ["topic": "t", "data": ["z": nil]], dataValues: .coerced)
        }
    }

    @Test func plainClientsMayOmitTheTarget() throws {
        let message = try FCMMessage(validating: ["data": ["a": "b"]], dataValues: .coerced, requireTarget: false)
        #expect(message.target == nil)
        #expect(throws: FCMError.self) { try FCMMessage(validating: ["data": ["a": "b"]], dataValues: .coerced) }
    }

    @Test func errorBodiesHaveFCMsShape() throws {
        let error = FCMError.invalidArgument("bad")
        #expect(
            error.body == [
                "error": [
                    "code": 400, "message": "bad", "status": "INVALID_ARGUMENT",
                    "details": [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"]],
                ]
            ])
    }

    @Test func theFcmErrorDetailIsFoundByTypeNotPosition() {
        let body = #"""
            {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND", "details": [
              {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": []},
              {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}
            """#
        let error = FCMError(httpStatus: 404, responseBody: Array(body.utf8))
        #expect(error.errorCode == "UNREGISTERED")
        #expect(error.status == "NOT_FOUND")
        #expect(error.message == "Requested entity was not found.")
        let plain = FCMError(httpStatus: 503, responseBody: Array("upstream down".utf8))
        #expect(plain.status == "UNAVAILABLE")
        #expect(plain.message == "upstream down")
        #expect(plain.errorCode == nil)
    }
}
