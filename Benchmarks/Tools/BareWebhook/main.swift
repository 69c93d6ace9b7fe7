// The baseline of the push webhook benchmark: a bare Hummingbird endpoint that does what the
// push plugin's webhook → file route does with a request, minus the router — collect the body,
// check the bearer token, parse and check the FCM send request with the same code
// (PushMessage), append the message as one JSON line to a file (one write(2) per request, as
// the `core` file sink does), and answer the way FCM does.
//
// It does not build an envelope, route it, wait for a settlement, or fsync: those are what
// the benchmark measures the router's cost of.
//
// Usage: BareWebhook PORT_FILE [BEARER_TOKEN [OUT_FILE]]
//   writes the bound port to PORT_FILE; without OUT_FILE (or with "-") nothing is written,
//   so the endpoint only parses and answers.
import Foundation
import Hummingbird
import PushMessage
import SwitchyardCore
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: BareWebhook PORT_FILE [BEARER_TOKEN [OUT_FILE]]\n".utf8))
    exit(2)
}
let portFile = arguments[1]
let bearer = arguments.count > 2 && !arguments[2].isEmpty ? arguments[2] : nil
let lines = arguments.count > 3 && arguments[3] != "-" ? LineFile(path: arguments[3]) : nil

/// An append-only file written one line per call; the lock keeps lines whole when requests
/// on several event loops append at once (it guards the descriptor's writes).
final class LineFile: Sendable {
    private let descriptor: Mutex<Int32>

    init(path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            FileHandle.standardError.write(Data("BareWebhook: cannot open \(path): \(String(cString: strerror(errno)))\n".utf8))
            exit(1)
        }
        descriptor = Mutex(fd)
    }

    func append(_ line: [UInt8]) -> Bool {
        descriptor.withLock { fd in line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) == $0.count } }
    }
}

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
    if let bearer, !BearerToken.matches(header: request.headers[.authorization], expected: bearer) {
        return Answer.json(401, FCMError.unauthenticated("wrong bearer token").body)
    }
    guard let body = try? await request.body.collect(upTo: 65536) else {
        return Answer.json(413, FCMError.invalidArgument("too big").body)
    }
    let send: FCMSendRequest
    do throws(FCMError) {
        send = try FCMSendRequest(body: body.readableBytesView)
    } catch {
        return Answer.json(error.httpStatus, error.body)
    }
    if let lines {
        var line = send.message.json.serializedBytes()
        line.append(0x0A)
        guard lines.append(line) else { return Answer.json(500, FCMError.internalError("write failed").body) }
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
