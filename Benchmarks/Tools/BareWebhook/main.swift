// The baseline of the push webhook benchmark: a bare Hummingbird endpoint that does what the
// push plugin's webhook does with a request before the router sees it — collect the body,
// check the bearer token, parse and check the FCM send request with the same code
// (PushMessage) — and answers the way FCM does, with nothing routed or written.
//
// Usage: BareWebhook PORT_FILE [BEARER_TOKEN]   (writes the bound port to PORT_FILE)
import Foundation
import Hummingbird
import PushMessage
import SwitchyardCore

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: BareWebhook PORT_FILE [BEARER_TOKEN]\n".utf8))
    exit(2)
}
let portFile = arguments[1]
let bearer = arguments.count > 2 ? arguments[2] : nil

enum Answer {
    static func json(_ status: Int, _ body: JSONValue) -> Response {
        Response(
            status: HTTPResponse.Status(code: status),
            headers: [.contentType: "application/json; charset=UTF-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body.serializedBytes())))
    }
}

let router = Router()
router.post("/v1/projects/:project/messages:send") { request, context -> Response in
    let project = context.parameters.get("project") ?? ""
    guard let body = try? await request.body.collect(upTo: 65536) else {
        return Answer.json(413, FCMError.invalidArgument("too big").body)
    }
    if let bearer, !BearerToken.matches(header: request.headers[.authorization], expected: bearer) {
        return Answer.json(401, FCMError.unauthenticated("wrong bearer token").body)
    }
    do throws(FCMError) {
        _ = try FCMSendRequest(body: body.readableBytesView)
    } catch {
        return Answer.json(error.httpStatus, error.body)
    }
    return Answer.json(200, ["name": .string("projects/\(project)/messages/\(ULID.next())")])
}

let app = Application(
    router: router,
    configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: nil),
    onServerRunning: { channel in
        try? String(channel.localAddress?.port ?? -1).write(toFile: portFile, atomically: true, encoding: .utf8)
    })
try await app.runService()
