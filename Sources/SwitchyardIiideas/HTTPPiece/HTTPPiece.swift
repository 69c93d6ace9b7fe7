import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
package import SwitchyardCore
internal import SwitchyardNetworkText
package import SwitchyardRuntime
import Synchronization

/// The `http` service piece, on AsyncHTTPClient.
package enum HTTPPiece {
    /// Largest response body read.
    static let maximumResponse = 4 << 20

    /// Makes the request `{method, url, headers, body}` and returns the response JSON (a body
    /// that is not JSON becomes `{"status": N, "text": "..."}`). Fails on a URL the policy
    /// refuses (`ServiceError.refused`), a transport error, a timeout or a final status outside
    /// 200–299.
    package static func call(_ request: JSONValue, timeout: UInt64, policy: HTTPPiecePolicy) throws(ServiceError) -> JSONValue {
        guard var url = request["url"]?.stringValue, !url.isEmpty else { throw ServiceError(description: "http: the url is empty") }
        var method = HTTPMethod(rawValue: request["method"]?.stringValue ?? "GET")
        var body = request["body"].flatMap { $0 == .null ? nil : $0 }
        var headers = request["headers"]
        var hops = 0
        let origin = Self.origin(of: url)
        while true {
            let target = try Target(url, policy: policy)
            // Credentials go to the origin they were meant for only (as browsers and curl do):
            // a redirect elsewhere must not carry an OAuth token or a cookie along.
            if hops > 0, Self.origin(of: url) != origin, case .object(let fields)? = headers {
                headers = .object(fields.filter { !["authorization", "cookie", "proxy-authorization"].contains($0.key.lowercased()) })
            }
            let (status, location, answer) = try send(
                target, method: method, headers: headers, body: body, timeout: timeout)
            guard (300..<400).contains(status), let location else {
                guard (200..<300).contains(status) else {
                    throw ServiceError(
                        description: "http: \(target.redacted) answered \(status): \(String(decoding: answer.prefix(200), as: UTF8.self))")
                }
                if answer.isEmpty { return .object(["status": .int(status)]) }
                return (try? JSONValue(parsing: answer))
                    ?? .object(["status": .int(status), "text": .string(String(decoding: answer, as: UTF8.self))])
            }
            guard hops < policy.maximumRedirects else {
                throw ServiceError(
                    description:
                        "http: \(target.redacted) answered \(status), a redirect; not followed (\(policy.maximumRedirects == 0 ? "redirects are off" : "already followed \(hops)"): preferences.max_redirects)",
                    refused: true)
            }
            guard let next = URL(string: location, relativeTo: URL(string: url))?.absoluteString else {
                throw ServiceError(description: "http: \(target.redacted) redirected to an invalid Location", refused: true)
            }
            hops += 1
            url = next
            // 303, and 301/302 after a POST, become a GET without a body (what browsers do).
            if status == 303 || ((status == 301 || status == 302) && method == .POST) {
                method = .GET
                body = nil
            }
        }
    }

    /// `scheme://host:port` of `url`, lowercased, the port made explicit; nil when it has none.
    static func origin(of url: String) -> String? {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), let host = parts.host?.lowercased() else {
            return nil
        }
        return "\(scheme)://\(host):\(parts.port ?? (scheme == "https" ? 443 : 80))"
    }

    /// One request to a checked target, redirects not followed: status, `Location`, body.
    private static func send(
        _ target: Target, method: HTTPMethod, headers: JSONValue?, body: JSONValue?, timeout: UInt64
    ) throws(ServiceError) -> (Int, String?, [UInt8]) {
        var outgoing = HTTPClientRequest(url: target.url)
        outgoing.method = method
        if case .object(let headers)? = headers {
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                outgoing.headers.add(name: name, value: value.stringValue ?? value.serialized())
            }
        }
        if let body {
            outgoing.body = .bytes(ByteBuffer(bytes: body.serializedBytes()))
            if !outgoing.headers.contains(name: "Content-Type") { outgoing.headers.add(name: "Content-Type", value: "application/json") }
        }
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        // Connect to the address that was checked, not to whatever the name resolves to next
        // (DNS rebinding); TLS still verifies the certificate for the name.
        if let pinned = target.pinnedAddress { configuration.dnsOverride = [target.host: pinned] }
        let result = ResultBox()
        let done = DispatchSemaphore(value: 0)
        let deadline = TimeAmount.nanoseconds(Int64(clamping: timeout))
        let sending = outgoing
        let redacted = target.redacted
        Task {
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            do {
                let response = try await client.execute(sending, timeout: deadline)
                let collected = try await response.body.collect(upTo: maximumResponse)
                result.set(.success((Int(response.status.code), response.headers.first(name: "Location"), Array(buffer: collected))))
            } catch {
                result.set(.failure(ServiceError(description: "http: \(redacted): \(NetworkErrorText.sentence(for: error))")))
            }
            try? await client.shutdown()
            done.signal()
        }
        // AsyncHTTPClient enforces the timeout; the margin only guards against a lost answer.
        if done.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout)) + .seconds(5)) == .timedOut {
            throw ServiceError(description: "http: \(redacted): no answer within the timeout")
        }
        return try result.get()
    }

    private final class ResultBox: Sendable {
        typealias Answer = (Int, String?, [UInt8])
        private let value = Mutex<Result<Answer, ServiceError>?>(nil)
        func set(_ result: Result<Answer, ServiceError>) { value.withLock { $0 = result } }
        func get() throws(ServiceError) -> Answer {
            switch value.withLock({ $0 }) {
            case .success(let answer)?: return answer
            case .failure(let error)?: throw error
            case nil: throw ServiceError(description: "http: no answer")
            }
        }
    }
}
