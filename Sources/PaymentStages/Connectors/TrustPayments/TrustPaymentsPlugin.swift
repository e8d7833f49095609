import Foundation
import HTTP
import Pipeline

/// Trust Payments' plug-in (``ConnectorRegistry``): its merchant-document section (`siteReference`, the `jwt` or
/// `webservices` transport and their users), its endpoint, and its stored request (``TrustPaymentsClaimsBuilder``).
extension TrustPaymentsClient: ConnectorPlugin {
    public static var kind: ConnectorKind { .trustPayments }

    /// `webservices` first: the operations of a merchant without gateway settings were always judged by its rules.
    public static var operationTransports: [OperationProtocol.Transport] { [.webservices, .jwt] }

    /// The pool's HTTP settings for the `jwt` transport; the `webservices` transport's from its two variables.
    public static func make(_ settings: ConnectorWorkerSettings) throws(ConfigurationError) -> TrustPaymentsClient {
        TrustPaymentsClient(http: settings.http, transport: settings.transport, webservices: try WebservicesTransport(settings.environment))
    }

    /// The `webservices` transport's (`PAYPIPE_WEBSERVICES_TIMEOUT`); the `jwt` transport calls on the pool's clients.
    public static func ownCallTimeout(_ environment: EnvironmentReader) throws(ConfigurationError) -> Double? {
        try WebservicesTransport(environment).totalTimeout
    }

    public static func documentProblem(_ gateway: MerchantDocument.Gateway) -> String? {
        guard gateway.resolvedTransport == .webservices else { return nil }
        // The transport cannot send without its user.
        guard let user = gateway.webservicesUsername, !user.isEmpty, user.utf8.count <= 255 else {
            return "gateway.webservicesUsername is required by the webservices transport (1-255 characters)"
        }
        guard let password = gateway.webservicesPassword, !password.isEmpty else {
            return "gateway.webservicesPassword is required by the webservices transport"
        }
        return nil
    }

    /// The transports' secrets.
    public static func carriesSection(_ gateway: MerchantDocument.Gateway) -> Bool { gateway.jwtSecret != nil || gateway.webservicesPassword != nil }

    /// A suspended AUTH is captured by TRANSACTIONUPDATE, which only the webservices transport sends.
    public static func manualCaptureProblem(_ gateway: MerchantDocument.Gateway) -> String? {
        gateway.resolvedTransport == .webservices ? nil : "captureMode \"manual\" needs transport \"webservices\" (captures are TRANSACTIONUPDATEs)"
    }

    /// The transport's secret: the JWT secret or the Webservices password.
    public static func secret(in secrets: MerchantSecrets, for gateway: MerchantConfig.Gateway) -> String? {
        secrets.gatewaySecret(for: gateway.resolvedTransport)
    }

    public static func endpoint(_ gateway: MerchantConfig.Gateway, secret: String?, site: String?) -> Result<GatewayEndpoint, ConnectorBuildError> {
        guard let username = gateway.username, !username.isEmpty, let secret, !secret.isEmpty else {
            return .failure(.notConfigured("no gateway settings or credentials for its transport"))
        }
        return .success(GatewayEndpoint(baseUrl: gateway.baseUrl, siteReference: site ?? gateway.siteReference, transport: gateway.resolvedTransport,
                                        username: username, secret: secret, connector: kind))
    }

    public static func url(_ endpoint: GatewayEndpoint) -> String {
        switch endpoint.transport {
        case .jwt: endpoint.jwtURL
        case .webservices: endpoint.jsonURL
        }
    }

    public static func request(
        gateway: MerchantConfig.Gateway, secrets: MerchantSecrets?, payment: GatewayPaymentDetails, data: StoredPaymentData?, issuedAt: Date
    ) throws(ConnectorBuildError) -> GatewayRequest {
        do {
            return try TrustPaymentsClaimsBuilder.build(
                gateway: gateway, jwtSecret: secrets?.jwtSecret, webservicesPassword: secrets?.webservicesPassword, payment: payment,
                data: data, issuedAt: issuedAt)
        } catch {
            throw ConnectorBuildError(error)
        }
    }

    /// `jwt` (a response's next request JWT) and `threedresponse` embed signed claims, so they are hidden too.
    public static var sensitiveKeys: Set<String> { ["pan", "tavv", "wallettoken", "expirydate", "securitycode", "cavv", "jwt", "threedresponse"] }
    public static var panKeys: Set<String> { ["pan"] }
}

extension WebservicesTransport {
    /// The transport's timeouts from `PAYPIPE_WEBSERVICES_CONNECT_TIMEOUT` and `PAYPIPE_WEBSERVICES_TIMEOUT`.
    public init(_ environment: EnvironmentReader) throws(ConfigurationError) {
        self.init(connectTimeout: try environment.read(PaymentSettings.webservicesConnectTimeout),
                  totalTimeout: try environment.read(PaymentSettings.webservicesTimeout))
    }
}
