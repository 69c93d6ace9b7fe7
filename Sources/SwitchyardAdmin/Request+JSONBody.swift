import Hummingbird
import NIOCore
import SwitchyardCore

extension Request {
    /// The JSON body of an admin API request: at most 64 KiB, an object (an empty body is `{}`).
    func jsonBody() async throws -> JSONValue {
        let buffer = try await body.collect(upTo: 64 * 1024)
        if buffer.readableBytes == 0 { return .object([:]) }
        guard let value = try? JSONValue(parsing: Array(buffer.readableBytesView)), case .object = value else {
            throw HTTPError(.badRequest, message: "the body must be a JSON object")
        }
        return value
    }
}
