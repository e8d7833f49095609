/// `paypipe merchant apply`'s check of a merchant document's gateway, per connector: a document that could never
/// send is refused when it is applied, not when its first payment fails. Pure.
public enum ConnectorDocument {
    /// Why `gateway` cannot be used, or nil.
    public static func problem(_ gateway: MerchantDocument.Gateway) -> String? {
        // An unknown type gets Trust Payments' checks, as before connectors (the authorize stage then refuses the type
        // itself, merchant_not_configured), so a document applied before is judged exactly as it was.
        let connector = gateway.connector
        guard connector.capabilities.modes.contains(gateway.mode) else {
            return "gateway.mode \(gateway.mode.rawValue) is not supported by the \(connector.rawValue) connector"
        }
        switch connector {
        case .trustPayments:
            guard gateway.opp == nil, gateway.tapPay == nil else { return "gateway.opp and gateway.tapPay belong to the opp and tappay types" }
            guard gateway.resolvedTransport == .webservices else { return nil }
            // The transport cannot send without its user.
            guard let user = gateway.webservicesUsername, !user.isEmpty, user.utf8.count <= 255 else {
                return "gateway.webservicesUsername is required by the webservices transport (1-255 characters)"
            }
            guard let password = gateway.webservicesPassword, !password.isEmpty else {
                return "gateway.webservicesPassword is required by the webservices transport"
            }
            return nil
        case .opp:
            guard let settings = gateway.opp else { return "the opp type needs gateway.opp {entityId, accessToken}" }
            guard gateway.tapPay == nil, gateway.jwtSecret == nil, gateway.webservicesPassword == nil else {
                return "an opp gateway carries no Trust Payments or TapPay credentials"
            }
            if let problem = settings.problem(mode: gateway.mode) { return problem }
            guard let token = settings.accessToken, !token.isEmpty, token.utf8.count <= 1024 else { return "gateway.opp.accessToken is required (at most 1024 characters)" }
            return siteProblem(gateway, account: settings.entityId, field: "opp.entityId")
        case .tapPay:
            guard let settings = gateway.tapPay else { return "the tappay type needs gateway.tapPay {merchantId, partnerKey}" }
            guard gateway.opp == nil, gateway.jwtSecret == nil, gateway.webservicesPassword == nil else {
                return "a tappay gateway carries no Trust Payments or OPP credentials"
            }
            if let problem = settings.problem(mode: gateway.mode) { return problem }
            guard let key = settings.partnerKey, (1...64).contains(key.utf8.count) else { return "gateway.tapPay.partnerKey is required (String(64))" }
            return siteProblem(gateway, account: settings.merchantId, field: "tapPay.merchantId")
        }
    }

    /// `siteReference` given alongside the account must name the same one: it is what attempts record and queries use.
    private static func siteProblem(_ gateway: MerchantDocument.Gateway, account: String, field: String) -> String? {
        gateway.siteReference == account ? nil : "gateway.siteReference, when given, must equal gateway.\(field)"
    }
}
