import Foundation
import PushMessage
import SwitchyardCore
import Testing

/// Values a peer sends at or past their limits are clamped, never trapped on.
@Suite struct PushPeerValuesTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func retryAfterSecondsAreClampedToADay() {
        #expect(PushPeerValues.retryAfter("7", now: now) == .seconds(7))
        #expect(PushPeerValues.retryAfter(" 0 ", now: now) == .zero)
        #expect(PushPeerValues.retryAfter("9223372036854775807", now: now) == .seconds(86_400))
        #expect(PushPeerValues.retryAfter("99999999999999999999999999", now: now) == .seconds(86_400))
        #expect(PushPeerValues.retryAfter("-5", now: now) == nil)
        #expect(PushPeerValues.retryAfter("", now: now) == nil)
        #expect(PushPeerValues.retryAfter("soon", now: now) == nil)
    }

    @Test func retryAfterDatesAreRelativeToNowAndClamped() {
        #expect(PushPeerValues.retryAfter("Tue, 14 Nov 2023 22:13:30 GMT", now: now) == .seconds(10))
        #expect(PushPeerValues.retryAfter("Sat, 01 Jan 2000 00:00:00 GMT", now: now) == .zero)
        // Far in the future (it used to overflow Int64 milliseconds): a day.
        #expect(PushPeerValues.retryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == .seconds(86_400))
        #expect(PushPeerValues.retryAfter("Mon, 01 Jan 999999999 00:00:00 GMT", now: now).map { $0 <= .seconds(86_400) } ?? true)
    }

    @Test func tokenLifetimesAreClampedFromAMinuteToADay() {
        #expect(PushPeerValues.tokenLifetime(expiresIn: .int(3599)) == .seconds(3599))
        #expect(PushPeerValues.tokenLifetime(expiresIn: nil) == .seconds(3600))
        #expect(PushPeerValues.tokenLifetime(expiresIn: .int(0)) == .seconds(60))
        #expect(PushPeerValues.tokenLifetime(expiresIn: .int(-1)) == .seconds(60))
        #expect(PushPeerValues.tokenLifetime(expiresIn: .int(Int.max)) == .seconds(86_400))
        #expect(PushPeerValues.tokenLifetime(expiresIn: .double(1e300)) == .seconds(3600))
        #expect(PushPeerValues.tokenLifetime(expiresIn: .string("3600")) == .seconds(3600))
    }

    @Test func listLimitsStayBetweenOneAndTheMaximum() {
        #expect(PushPeerValues.listLimit(nil) == 1000)
        #expect(PushPeerValues.listLimit("25") == 25)
        #expect(PushPeerValues.listLimit("-5") == 1, "SQLite reads a negative LIMIT as no limit")
        #expect(PushPeerValues.listLimit("0") == 1)
        #expect(PushPeerValues.listLimit("99999999999999999999") == 1000)
    }

    /// Timestamps at the ends of Int64 and a tolerance near Int64.max seconds are refused or
    /// accepted by comparison, never by an arithmetic trap.
    @Test func signatureTimestampsAtTheLimitsDoNotTrap() throws {
        let body = Array("{}".utf8)
        let strict = try WebhookSignature(secret: "secret", tolerance: .seconds(300))
        for timestamp in [Int64.max, Int64.min] {
            let signature = strict.sign(id: "m1", timestamp: timestamp, body: body)
            #expect(throws: WebhookAuthError.self) {
                try strict.verify(id: "m1", timestamp: String(timestamp), signatures: signature, body: body, now: 1_700_000_000)
            }
        }
        let lax = try WebhookSignature(secret: "secret", tolerance: .seconds(Int64.max))
        let signature = lax.sign(id: "m2", timestamp: Int64.max, body: body)
        try lax.verify(id: "m2", timestamp: String(Int64.max), signatures: signature, body: body, now: 1_700_000_000)
        let guardian = WebhookReplayGuard(tolerance: .seconds(Int64.max))
        #expect(guardian.admit("m2", now: Int64.max))
        #expect(!guardian.admit("m2", now: Int64.max))
        #expect(WebhookReplayGuard(tolerance: .seconds(300)).admit("m3", now: Int64.min))
    }
}
