import Crypto
import Foundation
import Hummingbird
import Metrics
import SwitchyardCore
import Synchronization

/// The console's sign-in: with `admin.token` set, the login form trades the token for a
/// session (an HTTP-only, SameSite=Strict cookie); every form that changes something carries
/// the session's CSRF token. Without a token (a loopback admin port) everyone who reaches the
/// port is signed in, and the CSRF token is the process's own.
final class ConsoleSessions: Sendable {
    /// A signed-in browser.
    struct Session: Sendable {
        /// The token forms carry back.
        let csrf: String
        /// When it ends unless used again.
        var expiresAt: ContinuousClock.Instant
    }

    /// The cookie's name.
    static let cookieName = "switchyard_session"
    /// How long an unused session lives.
    static let idleLifetime: Duration = .seconds(8 * 3600)
    /// The most sessions kept; the one closest to expiry goes first.
    static let capacity = 256

    /// Failed sign-ins tolerated per minute; past it every sign-in is refused until the
    /// minute has gone (guessing the token costs a minute per ten guesses).
    static let failuresPerMinute = 10

    private let token: String?
    /// When the failed sign-ins of the last minute happened.
    private let failures = Mutex<[ContinuousClock.Instant]>([])
    /// Sessions by their cookie value.
    private let sessions = Mutex<[String: Session]>([:])
    /// The CSRF token when no admin token is set.
    private let openCSRF = ConsoleSessions.randomToken()

    init(token: String?) { self.token = token.flatMap { $0.isEmpty ? nil : $0 } }

    /// Whether a sign-in is needed at all.
    var requiresLogin: Bool { token != nil }

    /// The session of `request`, renewed; nil when a login is needed and it has none.
    func session(of request: Request) -> Session? {
        guard token != nil else { return Session(csrf: openCSRF, expiresAt: .now + Self.idleLifetime) }
        guard let value = request.cookies[Self.cookieName]?.value else { return nil }
        let now = ContinuousClock.now
        return sessions.withLock { sessions in
            guard var session = sessions[value] else { return nil }
            guard session.expiresAt > now else {
                sessions.removeValue(forKey: value)
                return nil
            }
            session.expiresAt = now + Self.idleLifetime
            sessions[value] = session
            return session
        }
    }

    /// Whether `request` has a live session (or needs none), without renewing it: a live view
    /// does not keep a session alive by itself.
    func isSignedIn(_ request: Request) -> Bool {
        guard token != nil else { return true }
        guard let value = request.cookies[Self.cookieName]?.value else { return false }
        let now = ContinuousClock.now
        return sessions.withLock { $0[value].map { $0.expiresAt > now } ?? false }
    }

    /// A new session when `offered` is the admin token; its cookie value.
    func logIn(offering offered: String) -> String? {
        guard let token, BearerToken.constantTimeEquals(Array(offered.utf8), Array(token.utf8)) else {
            // Counted so a guessing browser shows on /metrics (switchyard_console_login_failures_total).
            Counter(label: "switchyard_console_login_failures_total").increment()
            failures.withLock { $0.append(.now) }
            return nil
        }
        let value = Self.randomToken()
        let now = ContinuousClock.now
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.expiresAt > now }
            if sessions.count >= Self.capacity, let oldest = sessions.min(by: { $0.value.expiresAt < $1.value.expiresAt })?.key {
                sessions.removeValue(forKey: oldest)
            }
            sessions[value] = Session(csrf: Self.randomToken(), expiresAt: now + Self.idleLifetime)
        }
        return value
    }

    /// Whether sign-ins are refused for now: too many failed in the last minute.
    var isThrottled: Bool {
        let minuteAgo = ContinuousClock.now - .seconds(60)
        return failures.withLock { failures in
            failures.removeAll { $0 < minuteAgo }
            return failures.count >= Self.failuresPerMinute
        }
    }

    /// Ends the session of `request`.
    func logOut(_ request: Request) {
        guard let value = request.cookies[Self.cookieName]?.value else { return }
        _ = sessions.withLock { $0.removeValue(forKey: value) }
    }

    /// Whether `offered` is the CSRF token of `session`.
    static func csrfMatches(_ offered: String?, _ session: Session) -> Bool {
        BearerToken.constantTimeEquals(Array((offered ?? "").utf8), Array(session.csrf.utf8))
    }

    /// 32 random bytes, base64url: a session cookie or a CSRF token.
    static func randomToken() -> String {
        let key = SymmetricKey(size: .bits256)
        return key.withUnsafeBytes { Data($0) }.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The cookie that carries session `value`; nil `value` clears it.
    static func cookie(_ value: String?) -> Cookie {
        Cookie(
            name: cookieName, value: value ?? "", maxAge: value == nil ? 0 : Int(idleLifetime.components.seconds), path: "/",
            httpOnly: true, sameSite: .strict)
    }
}
