import Foundation
import HTTP
import JWT
import Pipeline
import TrustPaymentsWire

/// Trust Payments behind the connector protocol, unchanged in behaviour: the stored claims with the per-payment
/// `orderreference`, AUTH over the merchant's transport, TRANSACTIONQUERY by that reference, and the back-office
/// operations as the operations lifecycle sends them (``GatewayOperation`` as TRANSACTIONUPDATE and REFUND).
extension TrustPaymentsClient: GatewayConnector {
    public func totalTimeout(for endpoint: GatewayEndpoint) -> Double { totalTimeout(for: endpoint.transport) }

    public func authorize(
        _ request: GatewayRequest, reference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        authorize(claims: Self.claims(request.claims, orderReference: reference), requestTypes: request.requestTypes, endpoint: endpoint,
                  requestId: requestId, now: now, window: window, using: client)
    }

    public func find(
        reference: String, endpoint: GatewayEndpoint, expected: TransactionQueryResult.Expected, requestId: String, now: Date,
        using client: HTTPClient
    ) -> TransactionQueryResult {
        queryTransaction(orderReference: reference, endpoint: endpoint, expected: expected, requestId: requestId, now: now, using: client)
    }

    /// Capture: TRANSACTIONUPDATE to `settlestatus` 0 with the captured `settlebaseamount`; void: `settlestatus` 3;
    /// refund: REFUND of the settled AUTH (trustpayments.md §8, docs/operations-lifecycle.md).
    public static func gatewayOperation(_ operation: ConnectorOperation) -> GatewayOperation {
        switch operation {
        case .capture(let id, let amount, _): .capture(transactionReference: id, amount: amount)
        case .void(let id): .void(transactionReference: id)
        case .refund(let id, let amount, _): .refund(parentTransactionReference: id, amount: amount)
        }
    }

    public func perform(
        _ operation: ConnectorOperation, endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult {
        let object = Self.gatewayOperation(operation).requestObject(siteReference: endpoint.siteReference)
        switch endpoint.transport {
        case .webservices:
            switch webservicesExchange(request: object, endpoint: endpoint, requestId: requestId, gate: window?.gate, client: client) {
            case .success(let answer): return TrustPaymentsResponseMapper.result(fromClaims: ["payload": answer])
            case .failure(let failure): return failure.result
            }
        case .jwt:
            let claims: JSONValue = ["iss": .string(endpoint.jwtUsername), "iat": 0, "payload": object]
            let jwt = TrustPaymentsClaimsBuilder.signedJWT(claims: claims, secret: endpoint.secret, issuedAt: now)
            let types = object["requesttypedescriptions"]?.arrayValue?.compactMap(\.stringValue) ?? []
            switch exchange(jwt: jwt, requestTypes: types, endpoint: endpoint, requestId: requestId, gate: window?.gate, client: client) {
            case .success(let claims): return TrustPaymentsResponseMapper.result(fromClaims: claims)
            case .failure(let failure): return failure.result
            }
        }
    }

    /// The stored request claims with the per-payment `orderreference` (the stored claims carry the merchant's).
    static func claims(_ claims: JSONValue, orderReference: String) -> JSONValue {
        guard var payload = claims["payload"], payload.objectValue != nil else { return claims }
        payload.set(.string(orderReference), forKey: "orderreference")
        var signed = claims
        signed.set(payload, forKey: "payload")
        return signed
    }
}
