import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
internal import SwitchyardConfig
internal import SwitchyardCore

/// The provider's token endpoint (RFC 6749 §4.1.3 and §6): a form POST with the client's
/// credentials as HTTP Basic (§2.3.1), a bounded JSON answer.
enum OAuthTokenEndpoint {
    /// The largest token answer read.
    static let maximumAnswer = 64 * 1024
    /// How long one call may take.
    static let timeout = TimeAmount.seconds(15)

    /// The shortest and longest access token lifetimes believed (seconds).
    static let minimumLifetime: Double = 1
    static let maximumLifetime: Double = 366 * 86400

    /// Why the endpoint gave no tokens.
    struct Failure: Error, CustomStringConvertible {
        /// The provider's `error` code (`invalid_grant`: the grant is gone, connect again), or nil
        /// for a transport failure or an answer that is not OAuth.
        var code: String?
        var description: String
    }

    /// Exchanges `form` (`grant_type` and its fields) for tokens. `previous` is kept where the
    /// answer leaves something out (a refresh answer without a new refresh token).
    static func request(
        _ connection: OAuthDeclaration, form: [(String, String)], previous: OAuthTokens? = nil
    ) async throws(Failure) -> OAuthTokens {
        var request = HTTPClientRequest(url: connection.tokenURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        var fields = form
        if let secret = connection.clientSecret {
            let credentials = formEncoded(connection.clientID) + ":" + formEncoded(secret)
            request.headers.add(name: "Authorization", value: "Basic " + Data(credentials.utf8).base64EncodedString())
        } else {
            fields.append(("client_id", connection.clientID))
        }
        request.body = .bytes(ByteBuffer(string: fields.map { formEncoded($0.0) + "=" + formEncoded($0.1) }.joined(separator: "&")))
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        defer { Task { try? await client.shutdown() } }
        let status: Int
        let body: [UInt8]
        do {
            let response = try await client.execute(request, timeout: timeout)
            status = Int(response.status.code)
            body = Array(buffer: try await response.body.collect(upTo: maximumAnswer))
        } catch {
            throw Failure(code: nil, description: "token endpoint \(connection.tokenURL): \(error)")
        }
        let answer = try? JSONValue(parsing: body)
        guard (200..<300).contains(status) else {
            let code = answer?["error"]?.stringValue
            let detail = answer?["error_description"]?.stringValue.map { ": \($0)" } ?? ""
            throw Failure(code: code, description: "token endpoint answered \(status) \(code ?? "")\(detail)")
        }
        guard let answer, let access = answer["access_token"]?.stringValue, !access.isEmpty else {
            throw Failure(code: nil, description: "token endpoint answered \(status) without an access_token")
        }
        // RFC 6750 §2.1's b64token: it goes into a header line as it is.
        let tokenCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=")
        guard access.count <= 8192, access.allSatisfy(tokenCharacters.contains) else {
            throw Failure(code: nil, description: "token endpoint gave an access token that is not an RFC 6750 bearer token")
        }
        if let type = answer["token_type"]?.stringValue, type.lowercased() != "bearer" {
            throw Failure(code: nil, description: "token endpoint gave a '\(type)' token; only Bearer tokens are supported")
        }
        let now = Date().timeIntervalSince1970
        // A number or (some providers) a string; a hostile value cannot make the refresh spin
        // (under a second) or overflow a timer (over a year).
        let stated = answer["expires_in"].flatMap { $0.doubleValue ?? $0.stringValue.flatMap(Double.init) }
        let lifetime = stated.flatMap { $0.isFinite && $0 > 0 ? min(max($0, minimumLifetime), maximumLifetime) : nil }
        return OAuthTokens(
            accessToken: access, refreshToken: answer["refresh_token"]?.stringValue ?? previous?.refreshToken,
            expiresAt: lifetime.map { now + $0 }, scope: answer["scope"]?.stringValue ?? previous?.scope, obtainedAt: now)
    }

    /// `application/x-www-form-urlencoded` (the WHATWG set: only `*-._` and alphanumerics as is).
    static func formEncoded(_ text: String) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789*-._")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
