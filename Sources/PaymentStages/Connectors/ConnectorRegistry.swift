import Foundation
import HTTP
import JWT
import Pipeline

/// Which processor a merchant uses: the connector's id, what ``MerchantDocument/Gateway/type`` resolves to through the
/// registry's aliases. Its raw value is the id (docs/connectors.md).
public enum ConnectorKind: String, Codable, Sendable, CaseIterable {
    case trustPayments = "trustpayments"
    case opp
    case tapPay = "tappay"

    /// `gateway.type`, compared lower-cased without `-`/`_` against every connector's aliases (``ConnectorRegistry``).
    /// Nil for a type no connector claims.
    public init?(gatewayType: String) {
        guard let registration = ConnectorRegistry.registration(gatewayType: gatewayType) else { return nil }
        self = registration.kind
    }

    /// What the connector supports (the registry's row).
    public var capabilities: ConnectorCapabilities { registration.capabilities }

    /// The `gateway.type` values that select the connector, normalised (lower case, no `-`/`_`).
    public var aliases: [String] { registration.aliases }

    var registration: ConnectorRegistration { ConnectorRegistry.registration(self) }
    var plugin: any ConnectorPlugin.Type { registration.plugin }

    /// What it declares about stored credentials (``ConnectorPlugin/storedCredentials``); nil: it stores none.
    public var storedCredentials: StoredCredentialSupport? { plugin.storedCredentials }
}

/// One row of the registry: a connector's id, aliases, capabilities and implementation.
public struct ConnectorRegistration: Sendable {
    public let kind: ConnectorKind
    /// Normalised `gateway.type` values (lower case, no `-`/`_`); the id is always one of them.
    public let aliases: [String]
    public let capabilities: ConnectorCapabilities
    public let plugin: any ConnectorPlugin.Type
}

/// The connectors PayPipe knows: the one list the merchant documents, the authorize, submit and operations stages and
/// `paypipe merchant` resolve a processor through. Adding a connector is one row here and its folder
/// (docs/connectors.md, "Adding a connector").
public enum ConnectorRegistry {
    public static let all: [ConnectorRegistration] = [
        ConnectorRegistration(
            kind: .trustPayments, aliases: ["trustpayments", "securetrading"],
            capabilities: ConnectorCapabilities(
                modes: [.merchantDecrypts, .gatewayDecrypts], capture: .partial, void: true, refund: .partial, manualCapture: true,
                reconciliationKey: "orderreference"),
            plugin: TrustPaymentsClient.self),
        ConnectorRegistration(
            kind: .opp, aliases: ["opp", "aci", "acioppwa", "oppwa"],
            capabilities: ConnectorCapabilities(
                modes: [.merchantDecrypts, .gatewayDecrypts], capture: .partial, void: true, refund: .partial, manualCapture: true,
                reconciliationKey: "merchantTransactionId"),
            plugin: OPPConnector.self),
        ConnectorRegistration(
            kind: .tapPay, aliases: ["tappay"], capabilities: TapPayConnector.declaredCapabilities, plugin: TapPayConnector.self),
    ]

    /// The connector of a `gateway.type` no connector claims, for the checks made before the type itself is refused:
    /// such documents were judged by the first connector's rules before there were others, and still are.
    public static let fallback: ConnectorKind = all[0].kind

    private static let byKind: [ConnectorKind: ConnectorRegistration] = Dictionary(uniqueKeysWithValues: all.map { ($0.kind, $0) })
    private static let byAlias: [String: ConnectorRegistration] = Dictionary(
        uniqueKeysWithValues: all.flatMap { registration in registration.aliases.map { ($0, registration) } })

    /// Every ``ConnectorKind`` has a row (``ConnectorRegistryTests`` checks it).
    public static func registration(_ kind: ConnectorKind) -> ConnectorRegistration {
        guard let registration = byKind[kind] else { preconditionFailure("connector \(kind.rawValue) is not registered") }
        return registration
    }

    public static func registration(gatewayType: String) -> ConnectorRegistration? { byAlias[normalized(gatewayType)] }

    /// How `gateway.type` is compared: lower-cased, without `-` and `_`.
    public static func normalized(_ gatewayType: String) -> String { gatewayType.lowercased().filter { $0 != "-" && $0 != "_" } }

    /// Every connector's merchant-document section type (``ConnectorPlugin/sectionType``).
    static var sectionTypes: [any ConnectorSection.Type] { all.compactMap { $0.plugin.sectionType } }

    /// The names stored payment data keeps connectors' credentials under (``ProcessorCredential``).
    static let credentialNames: [String] = all.compactMap { $0.plugin.credentialName }

    /// The replay key of a job carrying a connector's own credential instead of a token, or nil (decrypt).
    public static func credentialReplayKey(_ job: PaymentJob) -> String? {
        all.lazy.compactMap { $0.plugin.credentialReplayKey(job) }.first
    }

    /// What decrypt stores for a job carrying a connector's own credential, or nil for a token job.
    public static func credentialData(_ job: PaymentJob, publishedAt: Date) -> StoredPaymentData? {
        all.lazy.compactMap { $0.plugin.credentialData(job, publishedAt: publishedAt) }.first
    }

    /// Whether a stored AUTH request asks its connector's hold for a later capture (``ConnectorPlugin/asksHold(_:)``).
    public static func asksHold(_ request: GatewayRequest) -> Bool {
        all.contains { $0.plugin.asksHold(request) }
    }

    /// Why `job` does not fit its merchant's connector (`malformed_token`), or nil.
    public static func jobMismatch(_ job: PaymentJob, connector: ConnectorKind?) -> String? {
        all.lazy.compactMap { $0.plugin.jobMismatch(job, connector: connector) }.first
    }

    /// Every request name a connector declares for its operations and status query (``ConnectorPlugin/operationTransports``),
    /// as `operation_attempts` and `payment_operations` store them.
    public static let requestNames: Set<String> = Set(all.flatMap { registration in
        registration.plugin.operationTransports.flatMap { transport in
            let names = transport.requestNames
            return [names.capture, names.void, names.lowerCapture, names.hold, names.refund, names.query]
        }
    })

    /// The stored request names of status queries: how an operation's query attempts are told from its request attempts,
    /// whichever connector made them.
    public static let queryRequestNames: Set<String> = Set(all.flatMap { $0.plugin.operationTransports.map(\.requestNames.query) })

    /// The `gateway_attempts.request_type` stored for every connector's AUTH status query (submit's reconciliation),
    /// whichever connector made it. It is the ``fallback`` connector's status-query name because rows were written
    /// with it before there were other connectors, and submit tells its queries from AUTH attempts by this value
    /// (`PaymentStore+Submit`, `SubmitPlanStatement`): a stored constant, kept as existing rows hold it
    /// (``ConnectorRegistryTests`` pins it).
    public static let authStatusQueryRequestType: String = fallbackOperationTransport.requestNames.query

    /// The transport of a merchant without gateway settings: the ``fallback`` connector's first.
    public static var fallbackOperationTransport: OperationProtocol.Transport { registration(fallback).plugin.operationTransports[0] }

    /// Every connector's keys holding card data or secrets in its stored requests (``ClaimsRedactor``).
    public static var sensitiveKeys: Set<String> { all.reduce(into: []) { $0.formUnion($1.plugin.sensitiveKeys) } }
    /// The keys among them that hold a PAN (shown with its last four digits).
    public static var panKeys: Set<String> { all.reduce(into: []) { $0.formUnion($1.plugin.panKeys) } }

    /// The longest total timeout of a call on a connector's own transport (``ConnectorPlugin/ownCallTimeout(_:)``), 0
    /// when every connector calls on the pool's clients.
    public static func longestOwnTimeout(_ environment: EnvironmentReader) throws(ConfigurationError) -> Double {
        var longest = 0.0
        for registration in all { longest = max(longest, try registration.plugin.ownCallTimeout(environment) ?? 0) }
        return longest
    }

    /// One instance of every connector for a worker, from its HTTP settings, card-data policy and environment.
    public static func connectors(_ settings: ConnectorWorkerSettings) throws(ConfigurationError) -> GatewayConnectors {
        var made: [ConnectorKind: any ConnectorPlugin] = [:]
        for registration in all { made[registration.kind] = try registration.plugin.make(settings) }
        return GatewayConnectors(made)
    }
}

extension GatewayConnectors {
    /// The three connectors by name (the stages' launch code and tests).
    public init(trustPayments: TrustPaymentsClient, opp: OPPConnector, tapPay: TapPayConnector) {
        self.init([.trustPayments: trustPayments, .opp: opp, .tapPay: tapPay])
    }
}

/// Where and as whom a merchant's requests go: its connector, account, transport, user and secret, as the connector
/// builds them from the merchant's gateway section (``ConnectorPlugin/endpoint(_:secret:site:)``). The description
/// never shows the secret.
public struct GatewayEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// How submit reaches the gateway: the merchant document's `gateway.transport` (docs/merchant-config.md,
    /// docs/submit.md; ``MerchantDocument/Gateway/Transport``).
    public enum Transport: String, Codable, Sendable, CaseIterable {
        /// The Webservices JSON API: `POST {baseUrl}/json/` with HTTP Basic as a Webservices user, the route
        /// of the processor's server-side SDKs, on which its status query is documented.
        case webservices
        /// `POST {baseUrl}/jwt/` with a request JWT signed by a "Webservices JWT" user: for accounts that only
        /// have such a user.
        case jwt
    }

    /// The processor's base URL (`gateway.baseUrl`); the connector appends its paths (``url``).
    public let baseUrl: String
    public let siteReference: String
    public let transport: Transport
    /// The user requests go out as, for connectors that have one (else empty).
    public let username: String
    let secret: String
    /// The processor (``GatewayConnector``) calls to this endpoint go to; ``siteReference`` is its account.
    public let connector: ConnectorKind

    /// A `jwt` endpoint.
    public init(baseUrl: String, siteReference: String, jwtUsername: String, secret: String) {
        self.init(baseUrl: baseUrl, siteReference: siteReference, transport: .jwt, username: jwtUsername, secret: secret)
    }

    public init(baseUrl: String, siteReference: String, transport: Transport, username: String, secret: String,
                connector: ConnectorKind = ConnectorRegistry.fallback) {
        self.connector = connector
        self.baseUrl = baseUrl
        self.siteReference = siteReference
        self.transport = transport
        self.username = username
        self.secret = secret
    }

    /// The `jwt` transport's issuer (the username whatever the transport, kept for existing callers).
    public var jwtUsername: String { username }

    /// The URL this endpoint's calls post to (also the key of its circuit in the endpoint gate).
    public var url: String { connector.plugin.url(self) }

    var trimmedBase: String { baseUrl.hasSuffix("/") ? String(baseUrl.dropLast()) : baseUrl }

    public var description: String { "GatewayEndpoint(\(url), site: \(siteReference), user: \(username))" }
}

/// A merchant's endpoint, as the registry's connector for its gateway section builds it: beside the endpoint and the
/// registry, so a stage resolving where its calls go reads one file.
extension GatewayEndpoint {
    /// The endpoint of a merchant's gateway settings, or why there is none: a connector's account and secret must both
    /// be set. `site` (an attempt's stored site, entity or merchant id) replaces the configured one, so a status query
    /// goes where the attempt went.
    public static func forMerchant(_ gateway: MerchantConfig.Gateway?, secrets: MerchantSecrets?, site: String?) -> Result<GatewayEndpoint, ConnectorBuildError> {
        guard let gateway else { return .failure(.notConfigured("no gateway settings")) }
        return gateway.connector.plugin.endpoint(gateway, secret: secrets?.connectorSecret(for: gateway), site: site)
    }
}

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