import JSON
import Pipeline

extension TrustPaymentsClient {
    /// A manual AUTH carries `settlestatus "2"` (suspended), captured later by TRANSACTIONUPDATE: Trust Payments' help
    /// article 4403193579665 ("How do I suspend a payment": "the field settlestatus can be included with value 2" on an
    /// API request) [doc], and the Python SDK's own tests send `settlestatus` on AUTH requests [sdk]. An AUTH answered
    /// otherwise is suspended by a TRANSACTIONUPDATE right after (``OperationsStage`` upkeep).
    public static func holdForCapture(_ payload: inout JSONValue, requestTypes: inout [String]) {
        payload.set(.string(suspended), forKey: "settlestatus")
    }

    /// Whether the request carries that `settlestatus`.
    public static func asksHold(_ request: GatewayRequest) -> Bool {
        request.claims["payload"]?["settlestatus"]?.stringValue == suspended
    }

    /// Settle status 2, suspended (the value ``SettlementState/suspended`` is stored as).
    private static let suspended = "2"
}
