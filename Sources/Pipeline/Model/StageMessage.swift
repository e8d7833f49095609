import Foundation

/// The hand-off between stages after decryption: a reference to the payment, never its data.
///
/// Everything a stage needs is in PostgreSQL, so a lost or duplicated hand-off is harmless: a
/// redelivery re-reads the payment and acts on its current status, and the reconciler can re-create a
/// hand-off from the database alone.
public struct StageMessage: Sendable, Codable, Equatable {
    public let paymentId: UUID
    public let merchantId: String
    public let jobId: String

    public init(paymentId: UUID, merchantId: String, jobId: String) {
        self.paymentId = paymentId
        self.merchantId = merchantId
        self.jobId = jobId
    }

    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding three plain fields cannot fail.
        return Array(try! encoder.encode(self))
    }

    public static func decode(_ bytes: [UInt8]) throws(StageFailure) -> StageMessage {
        do {
            return try JSONDecoder().decode(StageMessage.self, from: Data(bytes))
        } catch {
            throw .unattributable(code: "malformed_message", reason: "stage message is not a valid {paymentId, merchantId, jobId} object")
        }
    }
}
