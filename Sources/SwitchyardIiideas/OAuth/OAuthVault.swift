import Crypto
import Foundation
internal import Logging
internal import SwitchyardCore
internal import SwitchyardStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What a connection holds once a person connected it: the tokens and when they lapse.
struct OAuthTokens: Codable, Sendable, Equatable {
    var accessToken: String
    var refreshToken: String?
    /// Unix seconds; nil when the provider gave no `expires_in` (the token lasts until refused).
    var expiresAt: Double?
    var scope: String?
    /// Unix seconds of the last code exchange or refresh.
    var obtainedAt: Double

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", refreshToken = "refresh_token", expiresAt = "expires_at", scope, obtainedAt = "obtained_at"
    }
}

/// Seals tokens before they reach the router's store (AES-256-GCM): the key is
/// `SWITCHYARD_OAUTH_KEY` (32 bytes, base64) when set, else `oauth.key` beside the store,
/// created owner-only on first use. A copy of the database alone opens nothing.
struct OAuthVault: Sendable {
    private let key: SymmetricKey

    /// Why no key could be had.
    struct KeyError: Error, CustomStringConvertible {
        var description: String
    }

    /// The key from `environment` or the key file in `directory`, made when missing.
    init(directory: String, environment: String?) throws(KeyError) {
        if let environment, !environment.isEmpty {
            guard let bytes = Data(base64Encoded: environment), bytes.count == 32 else {
                throw KeyError(description: "SWITCHYARD_OAUTH_KEY must be 32 bytes in base64 (openssl rand -base64 32)")
            }
            key = SymmetricKey(data: bytes)
            return
        }
        let path = directory + "/oauth.key"
        if let bytes = FileManager.default.contents(atPath: path) {
            guard bytes.count == 32 else { throw KeyError(description: "\(path) is not a 32-byte key") }
            let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int ?? 0o777
            guard mode & 0o077 == 0 else {
                throw KeyError(description: "\(path) may be read by other users (mode \(String(mode, radix: 8))): chmod 600 it")
            }
            key = SymmetricKey(data: bytes)
            return
        }
        let fresh = SymmetricKey(size: .bits256)
        // O_EXCL: two routers starting at once must not each write a key of their own.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == EEXIST, let bytes = FileManager.default.contents(atPath: path), bytes.count == 32 {
                key = SymmetricKey(data: bytes)
                return
            }
            throw KeyError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let written = fresh.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == 32, fsync(descriptor) == 0 else {
            unlink(path)
            throw KeyError(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        key = fresh
    }

    /// `tokens` sealed, bound to the connection `name` (a sealed value cannot be moved to another).
    func seal(_ tokens: OAuthTokens, name: String) throws -> [UInt8] {
        let plain = try JSONEncoder().encode(tokens)
        let box = try AES.GCM.seal(plain, using: key, authenticating: Data(name.utf8))
        guard let combined = box.combined else { throw KeyError(description: "sealing failed") }
        return [UInt8](combined)
    }

    /// The tokens of `name` from `sealed`; throws for a wrong key, another name or damage.
    func unseal(_ sealed: [UInt8], name: String) throws -> OAuthTokens {
        let box = try AES.GCM.SealedBox(combined: Data(sealed))
        let plain = try AES.GCM.open(box, using: key, authenticating: Data(name.utf8))
        return try JSONDecoder().decode(OAuthTokens.self, from: plain)
    }

    /// What the store holds for a connection.
    enum Stored {
        /// Tokens, opened, and their sealed form.
        case present(OAuthTokens, sealed: [UInt8])
        /// None: not connected.
        case absent
        /// The store did not answer, or what it holds does not open: nothing is known.
        case unknown
    }

    /// What `store` holds for connection `name`, opened with this key; why nothing is known is
    /// told to `logger`.
    func stored(_ name: String, in store: (any OAuthTokenStore)?, logger: Logger) -> Stored {
        guard let store else { return .unknown }
        let sealed: [UInt8]?
        do {
            sealed = try store.oauthTokens(of: name)
        } catch {
            logger.warning("oauth: cannot read the tokens of \(name): \(error)")
            return .unknown
        }
        guard let sealed else { return .absent }
        do {
            return .present(try unseal(sealed, name: name), sealed: sealed)
        } catch {
            logger.error("oauth: the stored tokens of \(name) do not open (another key?): connect it again")
            return .unknown
        }
    }
}
