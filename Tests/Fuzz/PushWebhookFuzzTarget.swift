// libFuzzer entry point for the push webhook (built by scripts/fuzz): three webhooks listen on
// loopback (no authentication, a bearer token, a Standard Webhooks signature), each with a
// token registry. Input: a byte choosing the webhook, then the raw bytes a client sends on one
// connection (request lines, headers, bodies, pipelined requests). The target writes them,
// closes its side and reads the answers until the server closes. Every answer is an HTTP
// response; what may not happen: a trap, a sanitizer report, or the server not closing the
// connection in time (a hang).
import Foundation
import PushTokens
import SwitchyardABI
import SwitchyardCore

@testable import PushPlugin
@testable import SwitchyardPluginKit

/// The webhooks, by the index their context pointer carries (1-based). Written once at set-up,
/// before any request, then only read.
nonisolated(unsafe) private var servers: [WebhookServer] = []

nonisolated(unsafe) private let host: UnsafeMutablePointer<sy_host_api_v2> = {
    let table = UnsafeMutablePointer<sy_host_api_v2>.allocate(capacity: 1)
    table.initialize(
        to: sy_host_api_v2(
            struct_size: UInt32(MemoryLayout<sy_host_api_v2>.size), reserved: 0,
            emit: { context, _, _, token in
                // The router settles later, from another thread: accepted, retry or rejected.
                let server = servers[Int(bitPattern: UnsafeRawPointer(context)) - 1]
                let outcome: DeliveryOutcome = [.ok, .retry, .reject][Int(token % 3)]
                DispatchQueue.global().async { server.waiters.resolve(token, .settled(outcome)) }
                return 0
            },
            ack: { _, _, _, _ in }, log: { _, _, _ in }, metric: { _, _, _, _ in }, piece_done: { _, _, _, _ in },
            log_enabled: { _, _ in 0 }, state_get: { _, _, _ in SY_ERR_FAILED }, state_put: { _, _, _ in SY_ERR_FAILED },
            state_delete: { _, _ in SY_ERR_FAILED }, state_scan: { _, _, _, _ in SY_ERR_FAILED },
            hold_acquire: { _, _, _, _, _ in SY_ERR_FAILED }, hold_release: { _, _ in }, source_done: { _, _ in }, sink_ready: { _, _ in }))
    return table
}()

private let ports: [Int] = {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-fuzz-push-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let auth: [JSONValue] = [
        [:], ["bearer_token": "fuzz-token"], ["signing_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "tolerance": "5m"],
    ]
    return auth.enumerated().map { index, auth in
        let config: JSONValue = [
            "listen": "127.0.0.1:0", "auth": auth, "projects": ["demo"], "max_body": "4KiB", "ack_timeout": "2s",
            "header_timeout": "2s", "body_timeout": "2s", "registry": .string(directory.appendingPathComponent("tokens-\(index).db").path),
        ]
        let settings = must { try PushConfiguration(config: config).webhook }
        let registry = must { try PushTokenRegistry(path: directory.appendingPathComponent("tokens-\(index).db").path) }
        let context = PluginContext(host: UnsafePointer(host), context: must { OpaquePointer(bitPattern: index + 1) })
        let server = WebhookServer(settings: settings, instance: "fuzz\(index)", context: context, registry: registry)
        servers.append(server)
        return must { try server.start() }
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPushWebhook(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let port = ports[Int(data[0]) % ports.count]
    let answer = exchange(UnsafeBufferPointer(start: data + 1, count: size - 1), port: port)
    precondition(answer.isEmpty || answer.starts(with: Array("HTTP/1.1 ".utf8)), "an answer that is not an HTTP response")
    return 0
}

/// Sends `request` on a new connection, half-closes it, and reads until the server closes
/// (at most 10 s: the webhook's header and body timeouts are 2 s).
private func exchange(_ request: UnsafeBufferPointer<UInt8>, port: Int) -> [UInt8] {
    let socket = connectedSocket(port: port)
    defer { close(socket) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var sent = 0
    while sent < request.count, let start = request.baseAddress {
        let count = send(socket, start + sent, request.count - sent, Int32(MSG_NOSIGNAL))
        if count < 0, errno == EINTR { continue }  // libFuzzer's timeout alarm
        if count <= 0 { break }  // the server closed early (a refusal): read its answer
        sent += count
    }
    shutdown(socket, Int32(SHUT_WR))
    // Closing with a reset leaves no TIME-WAIT behind: thousands of connections a minute would
    // otherwise use up the ephemeral ports.
    var noLinger = linger(l_onoff: 1, l_linger: 0)
    setsockopt(socket, SOL_SOCKET, SO_LINGER, &noLinger, socklen_t(MemoryLayout<linger>.size))
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = recv(socket, &buffer, buffer.count, 0)
        if count < 0, errno == EINTR { continue }
        if count == 0 || (count < 0 && errno == ECONNRESET) { break }
        precondition(count > 0, "the webhook kept the connection open for 10 s after the client closed its side (errno \(errno))")
        if answer.count < 1 << 20 { answer += buffer[0..<count] }
    }
    return answer
}

/// A socket connected to the webhook on `port`. A connect that fails is tried again on a new
/// socket for up to a second: tens of thousands of loopback connections a minute can briefly
/// run this process out of local ports or descriptors, which says nothing about the webhook.
/// A webhook that accepts no connection for a whole second fails the run.
private func connectedSocket(port: Int) -> Int32 {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var lastError: Int32 = 0
    for _ in 0..<50 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected == 0 { return socket }
        lastError = errno
        close(socket)
        usleep(20_000)
    }
    preconditionFailure("the webhook on port \(port) accepted no connection for a second (last errno \(lastError))")
}

/// The value, or a trap naming the error: set-up that cannot fail unless the harness is wrong.
private func must<T>(_ body: () throws -> T?) -> T {
    do {
        guard let value = try body() else { fatalError("fuzz harness: no value") }
        return value
    } catch {
        fatalError("fuzz harness: \(error)")
    }
}
