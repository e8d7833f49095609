import JWT
import Pipeline

/// How a manual-capture AUTH is suspended (docs/operations-lifecycle.md "Capture mode"): the AUTH request itself
/// carries `settlestatus "2"` — Trust Payments' help article 4403193579665 ("How do I suspend a payment": "the field
/// settlestatus can be included with value 2" on an API request) [doc], and the Python SDK's own tests send
/// `settlestatus` on AUTH requests [sdk] — so the AUTH is never pending settlement, not even for a moment. An AUTH
/// answered otherwise is suspended by a TRANSACTIONUPDATE right after (``OperationsStage`` upkeep). OPP and TapPay
/// hold a manual authorisation by the request itself (``request(_:mode:connector:)``).
public enum CaptureSuspension {
    /// The request to send for a payment of `mode`: a manual one asks the AUTH not to be captured, in each
    /// connector's terms (docs/connectors.md):
    /// - Trust Payments: `settlestatus "2"` (suspended), captured later by TRANSACTIONUPDATE;
    /// - OPP: `paymentType` `PA` (a pre-authorisation, whatever the merchant's `paymentType`), captured later by `CP`
    ///   [doc: OPP white-label back-office pages; other-gateways.md §2 [secondary]];
    /// - TapPay: `delay_capture_in_days` `-1`, "no automatic capture" [sdk: TapPay's Node SDK typings], captured later
    ///   by `/tpc/transaction/cap` [doc].
    public static func request(_ request: GatewayRequest, mode: CaptureMode, connector: ConnectorKind) -> GatewayRequest {
        guard mode == .manual, var payload = request.claims["payload"], payload.objectValue != nil else { return request }
        var requestTypes = request.requestTypes
        switch connector {
        case .trustPayments:
            payload.set("2", forKey: "settlestatus")
        case .opp:
            payload.set("PA", forKey: "paymentType")
            requestTypes = ["PA"]
        case .tapPay:
            payload.set(-1, forKey: "delay_capture_in_days")
        }
        var claims = request.claims
        claims.set(payload, forKey: "payload")
        return GatewayRequest(orderReference: request.orderReference, requestTypes: requestTypes, claims: claims)
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
