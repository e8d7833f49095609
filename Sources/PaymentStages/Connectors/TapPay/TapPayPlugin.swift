import Foundation
import HTTP
import Pipeline

/// TapPay's plug-in (``ConnectorRegistry``): its merchant-document section `gateway.tapPay` {merchantId, partnerKey},
/// its endpoint (the `merchant_id` as the account, the partner key as the secret) and its Pay-by-Prime body.
extension TapPayConnector: ConnectorPlugin {
    public static var kind: ConnectorKind { .tapPay }
    public static var operationTransports: [OperationProtocol.Transport] { [.tapPay] }

    /// No void API was found in TapPay's documents: voids fail `operation_not_supported`. Deferred amounts: an Apple Pay
    /// deferred-payment prime lives 30 days and "payment amount is set by Pay by Prime" [doc: TapPay Apple Pay guide].
    static let declaredCapabilities = ConnectorCapabilities(
        modes: [.gatewayDecrypts], capture: .full, void: false, refund: .partial, manualCapture: true, deferredAmount: true,
        deferredAmountLifetime: TapPayPrimeAge.Kind.deferred.lifetime, reconciliationKey: "bank_transaction_id")

    public static func make(_ settings: ConnectorWorkerSettings) throws(ConfigurationError) -> TapPayConnector {
        TapPayConnector(http: settings.http, transport: settings.transport)
    }

    public static func documentProblem(_ gateway: MerchantDocument.Gateway) -> String? {
        guard let settings = gateway.tapPay else { return "the tappay type needs gateway.tapPay {merchantId, partnerKey}" }
        if let problem = settings.problem(mode: gateway.mode) { return problem }
        guard let key = settings.partnerKey, (1...64).contains(key.utf8.count) else { return "gateway.tapPay.partnerKey is required (String(64))" }
        return ConnectorDocument.siteProblem(gateway, account: settings.merchantId, field: "tapPay.merchantId")
    }

    public static var sectionType: (any ConnectorSection.Type)? { TapPaySettings.self }

    public static func carriesSection(_ gateway: MerchantDocument.Gateway) -> Bool { gateway.tapPay != nil }

    public static func secret(in secrets: MerchantSecrets, for gateway: MerchantConfig.Gateway) -> String? { secrets.tapPayPartnerKey }

    public static func endpoint(_ gateway: MerchantConfig.Gateway, secret: String?, site: String?) -> Result<GatewayEndpoint, ConnectorBuildError> {
        guard let merchant = gateway.tapPay?.merchantId, !merchant.isEmpty, let secret, !secret.isEmpty else {
            return .failure(.notConfigured("no TapPay merchantId or partner key"))
        }
        return .success(GatewayEndpoint(baseUrl: gateway.baseUrl, siteReference: site ?? merchant, transport: .webservices, username: "",
                                        secret: secret, connector: kind))
    }

    public static func url(_ endpoint: GatewayEndpoint) -> String { endpoint.trimmedBase + TapPayWire.payByPrimePath }

    public static func request(
        gateway: MerchantConfig.Gateway, secrets: MerchantSecrets?, payment: GatewayPaymentDetails, data: StoredPaymentData?, issuedAt: Date
    ) throws(ConnectorBuildError) -> GatewayRequest {
        guard let settings = gateway.tapPay, secrets?.tapPayPartnerKey?.isEmpty == false else {
            throw .notConfigured("the TapPay gateway has no tapPay.merchantId or tapPay.partnerKey")
        }
        return try TapPayWire.payByPrimeRequest(settings: settings, payment: payment, data: data)
    }

    /// A TapPay job carries the prime TapPay's SDK gave the app.
    public static func credentialReplayKey(_ job: PaymentJob) -> String? { job.tapPayPrime.map(TapPayJob.transactionId(prime:)) }

    public static var credentialName: String? { StoredPaymentData.tapPayPrimeName }

    public static func credentialData(_ job: PaymentJob, publishedAt: Date) -> StoredPaymentData? {
        job.tapPayPrime.map {
            StoredPaymentData.tapPay(prime: $0, kind: job.amountPending ? .deferred : .ordinary, publishedAt: publishedAt,
                                     billingContact: job.billingContact, shippingContact: job.shippingContact)
        }
    }

    public static func jobMismatch(_ job: PaymentJob, connector: ConnectorKind?) -> String? { TapPayJob.mismatch(job, connector: connector) }

    /// The prime is a one-time credential for the card.
    public static var sensitiveKeys: Set<String> { ["prime", "partner_key"] }
    public static var panKeys: Set<String> { [] }
}
