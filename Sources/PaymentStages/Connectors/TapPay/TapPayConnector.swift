import Foundation
import HTTP
import JWT
import Pipeline

/// TapPay Pay by Prime over HTTP (``TapPayWire`` holds the formats): `x-api-key: <partner_key>` [doc][sdk], the
/// merchant's `merchant_id` as the endpoint's ``GatewayEndpoint/siteReference``, `bank_transaction_id` (the
/// per-payment reference) as the reconciliation key through the Record API.
public struct TapPayConnector: GatewayConnector {
    public let http: HTTPClientConfiguration
    public let transport: CardDataTransportPolicy

    /// TapPay recommends a 30 s client timeout [doc].
    public init(http: HTTPClientConfiguration = HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 30), transport: CardDataTransportPolicy = .strict) {
        self.http = http
        self.transport = transport
    }

    public var totalTimeout: Double { http.totalTimeout }
    public func totalTimeout(for endpoint: GatewayEndpoint) -> Double { http.totalTimeout }

    private var exchange: ConnectorExchange {
        ConnectorExchange(transport: transport, connectTimeout: http.connectTimeout, totalTimeout: http.totalTimeout)
    }

    private func post(_ path: String, body: JSONValue, endpoint: GatewayEndpoint, gate: HTTPSendGate?) -> HTTPRequest {
        HTTPRequest(method: "POST", url: endpoint.trimmedBase + path, headers: [
            HTTPHeader(name: "Content-Type", value: "application/json"),
            HTTPHeader(name: "x-api-key", value: endpoint.secret),
        ], body: body.serialized(), sendGate: gate)
    }

    /// Refused without sending when the prime is too old for the call to end before it expires (``TapPayPrimeAge``).
    public func authorize(
        _ request: GatewayRequest, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        let kind = TapPayWire.primeKind(request)
        guard let published = TapPayWire.primePublishedAt(request),
              TapPayPrimeAge.maySend(publishedAt: published, now: now, callTimeout: http.totalTimeout, kind: kind) else {
            var expired = GatewayResult.local(.permanentError, code: "paypipe.prime_expired",
                                              message: "the \(kind.rawValue) prime is older than \(Int(kind.lifetime - http.totalTimeout)) s (its lifetime minus the call timeout), or its age is unknown: not sent")
            expired.reason = "prime_expired"
            return expired
        }
        let body = TapPayWire.payByPrimeBody(request, merchantId: endpoint.siteReference, partnerKey: endpoint.secret, reference: reference)
        switch exchange.send(post(TapPayWire.payByPrimePath, body: body, endpoint: endpoint, gate: window?.gate), client: client) {
        case .failure(let failure): return failure.result
        case .success(let answer):
            if let echoed = answer["bank_transaction_id"]?.stringValue, !echoed.isEmpty, echoed != reference {
                return .local(.uncertain, code: "paypipe.reference_mismatch", message: "answer names another bank_transaction_id")
            }
            return TapPayWire.result(answer)
        }
    }

    public func find(
        reference: String, endpoint: GatewayEndpoint, expected: TransactionQueryResult.Expected, requestId: String, now: Date,
        using client: HTTPClient
    ) -> TransactionQueryResult {
        let body = TapPayWire.recordQuery(partnerKey: endpoint.secret, reference: reference, around: now)
        switch exchange.send(post(TapPayWire.recordPath, body: body, endpoint: endpoint, gate: nil), client: client) {
        case .failure(let failure): return ConnectorExchange.inconclusive(failure)
        case .success(let answer): return TapPayWire.queryResult(answer, expected: expected)
        }
    }

    public func perform(
        _ operation: ConnectorOperation, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        let built: (path: String, body: JSONValue)?
        do {
            built = try TapPayWire.operationBody(operation, partnerKey: endpoint.secret)
        } catch {
            var refused = GatewayResult.local(.permanentError, code: "paypipe.\(error.code)", message: error.reason)
            refused.reason = error.code
            return refused
        }
        guard let call = built else { return .unsupported(operation, connector: .tapPay) }
        switch exchange.send(post(call.path, body: call.body, endpoint: endpoint, gate: window?.gate), client: client) {
        case .failure(let failure): return failure.result
        case .success(let answer): return TapPayWire.result(answer)
        }
    }

    /// A lost capture or refund answer: the Record API by `rec_trade_id` [doc], read for `is_captured` and the
    /// cumulative `refund_amount` [doc].
    public func findOperation(
        _ operation: ConnectorOperation, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> Result<OperationProtocol.Evidence, OperationQueryFailure> {
        let currency: String = switch operation {
        case .capture(_, _, let code), .refund(_, _, let code): code
        case .void: ""
        }
        let body = TapPayWire.tradeQuery(partnerKey: endpoint.secret, recTradeId: operation.transactionId, around: now)
        switch exchange.send(post(TapPayWire.recordPath, body: body, endpoint: endpoint, gate: nil), client: client) {
        case .failure(let failure): return .failure(OperationQueryFailure(failure.result))
        case .success(let answer): return TapPayWire.tradeEvidence(answer, recTradeId: operation.transactionId, currency: currency)
        }
    }
}

/// TapPay's operations as the rules see them: `/tpc/transaction/cap` (the full authorisation only) and
/// `/tpc/transaction/refund`; no void API.
extension OperationProtocol.Transport {
    public static let tapPay = OperationProtocol.Transport(name: "TapPay", operations: .processorOperations, capturesPartially: false, voids: false,
                                                           requestNames: .processorOperations)
}
