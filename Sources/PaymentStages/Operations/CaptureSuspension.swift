import JWT
import Pipeline

/// How a manual-capture AUTH is suspended (docs/operations-lifecycle.md "Capture mode"): the AUTH request itself
/// carries `settlestatus "2"` — Trust Payments' help article 4403193579665 ("How do I suspend a payment": "the field
/// settlestatus can be included with value 2" on an API request) [doc], and the Python SDK's own tests send
/// `settlestatus` on AUTH requests [sdk] — so the AUTH is never pending settlement, not even for a moment. An AUTH
/// answered otherwise is suspended by a TRANSACTIONUPDATE right after (``OperationsStage`` upkeep).
public enum CaptureSuspension {
    /// The request to send for a payment of `mode`: a manual one asks the AUTH to be suspended (Trust Payments only:
    /// merchant apply refuses manual capture for the other connectors).
    public static func request(_ request: GatewayRequest, mode: CaptureMode, connector: ConnectorKind) -> GatewayRequest {
        guard mode == .manual, connector == .trustPayments, var payload = request.claims["payload"], payload.objectValue != nil else { return request }
        payload.set("2", forKey: "settlestatus")
        var claims = request.claims
        claims.set(payload, forKey: "payload")
        return GatewayRequest(orderReference: request.orderReference, requestTypes: request.requestTypes, claims: claims)
    }

    /// Whether `request` asked the AUTH to be suspended.
    public static func asksSuspension(_ request: GatewayRequest) -> Bool {
        request.claims["payload"]?["settlestatus"]?.stringValue == "2"
    }

    /// The answer to a suspended AUTH request: settle status 2 is what was asked, so it is authorised (not the
    /// `gateway_suspended` review an automatic AUTH's suspension is).
    public static func result(_ result: GatewayResult, asked: Bool) -> GatewayResult {
        guard asked, result.reason == "gateway_suspended", result.settleStatus == "2" else { return result }
        var authorized = result
        authorized.outcome = .authorized
        authorized.reason = nil
        return authorized
    }
}
