import JWT
import Pipeline

/// How a manual-capture authorisation is held for a later capture (docs/operations-lifecycle.md "Capture mode"): the
/// AUTH request itself asks for it, in its connector's terms (``ConnectorPlugin/holdForCapture(_:requestTypes:)``, each
/// connector's folder cites its sources), so it is never captured automatically, not even for a moment. A
/// settlement-updates processor's AUTH answered unsuspended is suspended right after (``OperationsStage`` upkeep).
public enum CaptureSuspension {
    /// The request to send for a payment of `mode`: a manual one asks its connector's hold (docs/connectors.md); an
    /// automatic one is sent as it is.
    public static func request(_ request: GatewayRequest, mode: CaptureMode, connector: ConnectorKind) -> GatewayRequest {
        guard mode == .manual, var payload = request.claims["payload"], payload.objectValue != nil else { return request }
        var requestTypes = request.requestTypes
        connector.plugin.holdForCapture(&payload, requestTypes: &requestTypes)
        var claims = request.claims
        claims.set(payload, forKey: "payload")
        return GatewayRequest(orderReference: request.orderReference, requestTypes: requestTypes, claims: claims)
    }

    /// Whether `request` asked the AUTH to be suspended, in its connector's terms (``ConnectorPlugin/asksHold(_:)``).
    public static func asksSuspension(_ request: GatewayRequest) -> Bool {
        ConnectorRegistry.asksHold(request)
    }

    /// The answer to a suspended AUTH request: ``SettlementState/suspended`` is what was asked, so it is authorised
    /// (not the `gateway_suspended` review an automatic AUTH's suspension is).
    public static func result(_ result: GatewayResult, asked: Bool) -> GatewayResult {
        guard asked, result.reason == "gateway_suspended", result.settleStatus.map(SettlementState.init(storedCode:)) == .suspended else {
            return result
        }
        var authorized = result
        authorized.outcome = .authorized
        authorized.reason = nil
        return authorized
    }
}
