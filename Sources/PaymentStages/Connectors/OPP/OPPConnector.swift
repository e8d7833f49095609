import Foundation
import HTTP
import JWT
import Pipeline

/// ACI / PAY.ON Open Payment Platform over HTTP (``OPPWire`` holds the formats): `Authorization: Bearer <accessToken>`
/// [doc], the merchant's `entityId` as the endpoint's ``GatewayEndpoint/siteReference``, `merchantTransactionId` (the
/// per-payment reference) as the reconciliation key.
public struct OPPConnector: GatewayConnector {
    public let http: HTTPClientConfiguration
    /// Which URLs may carry card data (https outside sandbox), checked before every call.
    public let transport: CardDataTransportPolicy

    public init(http: HTTPClientConfiguration = HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 30), transport: CardDataTransportPolicy = .strict) {
        self.http = http
        self.transport = transport
    }

    /// Test-mode successes (`000.100.1xx`) count as authorised in sandbox only.
    var sandbox: Bool { transport.deployment == .sandbox }
    public var totalTimeout: Double { http.totalTimeout }
    public func totalTimeout(for endpoint: GatewayEndpoint) -> Double { http.totalTimeout }

    private var exchange: ConnectorExchange {
        ConnectorExchange(transport: transport, connectTimeout: http.connectTimeout, totalTimeout: http.totalTimeout)
    }

    private func post(_ path: String, form: [(key: String, value: String)], endpoint: GatewayEndpoint, gate: HTTPSendGate?) -> HTTPRequest {
        HTTPRequest(method: "POST", url: endpoint.trimmedBase + path, headers: [
            HTTPHeader(name: "Authorization", value: "Bearer \(endpoint.secret)"),
            HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded; charset=UTF-8"),
            HTTPHeader(name: "Accept", value: "application/json"),
        ], body: Array(OPPWire.formEncode(form).utf8), sendGate: gate)
    }

    public func authorize(
        _ request: GatewayRequest, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        let form = OPPWire.paymentForm(request, entityId: endpoint.siteReference, reference: reference)
        let path = request.claims[OPPStoredCredentials.pathKey]?.stringValue ?? "/v1/payments"
        switch exchange.send(post(path, form: form, endpoint: endpoint, gate: window?.gate), client: client) {
        case .failure(let failure): return failure.result
        case .success(let answer):
            if let echoed = answer["merchantTransactionId"]?.stringValue, echoed != reference {
                return .local(.uncertain, code: "paypipe.reference_mismatch", message: "answer names another merchantTransactionId")
            }
            return OPPWire.result(answer, sandbox: sandbox)
        }
    }

    public func find(
        reference: String, endpoint: GatewayEndpoint, expected: TransactionQueryResult.Expected, requestId: String, now: Date,
        using client: HTTPClient
    ) -> TransactionQueryResult {
        let request = HTTPRequest(method: "GET", url: endpoint.trimmedBase + OPPWire.queryPath(entityId: endpoint.siteReference, reference: reference),
                                  headers: [HTTPHeader(name: "Authorization", value: "Bearer \(endpoint.secret)"),
                                            HTTPHeader(name: "Accept", value: "application/json")])
        switch exchange.answer(request, client: client) {
        case .failure(let failure): return ConnectorExchange.inconclusive(failure)
        case .success(let answer): return OPPWire.queryResult(answer.body, status: answer.status, expected: expected, sandbox: sandbox)
        }
    }

    public func perform(
        _ operation: ConnectorOperation, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        perform(operation, reference: nil, endpoint: endpoint, window: window, using: client)
    }

    /// The operation with its own `merchantTransactionId` (``OPPWire/operationReference(paymentReference:operationRowId:)``).
    public func perform(
        _ operation: ConnectorOperation, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        perform(operation, reference: Optional(reference), endpoint: endpoint, window: window, using: client)
    }

    /// A captured pre-authorisation is refunded by its capture's (`CP`) id, a debit (`DB`) by its own
    /// (``OPPWire/refundReference(payment:capture:)``).
    public func refundTarget(payment: String, capture: String?) -> String {
        OPPWire.refundReference(payment: payment, capture: capture)
    }

    /// A lost operation answer: `GET /v3/query?entityId=…&merchantTransactionId=<the operation's own>` [doc].
    public func findOperation(
        _ operation: ConnectorOperation, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<OperationProtocol.Evidence, OperationQueryFailure> {
        let request = HTTPRequest(method: "GET", url: endpoint.trimmedBase + OPPWire.queryPath(entityId: endpoint.siteReference, reference: reference),
                                  headers: [HTTPHeader(name: "Authorization", value: "Bearer \(endpoint.secret)"),
                                            HTTPHeader(name: "Accept", value: "application/json")])
        let currency: String = switch operation {
        case .capture(_, _, let code), .refund(_, _, let code): code
        case .void: ""
        }
        switch exchange.answer(request, client: client) {
        case .failure(let failure): return .failure(OperationQueryFailure(failure.result))
        case .success(let answer):
            return OPPWire.operationEvidence(answer.body, status: answer.status, reference: reference, transactionId: operation.transactionId,
                                             currency: currency, sandbox: sandbox)
        }
    }

    private func perform(_ operation: ConnectorOperation, reference: String?, endpoint: GatewayEndpoint, window: SendWindow?, using client: HTTPClient) -> GatewayResult {
        let call: (path: String, form: [(key: String, value: String)])
        do {
            call = try OPPWire.operationForm(operation, entityId: endpoint.siteReference, reference: reference)
        } catch {
            var refused = GatewayResult.local(.permanentError, code: "paypipe.\(error.code)", message: error.reason)
            refused.reason = error.code
            return refused
        }
        switch exchange.send(post(call.path, form: call.form, endpoint: endpoint, gate: window?.gate), client: client) {
        case .failure(let failure): return failure.result
        case .success(let answer): return OPPWire.result(answer, sandbox: sandbox)
        }
    }
}

/// OPP's operations as the rules see them: `CP` (partial or full), `RV`, `RF` on `/v1/payments/{id}`; an automatic
/// capture is a debit (`DB`).
extension OperationProtocol.Transport {
    public static let opp = OperationProtocol.Transport(name: "OPP", operations: .processorOperations, capturedAuthorization: "debit (DB)",
                                                        requestNames: .processorOperations)
}
