import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// One HTTP request and its answer, bounded in time: the tests' HTTP client.
///
/// It runs on AsyncHTTPClient's event loops, not on URLSession: FoundationNetworking drives
/// libcurl through Dispatch sources that can miss a socket's events when descriptors are reused
/// quickly (swift-corelibs-foundation #4791, SR-4567), and under a loaded machine a request then
/// got no answer at all, not even URLSession's own timeout (PushTests and ReloadLifecycleTests
/// failed so in CI beside the fuzzers).
enum HTTPExchange {
    struct Answer {
        var status: Int
        var body: String
        var headers: [String: String]

        /// The body as a JSON object (empty when it is not one).
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
    }

    /// How long an exchange may take, connection included: long enough for a router on a
    /// machine loaded by a build (an at-least-once answer waits for the sink's fsync), short
    /// enough that a hang fails the test rather than the run.
    static let timeout = TimeAmount.seconds(60)

    /// Sends the request and waits for its answer, following redirects as a browser does. A
    /// request that fails (refused, reset) answers status -1 with the error as its body; one not
    /// answered within ``timeout`` is also recorded as an issue.
    static func send(
        _ url: String, method: String = "GET", headers: [String: String] = [:], body: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Answer {
        var fields = HTTPHeaders()
        // One connection per exchange: a kept-alive connection left idle past the server's
        // `header_timeout` (a polling test starved by a loaded machine) is answered 408 by its
        // connection guard, and a client could read that answer as its next request's.
        fields.add(name: "Connection", value: "close")
        for (name, value) in headers { fields.replaceOrAdd(name: name, value: value) }
        let request = try HTTPClient.Request(
            url: url, method: HTTPMethod(rawValue: method), headers: fields, body: body.map { .string($0) })
        do {
            let response = try HTTPClient.shared.execute(request: request, deadline: .now() + timeout).wait()
            var answerHeaders: [String: String] = [:]
            for (name, value) in response.headers { answerHeaders[name.lowercased()] = value }
            return Answer(
                status: Int(response.status.code),
                body: response.body.map { String(buffer: $0) } ?? "",
                headers: answerHeaders)
        } catch {
            if let error = error as? HTTPClientError, error == .deadlineExceeded || error == .readTimeout {
                Issue.record("no answer from \(method) \(url) within \(timeout)", sourceLocation: sourceLocation)
            }
            return Answer(status: -1, body: "\(error)", headers: [:])
        }
    }
}
