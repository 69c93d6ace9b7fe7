import Crypto
import Foundation
internal import SwitchyardConfig
import Synchronization

/// The authorizations under way (authorization code with PKCE, RFC 7636): what each started one
/// needs when the provider sends the browser back, kept until that callback takes it or it
/// expires. Separate from ``OAuthConnections`` because a flow holds no tokens and needs no
/// lock shared with them: it only proves that a callback answers an authorization this router
/// started, and with which verifier.
final class OAuthAuthorizationFlows: Sendable {
    /// An authorization under way: what the callback needs to finish it.
    struct Flow {
        var connection: String
        var verifier: String
        var redirect: String
        /// Where the callback sends the browser after (the console's page), if anywhere.
        var returnTo: String?
        var expires: ContinuousClock.Instant
    }

    /// Flows by their `state` parameter.
    private let flows = Mutex<[String: Flow]>([:])
    /// How long a started authorization may take.
    static let lifetime: Duration = .seconds(600)
    /// The most authorizations under way at once.
    static let maximum = 64

    /// Starts authorizing connection `name` as `declaration` says: the URL to send the person's
    /// browser to. The provider sends it back to `callback` when the declaration names no
    /// `redirect_url`; `returnTo` is kept for the callback.
    func begin(_ name: String, as declaration: OAuthDeclaration, callback: String, returnTo: String?) -> String {
        let flowState = Self.randomToken()
        let verifier = Self.randomToken()
        let challenge = Self.base64URL(Data(SHA256.hash(data: Data(verifier.utf8))))
        let redirect = declaration.redirectURL ?? callback
        flows.withLock { flows in
            let now = ContinuousClock.now
            flows = flows.filter { $0.value.expires > now }
            if flows.count >= Self.maximum, let oldest = flows.min(by: { $0.value.expires < $1.value.expires }) {
                flows[oldest.key] = nil
            }
            flows[flowState] = Flow(
                connection: name, verifier: verifier, redirect: redirect, returnTo: returnTo, expires: now + Self.lifetime)
        }
        var query = [
            ("response_type", "code"), ("client_id", declaration.clientID), ("redirect_uri", redirect), ("state", flowState),
            ("code_challenge", challenge), ("code_challenge_method", "S256"),
        ]
        if !declaration.scopes.isEmpty { query.append(("scope", declaration.scopes.joined(separator: " "))) }
        let separator = declaration.authorizeURL.contains("?") ? "&" : "?"
        return declaration.authorizeURL + separator
            + query.map { OAuthTokenEndpoint.formEncoded($0.0) + "=" + OAuthTokenEndpoint.formEncoded($0.1) }.joined(separator: "&")
    }

    /// Takes the flow whose `state` parameter the callback brings: nil when unknown or expired
    /// (either way it cannot be finished twice).
    func take(_ flowState: String) -> Flow? {
        flows.withLock { flows in
            guard let flow = flows.removeValue(forKey: flowState), flow.expires > .now else { return nil }
            return flow
        }
    }

    /// The origins (`scheme://host[:port]`) of `urls`, the declared authorization endpoints:
    /// where a console page may send a browser.
    static func origins(of urls: [String]) -> [String] {
        Set(
            urls.compactMap { url -> String? in
                // Only a plain host name or IP literal goes into the header: nothing a
                // percent-decoded host could add to the policy.
                let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:")
                guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), ["http", "https"].contains(scheme),
                    let host = parts.host, !host.isEmpty, host.allSatisfy(plain.contains)
                else { return nil }
                let named = host.contains(":") ? "[\(host)]" : host
                return "\(scheme)://\(named)" + (parts.port.map { ":\($0)" } ?? "")
            }
        ).sorted()
    }

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return base64URL(Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }))
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
