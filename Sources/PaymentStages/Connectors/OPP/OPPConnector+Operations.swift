import Foundation
import HTTP
import Pipeline

/// OPP's operations (`CP`, `RV`, `RF` on `/v1/payments/{id}`) behind the one operation interface, each with its own
/// `merchantTransactionId` (``OPPWire/operationReference(paymentReference:operationRowId:)``), found again by it.
extension OPPConnector: OperationConnector {
    public func operationTransport(_ gateway: MerchantConfig.Gateway) -> OperationProtocol.Transport { .opp }

    /// A refund of a captured pre-authorisation references its capture (``OPPWire/refundReference(payment:capture:)``).
    public var operationNeeds: OperationNeeds { [.currency, .captureReference] }

    public func operationReference(paymentReference: String, operationRowId: Int64) -> String {
        OPPWire.operationReference(paymentReference: paymentReference, operationRowId: operationRowId)
    }

    /// Settled is known without a query: "a refund can be performed against debit (DB) or captured preauthorization
    /// (PA->CP)" [doc: OPP white-label back-office pages], so a captured payment is what a refund needs.
    public func querySettlement(
        _ payments: [SettlementQuery], endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<[String: OperationProtocol.QueriedAuth], OperationQueryFailure> {
        .success(Dictionary(payments.map { ($0.transactionReference, OperationProtocol.QueriedAuth(settleStatus: .settled, settleBaseAmount: nil)) }) { first, _ in first })
    }
}
