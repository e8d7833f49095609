import Foundation
import HTTP
import Pipeline

/// TapPay's operations (`/tpc/transaction/cap`, `/tpc/transaction/refund`; no void API) behind the one operation
/// interface. TapPay takes no reference of PayPipe's: an operation is found by its trade's `rec_trade_id`.
extension TapPayConnector: OperationConnector {
    public func operationTransport(_ gateway: MerchantConfig.Gateway) -> OperationProtocol.Transport { .tapPay }

    public func operationReference(paymentReference: String, operationRowId: Int64) -> String { "op\(operationRowId)" }

    /// Settled when the Record API shows the trade `is_captured` [doc]; a trade not captured (or not returned) is not.
    public func querySettlement(
        _ payments: [SettlementQuery], endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<[String: OperationProtocol.QueriedAuth], OperationQueryFailure> {
        var settled: [String: OperationProtocol.QueriedAuth] = [:]
        for payment in payments {
            let capture = ConnectorOperation.capture(transactionId: payment.transactionReference, amountMinor: 0, currency: payment.currency)
            switch findOperation(capture, reference: payment.transactionReference, endpoint: endpoint, requestId: requestId, now: now, using: client) {
            case .failure(let failure): return .failure(failure)
            case .success(.payment(let record?)) where record.isCaptured == true:
                settled[payment.transactionReference] = OperationProtocol.QueriedAuth(settleStatus: .settled, settleBaseAmount: nil)
            case .success: continue
            }
        }
        return .success(settled)
    }
}
