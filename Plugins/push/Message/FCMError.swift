public import SwitchyardCore

/// An error in FCM HTTP v1's shape: an HTTP status, a canonical status name, a message, and
/// the `FcmError` detail's error code where FCM gives one.
///
/// The webhook answers with it (so a client written for FCM reads Switchyard's refusals the
/// same way) and the sender reads FCM's answers into it.
public struct FCMError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status code.
    public var httpStatus: Int
    /// The canonical status, such as `INVALID_ARGUMENT` or `UNAUTHENTICATED`.
    public var status: String
    /// The human-readable message.
    public var message: String
    /// The `google.firebase.fcm.v1.FcmError` detail's `errorCode`, such as `UNREGISTERED`.
    public var errorCode: String?

    /// Creates an error.
    public init(httpStatus: Int, status: String, message: String, errorCode: String? = nil) {
        self.httpStatus = httpStatus
        self.status = status
        self.message = message
        self.errorCode = errorCode
    }

    /// `400 INVALID_ARGUMENT`, as FCM answers a malformed message.
    public static func invalidArgument(_ message: String) -> FCMError {
        FCMError(httpStatus: 400, status: "INVALID_ARGUMENT", message: message, errorCode: "INVALID_ARGUMENT")
    }

    /// `401 UNAUTHENTICATED`: no or wrong credentials.
    public static func unauthenticated(_ message: String) -> FCMError {
        FCMError(httpStatus: 401, status: "UNAUTHENTICATED", message: message)
    }

    /// `429 RESOURCE_EXHAUSTED` with the `QUOTA_EXCEEDED` code: come back later.
    public static func quotaExceeded(_ message: String) -> FCMError {
        FCMError(httpStatus: 429, status: "RESOURCE_EXHAUSTED", message: message, errorCode: "QUOTA_EXCEEDED")
    }

    /// `503 UNAVAILABLE`: the service cannot take the message now.
    public static func unavailable(_ message: String) -> FCMError {
        FCMError(httpStatus: 503, status: "UNAVAILABLE", message: message, errorCode: "UNAVAILABLE")
    }

    /// `500 INTERNAL`.
    public static func internalError(_ message: String) -> FCMError {
        FCMError(httpStatus: 500, status: "INTERNAL", message: message, errorCode: "INTERNAL")
    }

    /// The type URL FCM gives its own error detail; other details (`BadRequest`) may come first.
    public static let detailType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"

    /// The JSON body FCM sends with the error.
    public var body: JSONValue {
        var error: [String: JSONValue] = [
            "code": .int(httpStatus), "message": .string(message), "status": .string(status),
        ]
        if let errorCode {
            error["details"] = [["@type": .string(Self.detailType), "errorCode": .string(errorCode)]]
        }
        return ["error": .object(error)]
    }

    /// Reads an FCM error response. A body that is not FCM's error shape still gives an error
    /// with the HTTP status and the body's text.
    public init(httpStatus: Int, responseBody: [UInt8]) {
        let parsed = try? JSONValue(parsing: responseBody)
        guard let error = parsed?["error"] else {
            let text = String(decoding: responseBody.prefix(300), as: UTF8.self)
            self.init(httpStatus: httpStatus, status: Self.status(forHTTP: httpStatus), message: text.isEmpty ? "HTTP \(httpStatus)" : text)
            return
        }
        let detail = error["details"]?.arrayValue?.first { $0["@type"]?.stringValue == Self.detailType }
        self.init(
            httpStatus: httpStatus,
            status: error["status"]?.stringValue ?? Self.status(forHTTP: httpStatus),
            message: error["message"]?.stringValue ?? "HTTP \(httpStatus)",
            errorCode: detail?["errorCode"]?.stringValue)
    }

    /// The canonical status Google's APIs pair with an HTTP status.
    static func status(forHTTP code: Int) -> String {
        switch code {
        case 400: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        case 429: "RESOURCE_EXHAUSTED"
        case 503: "UNAVAILABLE"
        default: "INTERNAL"
        }
    }

    /// The error code when there is one, else the status, then the message.
    public var description: String { "\(errorCode ?? status) (HTTP \(httpStatus)): \(message)" }
}
