/// `paypipe merchant apply`'s check of a merchant document's gateway, per connector: a document that could never
/// send is refused when it is applied, not when its first payment fails. Pure.
public enum ConnectorDocument {
    /// Why `gateway` cannot be used, or nil.
    public static func problem(_ gateway: MerchantDocument.Gateway) -> String? {
        // An unknown type gets the fallback connector's checks, as before there were several (the authorize stage
        // then refuses the type itself, merchant_not_configured), so a document applied before is judged as it was.
        let connector = gateway.connector
        guard connector.capabilities.modes.contains(gateway.mode) else {
            return "gateway.mode \(gateway.mode.rawValue) is not supported by the \(connector.rawValue) connector"
        }
        let foreign = ConnectorRegistry.all.filter { $0.kind != connector && $0.plugin.carriesSection(gateway) }.map(\.kind.rawValue)
        guard foreign.isEmpty else {
            return "a \(connector.rawValue) gateway carries no settings or credentials of \(foreign.joined(separator: " or ")) (their gateway.type's)"
        }
        return connector.plugin.documentProblem(gateway)
    }

    /// Why `captureMode` `manual` cannot work for `gateway`, or nil (``CaptureSuspension``: each connector holds a
    /// manual authorisation its own way, so an unknown type has none).
    public static func manualCaptureProblem(_ gateway: MerchantDocument.Gateway) -> String? {
        guard let registration = ConnectorRegistry.registration(gatewayType: gateway.type) else {
            let known = ConnectorRegistry.all.map(\.kind.rawValue).joined(separator: ", ")
            return "captureMode \"manual\" needs a known gateway.type (\(known))"
        }
        guard registration.capabilities.manualCapture else {
            return "captureMode \"manual\" is not supported by the \(registration.kind.rawValue) connector"
        }
        return registration.plugin.manualCaptureProblem(gateway)
    }

    /// `siteReference` given alongside the account must name the same one: it is what attempts record and queries use.
    public static func siteProblem(_ gateway: MerchantDocument.Gateway, account: String, field: String) -> String? {
        gateway.siteReference == account ? nil : "gateway.siteReference, when given, must equal gateway.\(field)"
    }

}
