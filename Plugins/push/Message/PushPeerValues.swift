public import Foundation
public import SwitchyardCore

/// Numbers that come from a peer (FCM's answers, the OAuth token endpoint, the webhook's
/// query strings), read so that no value can trap or turn into an absurd wait: each is
/// clamped to a range that still means what the peer said.
public enum PushPeerValues {
    /// The longest `Retry-After` honoured; longer waits are capped (the sender's own
    /// `max_backoff` caps them further).
    public static let maximumRetryAfter = Duration.seconds(86_400)

    /// A `Retry-After` value, as delay-seconds or an HTTP date (RFC 9110 10.2.3), relative to
    /// `now`; nil when it is neither. A date in the past is no wait; anything over a day is a day.
    public static func retryAfter(_ text: String, now: Date) -> Duration? {
        let value = text.trimmingCharacters(in: .whitespaces)
        if !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // All digits: too many of them for an Int is still "a long time".
            let seconds = Int(value) ?? Int.max
            return .seconds(min(seconds, Int(maximumRetryAfter.components.seconds)))
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        let interval = date.timeIntervalSince(now)
        guard interval.isFinite else { return nil }
        let limit = Double(maximumRetryAfter.components.seconds)
        return .milliseconds(Int64(min(max(0, interval), limit) * 1000))
    }

    /// The lifetimes of an access token the token endpoint may announce (`expires_in`): at least
    /// a minute (a shorter or negative one would fetch a token for every send), at most a day.
    public static let tokenLifetimes = 60...86_400

    /// How long an access token lives, from the token endpoint's `expires_in` (seconds; one
    /// hour when absent or not a number), clamped to ``tokenLifetimes``.
    public static func tokenLifetime(expiresIn value: JSONValue?) -> Duration {
        let seconds = value?.intValue ?? value?.doubleValue.map { Int(exactly: $0.rounded(.down)) ?? 3600 } ?? 3600
        return .seconds(min(max(seconds, tokenLifetimes.lowerBound), tokenLifetimes.upperBound))
    }

    /// A `limit` query parameter: 1…`maximum`, `maximum` when absent or not a number.
    public static func listLimit(_ text: String?, maximum: Int = 1000) -> Int {
        guard let text, let value = Int(text) else { return maximum }
        return min(max(value, 1), maximum)
    }
}
