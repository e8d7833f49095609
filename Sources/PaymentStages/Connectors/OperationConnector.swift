import Foundation
import HTTP
import Pipeline

/// The operations worker's calls of a processor (docs/operations-lifecycle.md): an operation's request, the status
/// query reconciling a lost answer, the suspension of a manual AUTH the processor left pending settlement, and the
/// settlement query. Every connector implements them beside its other calls, in its folder; the operations stage
/// decides which to make and carries them out through the call-out phase (the pool, the endpoint gate, the send
/// window), never naming a processor.
///
/// Like ``GatewayConnector``'s, these calls never throw: every way a call ends is an answer the stage records.
public protocol OperationConnector: Sendable {
    /// How the operation rules (``OperationProtocol``) see a merchant of this processor.
    func operationTransport(_ gateway: MerchantConfig.Gateway) -> OperationProtocol.Transport

    /// What an operation's call needs read besides the operation itself (``OperationNeeds``).
    var operationNeeds: OperationNeeds { get }

    /// PayPipe's own reference of one operation, for a processor that takes one with the request and finds the
    /// operation by it (a merchant transaction id, docs/connectors.md); others ignore it.
    func operationReference(paymentReference: String, operationRowId: Int64) -> String

    /// Sends the decided request; the send gate of `window` keeps its bytes from leaving after the attempt's deadline.
    func operate(
        _ request: GatewayOperation, _ context: OperationContext, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> OperationSteps.Answer

    /// What the processor shows of `request` whose answer was lost (``OperationProtocol/reconcile(_:before:effect:evidence:)``).
    func findOperation(
        _ request: GatewayOperation, _ context: OperationContext, endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<OperationProtocol.Evidence, OperationQueryFailure>

    /// What the operations worker's upkeep does for payments of `endpoint` (``UpkeepCapabilities``).
    func upkeep(_ endpoint: GatewayEndpoint) -> UpkeepCapabilities

    /// Whether the settlement of this processor's captured payments is polled on any endpoint (which merchants the
    /// poll reads at all; ``upkeep(_:)`` decides per endpoint).
    var pollsSettlement: Bool { get }

    /// Holds a manual-capture AUTH the processor answered pending settlement, so it is not captured before an
    /// operation says so. Only asked where ``upkeep(_:)`` says the processor needs it.
    func suspend(transactionReference: String, endpoint: GatewayEndpoint, requestId: String, using client: HTTPClient) -> OperationSteps.Answer

    /// Whether each payment settled since its capture, by its processor reference: the status the processor shows,
    /// absent when it returned nothing of the payment. A failed query is `.failure` (asked again later).
    func querySettlement(
        _ payments: [SettlementQuery], endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<[String: OperationProtocol.QueriedAuth], OperationQueryFailure>
}

/// What an operation call of a connector needs read from the database besides the operation.
public struct OperationNeeds: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The payment's currency (a processor whose capture or refund names it).
    public static let currency = OperationNeeds(rawValue: 1)
    /// The processor's id of the payment's capture, for a refund (a processor that refunds a separately captured
    /// payment by its capture's id).
    public static let captureReference = OperationNeeds(rawValue: 2)
}

/// What the operations worker's upkeep does for a connector's payments (data, decided per endpoint).
public struct UpkeepCapabilities: Sendable, Equatable {
    /// A manual-capture AUTH the processor left pending settlement is suspended by ``OperationConnector/suspend``.
    public var suspendsManualAuthorizations: Bool
    /// Captured payments' settlement is polled (``OperationConnector/querySettlement``) on the settlement schedule.
    public var pollsSettlement: Bool
    /// A refund of a payment still recorded `captured` asks first whether it settled since.
    public var learnsSettlementBeforeRefund: Bool

    public init(suspendsManualAuthorizations: Bool = false, pollsSettlement: Bool = false, learnsSettlementBeforeRefund: Bool = false) {
        self.suspendsManualAuthorizations = suspendsManualAuthorizations
        self.pollsSettlement = pollsSettlement
        self.learnsSettlementBeforeRefund = learnsSettlementBeforeRefund
    }
}

/// What an operation call carries besides its request, read in the prepare (``OperationNeeds``).
public struct OperationContext: Sendable, Equatable {
    /// PayPipe's reference of the operation (``OperationConnector/operationReference(paymentReference:operationRowId:)``).
    public var reference: String
    /// The payment's currency, empty when not needed.
    public var currency: String
    /// The processor's id of the payment's capture, when a capture operation recorded one.
    public var capture: String?

    public init(reference: String, currency: String = "", capture: String? = nil) {
        self.reference = reference
        self.currency = currency
        self.capture = capture
    }
}

/// One payment of a settlement query: its processor reference and currency.
public struct SettlementQuery: Sendable, Equatable, Hashable {
    public var transactionReference: String
    public var currency: String

    public init(transactionReference: String, currency: String) {
        self.transactionReference = transactionReference
        self.currency = currency
    }
}

/// The connectors whose operations are the processor's own capture, void and refund (``ConnectorOperation``): the
/// decided request in that form, in the payment's currency, with the operation's own reference; a refund references
/// what the processor refunds (``GatewayConnector/refundTarget(payment:capture:)``).
extension OperationConnector where Self: GatewayConnector {
    public var operationNeeds: OperationNeeds { [.currency] }

    /// The request as a ``ConnectorOperation``; nil for a request of another processor's kind.
    func connectorOperation(_ request: GatewayOperation, _ context: OperationContext) -> ConnectorOperation? {
        switch ConnectorOperation(request, currency: context.currency) {
        case .refund(let payment, let amount, let currency)?:
            .refund(transactionId: refundTarget(payment: payment, capture: context.capture), amountMinor: amount, currency: currency)
        case let other: other
        }
    }

    public func operate(
        _ request: GatewayOperation, _ context: OperationContext, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> OperationSteps.Answer {
        guard let operation = connectorOperation(request, context) else {
            return .refused(code: "operation_not_supported", message: "a \(request.name) is not a \(endpoint.connector.rawValue) operation")
        }
        return OperationSteps.Answer(connectorResult: perform(operation, reference: context.reference, endpoint: endpoint, requestId: requestId,
                                                              now: now, window: window, using: client))
    }

    public func findOperation(
        _ request: GatewayOperation, _ context: OperationContext, endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<OperationProtocol.Evidence, OperationQueryFailure> {
        guard let operation = connectorOperation(request, context) else {
            return .failure(OperationQueryFailure(code: "operation_not_supported", reason: "a \(request.name) is not a \(endpoint.connector.rawValue) operation"))
        }
        return findOperation(operation, reference: context.reference, endpoint: endpoint, requestId: requestId, now: now, using: client)
    }

    /// Nothing to suspend or poll: such a processor holds a manual authorisation by the AUTH request itself, and its
    /// settlement is learnt when a refund needs it.
    public func upkeep(_ endpoint: GatewayEndpoint) -> UpkeepCapabilities {
        UpkeepCapabilities(learnsSettlementBeforeRefund: endpoint.transport == .webservices)
    }

    public var pollsSettlement: Bool { false }

    public func suspend(transactionReference: String, endpoint: GatewayEndpoint, requestId: String, using client: HTTPClient) -> OperationSteps.Answer {
        .refused(code: "operation_not_supported", message: "\(endpoint.connector.rawValue) has no suspension")
    }
}

extension OperationProtocol.Transport.RequestNames {
    /// The stored names of a processor's own capture, void (a reversal), refund and status query; it has no lowered
    /// capture or suspension (the rules never send one to it), which keep their neutral names.
    public static let processorOperations = Self(capture: "CAPTURE", void: "REVERSAL", lowerCapture: neutral.lowerCapture, hold: neutral.hold,
                                                 refund: "REFUND", query: "QUERY")
}

/// A status query that could not be answered.
public struct OperationQueryFailure: Error, Sendable, Equatable {
    public let code: String
    public let reason: String

    public init(code: String, reason: String) {
        self.code = code
        self.reason = reason
    }

    /// A connector call that produced no answer.
    init(_ result: GatewayResult) {
        self.init(code: result.errorCode ?? "paypipe.query_failed", reason: result.errorMessage ?? "query failed")
    }
}

extension OperationSteps.Answer {
    /// What a connector's answer to an operation means (``GatewayResult``, its outcome mapped by the
    /// connector): success confirmed, with the processor's id of the new transaction (a refund's, where the processor gives one); a decline or
    /// validation error refused (`gateway_<code>`), a local refusal before any call refused as not configured (or
    /// not supported); transient not sent; anything else uncertain, reconciled before anything else.
    init(connectorResult result: GatewayResult) {
        let code = result.errorCode ?? "paypipe.transport"
        let message = String((result.errorMessage ?? "no answer").prefix(200))
        switch result.outcome {
        case .authorized:
            self = .confirmed(transactionReference: result.transactionReference)
        case .declined, .permanentError:
            if code.hasPrefix("paypipe."), let reason = result.reason, ["operation_not_supported", "amount_not_representable"].contains(reason) {
                self = .refused(code: reason, message: message)
            } else if code.hasPrefix("paypipe.") {
                self = .refused(code: "gateway_not_configured", message: "\(code): \(message)")
            } else {
                self = .refused(code: "gateway_\(code.prefix(32))", message: message)
            }
        case .transient:
            self = .notSent(code: code, reason: message)
        case .uncertain, .needsReview:
            self = .uncertain(code: code, reason: message)
        }
    }
}
