import Foundation
import HTTP
import JWT
import Pipeline

/// What PayPipe needs from a payment processor (docs/connectors.md). One implementation per processor, each in its
/// folder `Connectors/<Name>/` and listed in ``ConnectorRegistry``; ``GatewayConnectors`` picks one per merchant by the
/// endpoint's ``GatewayEndpoint/connector``.
///
/// A connector holds wire formats and mappings only. The exactly-once state machine (``SubmitProtocol``), the send
/// window (``SendWindow``), the endpoint gate (``CardDataTransportPolicy``, checked before any byte leaves) and the audit
/// trail (`gateway_attempts`) are written once, above the connectors.
///
/// Implementations never throw: every way a call can end (answer, refusal, timeout, forged or hostile answer) is a
/// ``GatewayResult`` or ``TransactionQueryResult`` the caller must record, its outcome one of ``GatewayOutcome``'s
/// (a processor's "pending" is `uncertain`).
public protocol GatewayConnector: Sendable {
    /// How the HTTP clients that calls run on are configured (the submit stage keeps a pool of keep-alive clients).
    var http: HTTPClientConfiguration { get }

    /// Seconds after which a call has certainly ended on our side.
    var totalTimeout: Double { get }

    /// The total timeout of a call to `endpoint`: what an attempt's reconciliation time adds to its send deadline.
    func totalTimeout(for endpoint: GatewayEndpoint) -> Double

    /// One authorisation of the stored `request` (built by ``ConnectorRequestBuilder``: decrypted network-token data,
    /// or the encrypted token when the processor decrypts), carrying `reference`, the per-payment reconciliation key.
    /// With a `window`, the request is never sent after its deadline.
    func authorize(
        _ request: GatewayRequest, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult

    /// The reconciliation query for an unknown outcome: what the processor holds under `reference`. A record is adopted
    /// only if it is the only one and matches `expected`.
    func find(
        reference: String, endpoint: GatewayEndpoint, expected: TransactionQueryResult.Expected, requestId: String, now: Date,
        using client: HTTPClient
    ) -> TransactionQueryResult

    /// Capture, void or refund of an authorised payment. A connector whose processor has no such API answers
    /// `permanentError` with the reason `operation_not_supported`, certainly not sent (``ConnectorCapabilities``).
    func perform(
        _ operation: ConnectorOperation, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult

    /// ``perform(_:endpoint:requestId:now:window:using:)`` carrying `reference`, PayPipe's own key of the operation,
    /// where the processor takes one (a merchant transaction id): what ``findOperation`` looks it up by.
    func perform(
        _ operation: ConnectorOperation, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult

    /// The processor's id a refund of a payment references: `payment` (the authorisation's id) unless the processor
    /// refunds a separately captured payment by its capture's id (`capture`: the id the processor gave the payment's
    /// capture, when a capture operation made one).
    func refundTarget(payment: String, capture: String?) -> String

    /// The status query reconciling an operation whose answer was lost, by filters a source confirms
    /// (docs/connectors.md): what the processor shows of it, for ``OperationProtocol/reconcile(_:before:effect:evidence:)``.
    func findOperation(
        _ operation: ConnectorOperation, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<OperationProtocol.Evidence, OperationQueryFailure>
}

extension GatewayConnector {
    /// Most processors refund the payment they authorised.
    public func refundTarget(payment: String, capture: String?) -> String { payment }

    /// A processor whose operations carry no reference of PayPipe's sends them as they are.
    public func perform(
        _ operation: ConnectorOperation, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        perform(operation, endpoint: endpoint, requestId: requestId, now: now, window: window, using: client)
    }
}

/// The rules every gateway call shares, submit's AUTH and query and operations' calls alike: the failure a call the
/// endpoint gate held back ends in, and what a call's error code tells the endpoint's circuit.
public enum GatewayCall {
    /// The failure code and reason of a call the gate held back: nothing was sent (an AUTH is certainly not sent, a
    /// query asked nothing). A refusal is a taken slot or the circuit; a rate refusal counts as the circuit's.
    public static func heldBack(_ refusal: EndpointGate.Refusal, merchantId: String, slots: Int) -> (code: String, reason: String) {
        switch refusal {
        case .busy: ("merchant_busy", "merchant \(merchantId) has \(slots) gateway calls in flight")
        case .circuitOpen, .rateLimited: ("circuit_open", "the gateway is failing; requests paused")
        }
    }

    /// What a call's error code tells the circuit. Only failures that say nothing about the payment count (connection
    /// refused, timeouts, resets, 5xx): a decline or a field error is a healthy gateway; an AUTH the send window held
    /// back was never sent and says nothing.
    public static func report(_ code: String?) -> CallReport {
        guard let code else { return .healthy }
        if code == "paypipe.send_window" { return .silent }
        return code == "paypipe.transport" || code.hasPrefix("paypipe.http_5") ? .failed(pause: nil) : .healthy
    }
}

/// The submit stage's name for the connector protocol (it predates the other connectors).
public typealias PaymentGateway = GatewayConnector

/// A back-office operation on an authorised payment, in the processor-neutral form connectors translate.
public enum ConnectorOperation: Sendable, Equatable {
    /// Capture `amountMinor` of the authorisation `transactionId` (the processor's id of the payment).
    case capture(transactionId: String, amountMinor: Int64, currency: String)
    /// Cancel the authorisation before capture (a reversal).
    case void(transactionId: String)
    /// Refund `amountMinor` of a captured payment.
    case refund(transactionId: String, amountMinor: Int64, currency: String)

    public var name: String {
        switch self {
        case .capture: "capture"
        case .void: "void"
        case .refund: "refund"
        }
    }

    /// The processor's id of the payment operated on.
    public var transactionId: String {
        switch self {
        case .capture(let id, _, _), .void(let id), .refund(let id, _, _): id
        }
    }

    /// The operation the operations worker decided (``OperationProtocol``), in this form; nil for one a processor's own
    /// capture, void and refund cannot express (a capture without its amount, a lowered capture, a suspension).
    public init?(_ operation: GatewayOperation, currency: String) {
        switch operation {
        case .capture(let id, let amount?): self = .capture(transactionId: id, amountMinor: amount, currency: currency)
        case .void(let id): self = .void(transactionId: id)
        case .refund(let id, let amount): self = .refund(transactionId: id, amountMinor: amount, currency: currency)
        case .capture(_, nil), .lowerCapture, .hold: return nil
        }
    }
}

/// What a connector supports, for docs/connectors.md, `paypipe merchant apply` and the operations worker.
public struct ConnectorCapabilities: Sendable, Equatable {
    public enum Amounts: String, Sendable { case none, full, partial }

    public var modes: Set<MerchantDocument.Gateway.Mode>
    public var capture: Amounts
    public var void: Bool
    public var refund: Amounts
    /// Whether an authorisation can be held for a later capture (`captureMode` `manual`).
    public var manualCapture: Bool
    /// Merchant-initiated charges on a stored credential (none yet: room for recurring payments).
    public var storedCredentials: Bool
    /// An authorisation whose amount is fixed later: a job with `amountPending` (docs/job-contract.md, "Deferred payments (amount set later)").
    public var deferredAmount: Bool
    /// How long a deferred payment's credential lives (seconds from the job's receipt); 0 without ``deferredAmount``.
    public var deferredAmountLifetime: TimeInterval
    /// The field that identifies one payment at the processor, written on every attempt.
    public var reconciliationKey: String

    public init(modes: Set<MerchantDocument.Gateway.Mode>, capture: Amounts, void: Bool, refund: Amounts, manualCapture: Bool,
                storedCredentials: Bool = false, deferredAmount: Bool = false, deferredAmountLifetime: TimeInterval = 0, reconciliationKey: String) {
        self.modes = modes
        self.capture = capture
        self.void = void
        self.refund = refund
        self.manualCapture = manualCapture
        self.storedCredentials = storedCredentials
        self.deferredAmount = deferredAmount
        self.deferredAmountLifetime = deferredAmountLifetime
        self.reconciliationKey = reconciliationKey
    }

    /// Whether `operation` is possible at all (amount rules are the processor's to enforce).
    public func supports(_ operation: ConnectorOperation) -> Bool {
        switch operation {
        case .capture: capture != .none
        case .void: void
        case .refund: refund != .none
        }
    }
}

extension GatewayResult {
    /// The answer of an operation a connector cannot perform: permanent, certainly not sent.
    static func unsupported(_ operation: ConnectorOperation, connector: ConnectorKind) -> GatewayResult {
        var result = GatewayResult.local(.permanentError, code: "paypipe.operation_not_supported",
                                         message: "\(connector.rawValue) has no \(operation.name) API")
        result.reason = "operation_not_supported"
        return result
    }
}

/// The connectors of a worker, one per ``ConnectorKind`` (``ConnectorRegistry/connectors(_:)``), chosen by each call's
/// endpoint: what the submit and operations stages hold.
public struct GatewayConnectors: GatewayConnector {
    private let connectors: [ConnectorKind: any ConnectorPlugin]

    /// One connector for every registered kind.
    public init(_ connectors: [ConnectorKind: any ConnectorPlugin]) {
        precondition(ConnectorKind.allCases.allSatisfy { connectors[$0] != nil }, "every registered connector needs an instance")
        self.connectors = connectors
    }

    public func connector(_ kind: ConnectorKind) -> any ConnectorPlugin {
        guard let connector = connectors[kind] else { preconditionFailure("connector \(kind.rawValue) has no instance") }
        return connector
    }

    private var primary: any GatewayConnector { connector(ConnectorRegistry.fallback) }

    /// The pool's clients are the first connector's; the others set their own timeouts on each request.
    public var http: HTTPClientConfiguration { primary.http }
    public var totalTimeout: Double { primary.totalTimeout }

    public func totalTimeout(for endpoint: GatewayEndpoint) -> Double { connector(endpoint.connector).totalTimeout(for: endpoint) }

    public func authorize(
        _ request: GatewayRequest, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        connector(endpoint.connector).authorize(request, reference: reference, endpoint: endpoint, requestId: requestId, now: now, window: window, using: client)
    }

    public func find(
        reference: String, endpoint: GatewayEndpoint, expected: TransactionQueryResult.Expected, requestId: String, now: Date,
        using client: HTTPClient
    ) -> TransactionQueryResult {
        connector(endpoint.connector).find(reference: reference, endpoint: endpoint, expected: expected, requestId: requestId, now: now, using: client)
    }

    public func perform(
        _ operation: ConnectorOperation, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        connector(endpoint.connector).perform(operation, endpoint: endpoint, requestId: requestId, now: now, window: window, using: client)
    }

    public func perform(
        _ operation: ConnectorOperation, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        connector(endpoint.connector).perform(operation, reference: reference, endpoint: endpoint, requestId: requestId, now: now, window: window,
                                              using: client)
    }

    /// ``GatewayConnector/refundTarget(payment:capture:)`` of the endpoint's connector.
    public func refundTarget(payment: String, capture: String?, endpoint: GatewayEndpoint) -> String {
        connector(endpoint.connector).refundTarget(payment: payment, capture: capture)
    }

    public func findOperation(
        _ operation: ConnectorOperation, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<OperationProtocol.Evidence, OperationQueryFailure> {
        connector(endpoint.connector).findOperation(operation, reference: reference, endpoint: endpoint, requestId: requestId, now: now, using: client)
    }
}

/// What a worker builds its connectors from (``ConnectorPlugin/make(_:)``).
public struct ConnectorWorkerSettings: Sendable {
    public var http: HTTPClientConfiguration
    public var transport: CardDataTransportPolicy
    public var environment: EnvironmentReader

    public init(http: HTTPClientConfiguration, transport: CardDataTransportPolicy, environment: EnvironmentReader = EnvironmentReader()) {
        self.http = http
        self.transport = transport
        self.environment = environment
    }
}

/// A processor's plug-in: everything the shared code asks of one connector beyond its calls, implemented in its folder
/// (`Connectors/<Name>/`) and listed in ``ConnectorRegistry``. Pure, except ``make(_:)`` reading the environment.
public protocol ConnectorPlugin: GatewayConnector, OperationConnector {
    /// Its id (its row in ``ConnectorRegistry``).
    static var kind: ConnectorKind { get }

    /// The worker's instance.
    static func make(_ settings: ConnectorWorkerSettings) throws(ConfigurationError) -> Self

    /// The total timeout of its calls on a transport of its own, beyond the worker's pool (`PAYPIPE_GATEWAY_TIMEOUT`),
    /// from the environment, or nil when it calls on the pool's clients only: what bounds an attempt's reconciliation
    /// time (``ConnectorRegistry/longestOwnTimeout(_:)``).
    static func ownCallTimeout(_ environment: EnvironmentReader) throws(ConfigurationError) -> Double?

    /// Why the merchant document's `gateway` (of this connector's type) cannot be used, or nil: `paypipe merchant
    /// apply` refuses it then, not at its first payment. The mode is checked against the capabilities before.
    static func documentProblem(_ gateway: MerchantDocument.Gateway) -> String?

    /// Its own section of the merchant document's `gateway`, if it has one (``ConnectorSection``).
    static var sectionType: (any ConnectorSection.Type)? { get }

    /// Whether the document carries this connector's own section or credentials (another connector's document must not).
    static func carriesSection(_ gateway: MerchantDocument.Gateway) -> Bool

    /// Why `captureMode` `manual` cannot work for this document, or nil.
    static func manualCaptureProblem(_ gateway: MerchantDocument.Gateway) -> String?

    /// The secret calls need, from the merchant's sealed secrets.
    static func secret(in secrets: MerchantSecrets, for gateway: MerchantConfig.Gateway) -> String?

    /// The endpoint of a merchant's gateway section and secret (``secret(in:for:)``), or why there is none: account and
    /// secret must both be set. `site` (an attempt's stored account) replaces the configured one.
    static func endpoint(_ gateway: MerchantConfig.Gateway, secret: String?, site: String?) -> Result<GatewayEndpoint, ConnectorBuildError>

    /// The URL an endpoint's calls post to (also the key of its circuit in the endpoint gate).
    static func url(_ endpoint: GatewayEndpoint) -> String

    /// The stored request of a payment (authorize stage).
    static func request(
        gateway: MerchantConfig.Gateway, secrets: MerchantSecrets?, payment: GatewayPaymentDetails, data: StoredPaymentData?, issuedAt: Date
    ) throws(ConnectorBuildError) -> GatewayRequest

    /// For a connector whose jobs carry its own one-time credential in place of an Apple Pay token: the job's replay
    /// key (decrypt's `transaction_id`), or nil for a job without one.
    static func credentialReplayKey(_ job: PaymentJob) -> String?
    /// The credential's name in stored payment data (``ProcessorCredential``), for such a connector.
    static var credentialName: String? { get }
    /// What decrypt stores for such a job (no card data), its credential's age measured from `publishedAt`.
    static func credentialData(_ job: PaymentJob, publishedAt: Date) -> StoredPaymentData?
    /// Why `job` does not fit a merchant whose connector is `connector` (`malformed_token`), or nil.
    static func jobMismatch(_ job: PaymentJob, connector: ConnectorKind?) -> String?

    /// Asks a manual-capture AUTH (its stored request's `payload` object and request types) to be held for a later
    /// capture rather than captured automatically (``CaptureSuspension``). Every connector declaring
    /// ``ConnectorCapabilities/manualCapture`` must hold it; no default, so a new connector decides.
    static func holdForCapture(_ payload: inout JSONValue, requestTypes: inout [String])
    /// Whether a stored AUTH request already asks that hold (``CaptureSuspension/asksSuspension(_:)``); false by default.
    static func asksHold(_ request: GatewayRequest) -> Bool

    /// Whether and how it stores credentials for merchant-initiated payments (docs/recurring.md): nil for a connector
    /// that cannot (its storing and MIT jobs fail `credential_not_supported` before any call). Its processor's fields
    /// are in its folder (`<Name>StoredCredentials.swift`).
    static var storedCredentials: StoredCredentialSupport? { get }
    /// The references an authorised storing payment's answer gives for its later MITs (sealed with the credential);
    /// empty: none. By default what the answer's parsing put in ``GatewayResult/credentialReferences``.
    static func credentialReferences(of result: GatewayResult) -> [String: String]
    /// Whether a stored request is a storing payment's (so submit reads what its credential shows only for those).
    static func storesCredential(_ request: GatewayRequest) -> Bool

    /// Lower-cased keys of its stored requests that hold card data or bearer material (``ClaimsRedactor``).
    static var sensitiveKeys: Set<String> { get }
    /// Those of them holding a PAN.
    static var panKeys: Set<String> { get }

    /// Every operation transport its merchants may have (``OperationConnector/operationTransport(_:)`` returns one of
    /// them), the first for a merchant without gateway settings: what the registry learns the stored request names
    /// from (``ConnectorRegistry/requestNames``), so no shared code spells them.
    static var operationTransports: [OperationProtocol.Transport] { get }
}

extension ConnectorPlugin {
    /// The registry's row of capabilities.
    public static var capabilities: ConnectorCapabilities { kind.capabilities }

    public static func manualCaptureProblem(_ gateway: MerchantDocument.Gateway) -> String? { nil }
    public static func ownCallTimeout(_ environment: EnvironmentReader) throws(ConfigurationError) -> Double? { nil }
    public static var sectionType: (any ConnectorSection.Type)? { nil }
    public static func credentialReplayKey(_ job: PaymentJob) -> String? { nil }
    public static var credentialName: String? { nil }
    public static func credentialData(_ job: PaymentJob, publishedAt: Date) -> StoredPaymentData? { nil }
    public static func jobMismatch(_ job: PaymentJob, connector: ConnectorKind?) -> String? { nil }
    public static func asksHold(_ request: GatewayRequest) -> Bool { false }
    public static var storedCredentials: StoredCredentialSupport? { nil }
    public static func credentialReferences(of result: GatewayResult) -> [String: String] { result.credentialReferences }
    public static func storesCredential(_ request: GatewayRequest) -> Bool { false }
}
