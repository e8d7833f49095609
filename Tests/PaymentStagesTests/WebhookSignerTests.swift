import Foundation
import PaymentStages
import PayPipeDevTools
import Testing

@Suite struct WebhookSignerTests {
    // The vector of /work/shared/reference/webhooks.md §3 (checked there with Python hmac/base64).
    static let secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
    static let id = "msg_example0001"
    static let timestamp: Int64 = 1_735_689_600
    static let body = Array(#"{"type":"payment.succeeded","timestamp":"2025-01-01T00:00:00Z","data":{"paymentId":"pay_123"}}"#.utf8)
    static let expected = "v1,RJRQkY684RRyG/adK9/gNKEseTW3VIeaB18ecat6lWI="

    @Test func signsTheReferenceVector() throws {
        let signer = try WebhookSigner(secrets: [Self.secret])
        #expect(signer.signature(id: Self.id, timestamp: Self.timestamp, body: Self.body) == Self.expected)
        let headers = signer.headers(id: Self.id, timestamp: Self.timestamp, body: Self.body)
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(headers[1].value == "1735689600")
    }

    @Test func rotationSendsOneSignaturePerSecretAndEitherVerifies() throws {
        let newSecret = "whsec_" + Data((1...32).map { UInt8(100 + $0) }).base64EncodedString()
        let signer = try WebhookSigner(secrets: [newSecret, Self.secret])
        let header = signer.signature(id: Self.id, timestamp: Self.timestamp, body: Self.body)
        let parts = header.split(separator: " ")
        #expect(parts.count == 2)
        #expect(parts[1] == Substring(Self.expected))
        let now = Date(timeIntervalSince1970: Double(Self.timestamp) + 10)
        let headers = ["webhook-id": Self.id, "webhook-timestamp": String(Self.timestamp), "webhook-signature": header]
        for secret in [newSecret, Self.secret] {
            try WebhookVerifier(secrets: [secret]).verify(body: Self.body, now: now) { headers[$0] }
        }
    }

    @Test func verifierRejectsTamperingAndStaleTimestamps() throws {
        let verifier = try WebhookVerifier(secrets: [Self.secret])
        let now = Date(timeIntervalSince1970: Double(Self.timestamp))
        var headers = ["webhook-id": Self.id, "webhook-timestamp": String(Self.timestamp), "webhook-signature": "v2,abc " + Self.expected]
        try verifier.verify(body: Self.body, now: now) { headers[$0] }
        #expect(throws: WebhookSignerError.noMatchingSignature) {
            try verifier.verify(body: Self.body + [0x20], now: now) { headers[$0] }
        }
        #expect(throws: WebhookSignerError.timestampTooOld) {
            try verifier.verify(body: Self.body, now: now.addingTimeInterval(301)) { headers[$0] }
        }
        #expect(throws: WebhookSignerError.timestampTooNew) {
            try verifier.verify(body: Self.body, now: now.addingTimeInterval(-301)) { headers[$0] }
        }
        headers["webhook-id"] = "msg_other"
        #expect(throws: WebhookSignerError.noMatchingSignature) {
            try verifier.verify(body: Self.body, now: now) { headers[$0] }
        }
        headers["webhook-signature"] = nil
        #expect(throws: WebhookSignerError.missingHeader("webhook-signature")) {
            try verifier.verify(body: Self.body, now: now) { headers[$0] }
        }
    }

    @Test func refusesMalformedSecrets() {
        #expect(throws: WebhookSignerError.noSecret) { try WebhookSigner(secrets: []) }
        #expect(throws: WebhookSignerError.invalidSecret(index: 1)) { try WebhookSigner(secrets: [Self.secret, "whsec_not base64!"]) }
        #expect(throws: WebhookSignerError.invalidSecret(index: 0)) { try WebhookSigner(secrets: ["whsec_"]) }
        #expect(!WebhookSignerError.invalidSecret(index: 0).description.contains("whsec_A"))
    }
}
