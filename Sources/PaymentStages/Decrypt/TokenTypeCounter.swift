import ApplePay
import Foundation
import Pipeline

/// Payments by token type and merchant, exported as `paypipe_payments_by_token_type_total{merchant,token_type}`:
/// counted when decrypt accepts a job's token or credential (once per batch; a redelivered job counts again), so the
/// share of merchant tokens (MPAN) a merchant receives is visible before any credential is stored.
public final class TokenTypeCounter: Sendable {
    public static let metric = "paypipe_payments_by_token_type_total"

    private let metrics = AttachedMetrics()

    public init() {}

    public func attach(metrics registry: MetricsRegistry) {
        metrics.attach(registry) { $0.register(Self.metric, kind: .counter, help: "Payments accepted by decrypt, by merchant and token type (merchant, device, unknown).") }
    }

    public func record(merchantId: String, tokenType: TokenType) {
        metrics.report { $0.increment(Self.metric, labels: ["merchant": merchantId, "token_type": tokenType.rawValue]) }
    }

    /// What a payment records about its token: from the decrypted data when PayPipe decrypts (``TokenType/fromDecrypted(merchantTokenIdentifier:)``),
    /// otherwise `unknown` (the processor decrypts, or the job carried a processor's credential, and neither reports it).
    static func facts(_ decrypted: DecryptedPaymentData?) -> TokenFacts {
        guard let decrypted else { return TokenFacts(type: .unknown) }
        let type = TokenType.fromDecrypted(merchantTokenIdentifier: decrypted.merchantTokenIdentifier)
        guard type == .merchant else { return TokenFacts(type: type) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let metadata = decrypted.merchantTokenMetadata.flatMap { try? encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) }
        return TokenFacts(type: type, merchantTokenIdentifier: decrypted.merchantTokenIdentifier, merchantTokenMetadata: metadata)
    }
}
