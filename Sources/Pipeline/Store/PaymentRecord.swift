import Foundation
import Postgres

/// A row of `payments`, without card data (which lives encrypted in `card_data`).
public struct PaymentRecord: Sendable, Equatable {
    public let id: UUID
    public let merchantId: String
    public let jobId: String
    public let orderReference: String?
    public let amountMinor: Int64?
    public let currency: String?
    public let status: PaymentStatus
    public let stage: PaymentStage
    public let errorCode: String?
    public let errorMessage: String?
    public let firstReceivedAt: Date
    public let updatedAt: Date
    /// How its AUTH is captured (migration 7; `automatic` before it).
    public let captureMode: CaptureMode

    /// The hand-off message that addresses this payment.
    public var message: StageMessage { StageMessage(paymentId: id, merchantId: merchantId, jobId: jobId) }

    /// The column list matching ``init(row:)``, for `SELECT`/`RETURNING` clauses.
    public static let columns = """
        id, merchant_id, job_id, order_reference, amount_minor, currency, status, stage,
        error_code, error_message, first_received_at, updated_at, capture_mode
        """

    public init(row: PostgresRow) throws {
        id = try row.decode("id", as: UUID.self)
        merchantId = try row.decode("merchant_id", as: String.self)
        jobId = try row.decode("job_id", as: String.self)
        orderReference = try row.decode("order_reference", as: String?.self)
        amountMinor = try row.decode("amount_minor", as: Int64?.self)
        currency = try row.decode("currency", as: String?.self)
        let statusText = try row.decode("status", as: String.self)
        guard let status = PaymentStatus(rawValue: statusText) else {
            throw PostgresError.decoding(column: "status", expected: "PaymentStatus", reason: "unknown status '\(statusText)'")
        }
        self.status = status
        let stageText = try row.decode("stage", as: String.self)
        guard let stage = PaymentStage(rawValue: stageText) else {
            throw PostgresError.decoding(column: "stage", expected: "PaymentStage", reason: "unknown stage '\(stageText)'")
        }
        self.stage = stage
        errorCode = try row.decode("error_code", as: String?.self)
        errorMessage = try row.decode("error_message", as: String?.self)
        firstReceivedAt = try row.decode("first_received_at", as: Date.self)
        updatedAt = try row.decode("updated_at", as: Date.self)
        captureMode = CaptureMode(rawValue: try row.decode("capture_mode", as: String.self)) ?? .automatic
    }
}
