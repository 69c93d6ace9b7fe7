import Foundation
import PushMessage
import Testing

/// The Standard Webhooks scheme: HMAC-SHA256 over `id.timestamp.body`.
@Suite struct WebhookSignatureTests {
    private let body = Array(#"{"message":{"topic":"t"}}"#.utf8)

    /// The example of the Standard Webhooks specification's reference libraries: secret, id,
    /// timestamp and payload with the signature they publish.
    @Test func matchesTheSpecificationsTestVector() throws {
        let signer = try WebhookSignature(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let signature = signer.sign(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func aGoodSignatureWithinToleranceIsAccepted() throws {
        let signer = try WebhookSignature(secret: "s3cret", tolerance: .seconds(300))
        let signature = signer.sign(id: "id1", timestamp: 1000, body: body)
        try signer.verify(id: "id1", timestamp: "1000", signatures: "v1,bm9wZQ== " + signature, body: body, now: 1299)
    }

    @Test func aChangedBodyIdOrTimestampIsRefused() throws {
        let signer = try WebhookSignature(secret: "s3cret")
        let signature = signer.sign(id: "id1", timestamp: 1000, body: body)
        #expect(throws: WebhookAuthError.self) {
            try signer.verify(id: "id1", timestamp: "1000", signatures: signature, body: body + [32], now: 1000)
        }
        #expect(throws: WebhookAuthError.self) {
            try signer.verify(id: "id2", timestamp: "1000", signatures: signature, body: body, now: 1000)
        }
        #expect(throws: WebhookAuthError.self) {
            try signer.verify(id: "id1", timestamp: "1001", signatures: signature, body: body, now: 1000)
        }
        let other = try WebhookSignature(secret: "other")
        #expect(throws: WebhookAuthError.self) {
            try other.verify(id: "id1", timestamp: "1000", signatures: signature, body: body, now: 1000)
        }
    }

    @Test func timestampsOutsideTheToleranceAreRefused() throws {
        let signer = try WebhookSignature(secret: "s3cret", tolerance: .seconds(60))
        let signature = signer.sign(id: "id1", timestamp: 1000, body: body)
        for now: Int64 in [939, 1061] {
            let error = #expect(throws: WebhookAuthError.self) {
                try signer.verify(id: "id1", timestamp: "1000", signatures: signature, body: body, now: now)
            }
            #expect(error?.description.contains("more than 60 s from now") == true)
        }
    }

    @Test func missingHeadersAndMalformedValuesAreRefused() throws {
        let signer = try WebhookSignature(secret: "s3cret")
        #expect(throws: WebhookAuthError.self) { try signer.verify(id: nil, timestamp: "1", signatures: "v1,x", body: body, now: 1) }
        #expect(throws: WebhookAuthError.self) { try signer.verify(id: "a", timestamp: "soon", signatures: "v1,x", body: body, now: 1) }
        #expect(throws: WebhookAuthError.self) { try signer.verify(id: "a", timestamp: "1", signatures: "v2,abc", body: body, now: 1) }
        #expect(throws: WebhookAuthError.self) { try WebhookSignature(secret: "whsec_!!!") }
        #expect(throws: WebhookAuthError.self) { try WebhookSignature(secret: "") }
    }

    @Test func theReplayGuardAdmitsAnIdOnceWithinTheWindow() {
        let replay = WebhookReplayGuard(tolerance: .seconds(10))
        #expect(replay.admit("a", now: 100))
        #expect(!replay.admit("a", now: 105))
        #expect(replay.admit("b", now: 105))
        // Past twice the tolerance the id is forgotten: its timestamp would be refused anyway.
        #expect(replay.admit("a", now: 121))
        replay.forget("b")
        #expect(replay.admit("b", now: 122))
    }
}
