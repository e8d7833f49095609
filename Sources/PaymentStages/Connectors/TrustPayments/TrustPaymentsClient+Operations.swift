import Foundation
import HTTP
import JWT
import Pipeline

/// The Webservices requests of operations (trustpayments.md §8): a TRANSACTIONUPDATE or REFUND
/// (``GatewayOperation/requestObject(siteReference:)``) and the TRANSACTIONQUERY of the AUTH that reconciles a lost
/// TRANSACTIONUPDATE answer. Only on `/json/`: whether `/jwt/` accepts them is unconfirmed.
extension TrustPaymentsClient {
    /// Sends one operation request; the send gate of `window` keeps its bytes from leaving after the attempt's deadline.
    public func operate(
        _ operation: GatewayOperation, endpoint: GatewayEndpoint, requestId: String, window: SendWindow?, using client: HTTPClient
    ) -> OperationSteps.Answer {
        let requestType = OperationProtocol.Transport.RequestNames.trustPayments.name(of: operation)
        let request = operation.requestObject(siteReference: endpoint.siteReference)
        switch webservicesExchange(request: request, endpoint: endpoint, requestId: requestId, gate: window?.gate, client: client) {
        case .failure(let failure):
            return Self.answer(failure.result)
        case .success(let document):
            let items = document["response"]?.arrayValue ?? []
            guard let item = items.last(where: { $0["requesttypedescription"]?.stringValue == requestType }) ?? items.last,
                  let code = item["errorcode"]?.stringValue else {
                return .uncertain(code: "paypipe.invalid_response", reason: "the answer has no \(requestType) item with an errorcode")
            }
            guard code == "0" else {
                return .refused(code: "gateway_\(code.prefix(16))", message: String((item["errormessage"]?.stringValue ?? "refused").prefix(200)))
            }
            // A REFUND is a transaction of its own, whose reference is kept; an update's is the AUTH's.
            let isRefund = if case .refund = operation { true } else { false }
            return .confirmed(transactionReference: isRefund ? item["transactionreference"]?.stringValue : nil)
        }
    }

    /// A lost answer's evidence: the AUTH's settle status and `settlebaseamount` (a TRANSACTIONQUERY by its
    /// `transactionreference`) as the payment's settlement; no AUTH record, no payment shown.
    public func findOperation(
        _ operation: ConnectorOperation, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<OperationProtocol.Evidence, OperationQueryFailure> {
        queryAuth(transactionReference: operation.transactionId, endpoint: endpoint, requestId: requestId, using: client).map(OperationProtocol.Evidence.settlement)
    }

    /// A local failure as an operation's answer: certainly not sent, unknown, or refused before any call.
    static func answer(_ result: GatewayResult) -> OperationSteps.Answer {
        let code = result.errorCode ?? "paypipe.transport"
        let message = result.errorMessage ?? "no answer"
        switch result.outcome {
        case .transient: return .notSent(code: code, reason: message)
        case .permanentError: return .refused(code: "gateway_not_configured", message: "\(code): \(message)")
        case .uncertain, .authorized, .declined, .needsReview: return .uncertain(code: code, reason: message)
        }
    }

    /// What a status query of the AUTH says: its settle status and `settlebaseamount`, nil when no AUTH record with
    /// this reference came back; a failed query is `.failure` (inconclusive: query again later).
    public func queryAuth(
        transactionReference: String, endpoint: GatewayEndpoint, requestId: String, using client: HTTPClient
    ) -> Result<OperationProtocol.QueriedAuth?, OperationQueryFailure> {
        queryAuths(transactionReferences: [transactionReference], endpoint: endpoint, requestId: requestId, using: client)
            .map { $0[transactionReference] }
    }

    /// One TRANSACTIONQUERY for several AUTHs of the endpoint's site (at most 500 records come back, §8 [doc]): each
    /// AUTH record found, by transaction reference.
    public func queryAuths(
        transactionReferences: [String], endpoint: GatewayEndpoint, requestId: String, using client: HTTPClient
    ) -> Result<[String: OperationProtocol.QueriedAuth], OperationQueryFailure> {
        let request: JSONValue = [
            "requesttypedescriptions": ["TRANSACTIONQUERY"],
            "filter": [
                "sitereference": [["value": .string(endpoint.siteReference)]],
                "transactionreference": .array(transactionReferences.prefix(500).map { ["value": .string($0)] }),
            ],
        ]
        switch webservicesExchange(request: request, endpoint: endpoint, requestId: requestId, gate: nil, client: client) {
        case .failure(let failure):
            return .failure(OperationQueryFailure(code: failure.result.errorCode ?? "paypipe.query_failed", reason: failure.result.errorMessage ?? "query failed"))
        case .success(let document):
            return Self.settlements(document, of: Set(transactionReferences))
        }
    }

    /// The AUTH records of `wanted` a TRANSACTIONQUERY answer (the Webservices document) shows, by transaction
    /// reference: each one's settle status and `settlebaseamount`; a record without a settle status, of another
    /// request type or of another reference is not one. An answer not Ok is a failure.
    static func settlements(_ document: JSONValue, of wanted: Set<String>) -> Result<[String: OperationProtocol.QueriedAuth], OperationQueryFailure> {
        guard let item = document["response"]?.arrayValue?.first, item["errorcode"]?.stringValue == "0" else {
            return .failure(OperationQueryFailure(code: "paypipe.query_failed", reason: "the status query was not answered Ok"))
        }
        var found: [String: OperationProtocol.QueriedAuth] = [:]
        for record in item["records"]?.arrayValue ?? [] where record["requesttypedescription"]?.stringValue == "AUTH" {
            guard let reference = record["transactionreference"]?.stringValue, wanted.contains(reference),
                  let settle = record["settlestatus"]?.stringValue else { continue }
            found[reference] = OperationProtocol.QueriedAuth(settleStatus: SettlementState(trustPayments: settle),
                                                             settleBaseAmount: record["settlebaseamount"]?.stringValue.flatMap { Int64($0) })
        }
        return .success(found)
    }

}

/// Trust Payments' operations behind the one operation interface: the decided TRANSACTIONUPDATE or REFUND as it is,
/// the lost answer's TRANSACTIONQUERY of the AUTH, the suspension of a manual AUTH by TRANSACTIONUPDATE
/// `{"settlestatus":"2"}`, and settlement learnt by one batched TRANSACTIONQUERY. Operations, suspension and the
/// settlement poll need the `webservices` transport.
extension TrustPaymentsClient: OperationConnector {
    /// Operations need the `webservices` transport: whether `/jwt/` accepts TRANSACTIONUPDATE and REFUND is unconfirmed.
    public func operationTransport(_ gateway: MerchantConfig.Gateway) -> OperationProtocol.Transport {
        gateway.resolvedTransport == .jwt ? .jwt : .webservices
    }

    /// A TRANSACTIONUPDATE or REFUND names the AUTH by its transaction reference and carries its own amounts.
    public var operationNeeds: OperationNeeds { [] }

    /// Unused: an operation is found by its AUTH's transaction reference.
    public func operationReference(paymentReference: String, operationRowId: Int64) -> String { "op\(operationRowId)" }

    public func operate(
        _ request: GatewayOperation, _ context: OperationContext, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> OperationSteps.Answer {
        operate(request, endpoint: endpoint, requestId: requestId, window: window, using: client)
    }

    public func findOperation(
        _ request: GatewayOperation, _ context: OperationContext, endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<OperationProtocol.Evidence, OperationQueryFailure> {
        queryAuth(transactionReference: request.targetReference, endpoint: endpoint, requestId: requestId, using: client).map(OperationProtocol.Evidence.settlement)
    }

    public func upkeep(_ endpoint: GatewayEndpoint) -> UpkeepCapabilities {
        let webservices = endpoint.transport == .webservices
        return UpkeepCapabilities(suspendsManualAuthorizations: webservices, pollsSettlement: webservices, learnsSettlementBeforeRefund: webservices)
    }

    public var pollsSettlement: Bool { true }

    /// TRANSACTIONUPDATE `{"settlestatus":"2"}`: an absolute value, so sending it again changes nothing more.
    public func suspend(transactionReference: String, endpoint: GatewayEndpoint, requestId: String, using client: HTTPClient) -> OperationSteps.Answer {
        operate(.hold(transactionReference: transactionReference), endpoint: endpoint, requestId: requestId, window: nil, using: client)
    }

    public func querySettlement(
        _ payments: [SettlementQuery], endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<[String: OperationProtocol.QueriedAuth], OperationQueryFailure> {
        queryAuths(transactionReferences: payments.map(\.transactionReference), endpoint: endpoint, requestId: requestId, using: client)
    }
}
