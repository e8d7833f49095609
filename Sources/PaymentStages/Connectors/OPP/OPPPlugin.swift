import Foundation
import HTTP
import Pipeline

/// OPP's plug-in (``ConnectorRegistry``): its merchant-document section `gateway.opp` {entityId, accessToken}, its
/// endpoint (the `entityId` as the account, the bearer token as the secret) and its stored form.
extension OPPConnector: ConnectorPlugin {
    public static var kind: ConnectorKind { .opp }
    public static var operationTransports: [OperationProtocol.Transport] { [.opp] }

    public static func make(_ settings: ConnectorWorkerSettings) throws(ConfigurationError) -> OPPConnector {
        OPPConnector(http: settings.http, transport: settings.transport)
    }

    public static func documentProblem(_ gateway: MerchantDocument.Gateway) -> String? {
        guard let settings = gateway.opp else { return "the opp type needs gateway.opp {entityId, accessToken}" }
        if let problem = settings.problem(mode: gateway.mode) { return problem }
        guard let token = settings.accessToken, !token.isEmpty, token.utf8.count <= 1024 else { return "gateway.opp.accessToken is required (at most 1024 characters)" }
        return ConnectorDocument.siteProblem(gateway, account: settings.entityId, field: "opp.entityId")
    }

    public static var sectionType: (any ConnectorSection.Type)? { OPPSettings.self }

    public static func carriesSection(_ gateway: MerchantDocument.Gateway) -> Bool { gateway.opp != nil }

    public static func secret(in secrets: MerchantSecrets, for gateway: MerchantConfig.Gateway) -> String? { secrets.oppAccessToken }

    public static func endpoint(_ gateway: MerchantConfig.Gateway, secret: String?, site: String?) -> Result<GatewayEndpoint, ConnectorBuildError> {
        guard let entity = gateway.opp?.entityId, !entity.isEmpty, let secret, !secret.isEmpty else {
            return .failure(.notConfigured("no OPP entityId or access token"))
        }
        return .success(GatewayEndpoint(baseUrl: gateway.baseUrl, siteReference: site ?? entity, transport: .webservices, username: "",
                                        secret: secret, connector: kind))
    }

    public static func url(_ endpoint: GatewayEndpoint) -> String { endpoint.trimmedBase + "/v1/payments" }

    public static func request(
        gateway: MerchantConfig.Gateway, secrets: MerchantSecrets?, payment: GatewayPaymentDetails, data: StoredPaymentData?, issuedAt: Date
    ) throws(ConnectorBuildError) -> GatewayRequest {
        guard let settings = gateway.opp, secrets?.oppAccessToken?.isEmpty == false else {
            throw .notConfigured("the OPP gateway has no opp.entityId or opp.accessToken")
        }
        return try OPPWire.authorizationRequest(settings: settings, mode: gateway.mode, payment: payment, data: data)
    }

    public static var sensitiveKeys: Set<String> {
        ["card.number", "card.expirymonth", "card.expiryyear", "threedsecure.verificationid", "applepay.paymenttoken", "registrationpath"]
    }
    public static var panKeys: Set<String> { ["card.number"] }
}
