import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore
import PushMessage
import SwitchyardCore

/// OAuth2 for a service account (RFC 7523): signs an RS256 assertion with the account's key,
/// trades it at the token endpoint for a bearer token, caches that, and fetches a new one a
/// while before it expires. Concurrent callers share one exchange.
actor AccessTokenProvider {
    private struct Token {
        var value: String
        var refreshAt: ContinuousClock.Instant
    }

    private let account: ServiceAccount
    private let tokenURL: String
    private let audience: String
    private let client: HTTPClient
    private let key: Insecure.RSA.PrivateKey
    private let keys = JWTKeyCollection()
    private var keyAdded = false
    private let timeout: Duration
    private var cached: Token?
    private var exchange: Task<String, any Error>?

    init(account: ServiceAccount, tokenURL: String?, audience: String, client: HTTPClient, timeout: Duration) throws {
        self.account = account
        self.tokenURL = tokenURL ?? account.tokenURI
        self.audience = audience
        self.client = client
        self.timeout = timeout
        do {
            key = try Insecure.RSA.PrivateKey(pem: account.privateKeyPEM)
        } catch {
            throw TokenError("the service account's private_key is not an RSA key of 2048 bits or more in PEM: \(error)")
        }
    }

    /// A bearer token valid for a while yet.
    func token() async throws -> String {
        if let cached, ContinuousClock.now < cached.refreshAt { return cached.value }
        if let exchange { return try await exchange.value }
        let task = Task { try await self.fetch() }
        exchange = task
        defer { exchange = nil }
        return try await task.value
    }

    /// Drops the cached token (FCM answered 401 with it).
    func invalidate(_ token: String) {
        if cached?.value == token { cached = nil }
    }

    private func fetch() async throws -> String {
        if !keyAdded {
            await keys.add(rsa: key, digestAlgorithm: .sha256, kid: account.privateKeyID.map { JWKIdentifier(string: $0) })
            keyAdded = true
        }
        let issuedAt = Date()
        let claims = AssertionClaims(
            iss: IssuerClaim(value: account.clientEmail),
            scope: ServiceAccount.messagingScope,
            aud: AudienceClaim(value: [audience]),
            iat: IssuedAtClaim(value: issuedAt),
            exp: ExpirationClaim(value: issuedAt.addingTimeInterval(3600)))
        let assertion = try await keys.sign(claims, kid: account.privateKeyID.map { JWKIdentifier(string: $0) })
        var request = HTTPClientRequest(url: tokenURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
        request.body = .bytes(ByteBuffer(string: form))
        let started = ContinuousClock.now
        let response = try await client.execute(request, timeout: TimeAmount(timeout))
        let body = try await response.body.collect(upTo: 1 << 20)
        let json = try? JSONValue(parsing: body.readableBytesView)
        guard response.status.code == 200, let value = json?["access_token"]?.stringValue else {
            let reason = json?["error_description"]?.stringValue ?? json?["error"]?.text ?? String(buffer: body).prefix(200).description
            throw TokenError("the token endpoint \(tokenURL) answered \(response.status.code): \(reason)")
        }
        // A lifetime of 0 or less would fetch a token per send, a huge one overflow the clock.
        let lifetime = PushPeerValues.tokenLifetime(expiresIn: json?["expires_in"])
        // Refresh five minutes early, or at half-life for short-lived tokens.
        let margin = min(Duration.seconds(300), lifetime / 2)
        cached = Token(value: value, refreshAt: started + lifetime - margin)
        return value
    }
}

/// The claims of the assertion Google's token endpoint expects.
struct AssertionClaims: JWTPayload {
    var iss: IssuerClaim
    var scope: String
    var aud: AudienceClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim

    func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// Why no access token could be had.
struct TokenError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
