import Hummingbird
import NIOCore
import SwitchyardCore

extension Response {
    /// Plain text, for the health answers and the OAuth callback a person reads in a browser.
    static func text(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// Serialized JSON as the admin API answers it.
    static func json(_ value: some Collection<UInt8>, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: value)))
    }

    /// `{"error": message}` with `status`.
    static func refusal(_ status: HTTPResponse.Status, _ message: String, fields: [String: String] = [:]) -> Response {
        var object: [String: JSONValue] = ["error": .string(message)]
        if !fields.isEmpty { object["fields"] = .object(fields.mapValues { .string($0) }) }
        return .json(JSONValue.object(object).serializedBytes() + [0x0A], status: status)
    }

    /// The answer to a refused catalog change.
    static func refusal(_ refusal: IiideaCatalog.Refusal) -> Response {
        let status: HTTPResponse.Status =
            switch refusal.kind {
            case .notFound: .notFound
            case .conflict: .conflict
            case .invalid: .unprocessableContent
            case .unavailable: .serviceUnavailable
            }
        return .refusal(status, refusal.description, fields: refusal.fields)
    }
}
