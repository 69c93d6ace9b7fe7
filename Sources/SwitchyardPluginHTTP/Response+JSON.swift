public import Hummingbird
public import SwitchyardCore

extension Response {
    /// `value` serialized as the answer's body, `Content-Type: application/json`.
    public static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: value.serializedBytes()))
        )
    }
}
