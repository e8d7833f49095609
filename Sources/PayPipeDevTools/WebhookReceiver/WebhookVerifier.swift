import Crypto
import Foundation
import PaymentStages

/// The receiving side of ``WebhookSigner``, as the reference libraries verify: the timestamp must lie within
/// `tolerance` seconds of now (both directions), and any `v1` entry of the signature header must match in
/// constant time (other versions are ignored).
public struct WebhookVerifier: Sendable {
    public let tolerance: Double
    let keys: [[UInt8]]

    /// - Parameter tolerance: 5 minutes, as the Python reference library and Svix use.
    public init(secrets: [String], tolerance: Double = 300) throws(WebhookSignerError) {
        guard !secrets.isEmpty else { throw .noSecret }
        var keys: [[UInt8]] = []
        for (index, secret) in secrets.enumerated() {
            keys.append(try WebhookSigner.key(of: secret, index: index))
        }
        self.keys = keys
        self.tolerance = tolerance
    }

    /// Verifies one request; `header` looks a header up case-insensitively.
    public func verify(body: [UInt8], now: Date = Date(), header: (String) -> String?) throws(WebhookSignerError) {
        guard let id = header("webhook-id") else { throw .missingHeader("webhook-id") }
        guard let timestampText = header("webhook-timestamp") else { throw .missingHeader("webhook-timestamp") }
        guard let signatures = header("webhook-signature") else { throw .missingHeader("webhook-signature") }
        guard let timestamp = Int64(timestampText) else { throw .invalidTimestamp }
        let age = now.timeIntervalSince1970 - Double(timestamp)
        if age > tolerance { throw .timestampTooOld }
        if age < -tolerance { throw .timestampTooNew }
        let content = WebhookSigner.signedContent(id: id, timestamp: timestamp, body: body)
        let expected = keys.map { HMAC.authenticationCode(.sha256, key: $0, message: content) }
        for entry in signatures.split(separator: " ") {
            let parts = entry.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let given = Data(base64Encoded: String(parts[1])) else { continue }
            if expected.contains(where: { HMAC.isEqualConstantTime($0, Array(given)) }) { return }
        }
        throw .noMatchingSignature
    }
}
