import Crypto
import Foundation
import Synchronization

/// The signed-webhook scheme of the Standard Webhooks specification: the sender puts
/// `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature` (space-separated
/// `v1,<base64 HMAC-SHA256>` entries) on the request; the MAC covers `id.timestamp.body`.
public struct WebhookSignature: Sendable {
    /// The header names, lower case.
    public static let idHeader = "webhook-id"
    /// The header with the Unix timestamp in seconds.
    public static let timestampHeader = "webhook-timestamp"
    /// The header with the signatures.
    public static let signatureHeader = "webhook-signature"

    private let key: SymmetricKey
    /// How far the timestamp may be from now, either way.
    public let tolerance: Duration

    /// A secret `whsec_<base64>` is decoded (the Standard Webhooks form); any other secret is
    /// used as its UTF-8 bytes.
    public init(secret: String, tolerance: Duration = .seconds(300)) throws(WebhookAuthError) {
        if secret.hasPrefix("whsec_") {
            guard let bytes = Data(base64Encoded: String(secret.dropFirst("whsec_".count))), !bytes.isEmpty else {
                throw WebhookAuthError("the signing secret starts with whsec_ but the rest is not base64")
            }
            key = SymmetricKey(data: bytes)
        } else {
            guard !secret.isEmpty else { throw WebhookAuthError("the signing secret is empty") }
            key = SymmetricKey(data: Data(secret.utf8))
        }
        self.tolerance = tolerance
    }

    /// The `webhook-signature` value for a request: `v1,<base64>`.
    public func sign(id: String, timestamp: Int64, body: some Collection<UInt8>) -> String {
        "v1," + Data(mac(id: id, timestamp: String(timestamp), body: body)).base64EncodedString()
    }

    private func mac(id: String, timestamp: String, body: some Collection<UInt8>) -> HashedAuthenticationCode<SHA256> {
        var hmac = HMAC<SHA256>(key: key)
        hmac.update(data: Data(id.utf8))
        hmac.update(data: [UInt8(ascii: ".")])
        hmac.update(data: Data(timestamp.utf8))
        hmac.update(data: [UInt8(ascii: ".")])
        hmac.update(data: Array(body))
        return hmac.finalize()
    }

    /// Checks a request's signature headers against its body at time `now` (Unix seconds).
    /// Throws the reason the request is not authentic. Replays are the caller's
    /// ``WebhookReplayGuard``'s business.
    public func verify(id: String?, timestamp: String?, signatures: String?, body: some Collection<UInt8>, now: Int64)
        throws(WebhookAuthError)
    {
        guard let id, !id.isEmpty, let timestamp, let signatures else {
            throw WebhookAuthError("missing \(Self.idHeader), \(Self.timestampHeader) or \(Self.signatureHeader) header")
        }
        guard let seconds = Int64(timestamp) else {
            throw WebhookAuthError("\(Self.timestampHeader) '\(timestamp.prefix(40))' is not Unix seconds")
        }
        let limit = tolerance.components.seconds
        // Saturating: a tolerance near Int64.max seconds must not trap.
        let (earliest, belowMinimum) = now.subtractingReportingOverflow(limit)
        let (latest, aboveMaximum) = now.addingReportingOverflow(limit)
        guard belowMinimum || seconds >= earliest, aboveMaximum || seconds <= latest else {
            throw WebhookAuthError("\(Self.timestampHeader) \(seconds) is more than \(limit) s from now (\(now))")
        }
        let expected = mac(id: id, timestamp: timestamp, body: body)
        for entry in signatures.split(separator: " ") {
            let parts = entry.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let given = Data(base64Encoded: String(parts[1])) else { continue }
            // HashedAuthenticationCode's == compares in constant time.
            if expected == given { return }
        }
        throw WebhookAuthError("no v1 signature in \(Self.signatureHeader) matches the body")
    }
}

/// Why a webhook request was not accepted as authentic.
public struct WebhookAuthError: Error, Sendable, CustomStringConvertible {
    /// The reason.
    public var description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

/// Remembers the `webhook-id`s of accepted requests for twice the timestamp tolerance, so the
/// same signed request cannot be accepted twice; older ids need no memory, their timestamps
/// are refused anyway.
public final class WebhookReplayGuard: Sendable {
    private struct State {
        var seen: [String: Int64] = [:]
        var lastSweep: Int64 = 0
    }

    private let state = Mutex(State())
    private let window: Int64

    /// A guard for signatures checked with `tolerance`.
    public init(tolerance: Duration) {
        let (doubled, overflow) = tolerance.components.seconds.multipliedReportingOverflow(by: 2)
        window = overflow ? Int64.max : max(1, doubled)
    }

    /// Records `id` at `now` (Unix seconds); false if it was already seen within the window.
    public func admit(_ id: String, now: Int64) -> Bool {
        state.withLock { state in
            if now.subtractingReportingOverflow(state.lastSweep).partialValue >= window / 2 + 1 {
                state.seen = state.seen.filter { now - $0.value < window }
                state.lastSweep = now
            }
            if let seen = state.seen[id], now - seen < window { return false }
            state.seen[id] = now
            return true
        }
    }

    /// Forgets `id`: the request carrying it was not accepted after all, so its sender may retry.
    public func forget(_ id: String) {
        _ = state.withLock { $0.seen.removeValue(forKey: id) }
    }
}
