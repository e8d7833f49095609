import Foundation
import HTTP
import JWT
import Pipeline

/// Trust Payments' own entry points (the connector protocol's are in ``TrustPaymentsClient``'s ``GatewayConnector``
/// conformance): one-off calls outside a pool, and calls without a send window.
extension TrustPaymentsClient {
    /// One AUTH on a client of its own (a new connection): for one-off calls outside a pool.
    public func authorize(claims: JSONValue, requestTypes: [String], endpoint: GatewayEndpoint, requestId: String, now: Date = Date()) -> GatewayResult {
        authorize(claims: claims, requestTypes: requestTypes, endpoint: endpoint, requestId: requestId, now: now, window: nil,
                  using: HTTPClient(configuration: http))
    }

    /// One AUTH over `client` without a send window.
    public func authorize(
        claims: JSONValue, requestTypes: [String], endpoint: GatewayEndpoint, requestId: String, now: Date = Date(), using client: HTTPClient
    ) -> GatewayResult {
        authorize(claims: claims, requestTypes: requestTypes, endpoint: endpoint, requestId: requestId, now: now, window: nil, using: client)
    }

    /// One TRANSACTIONQUERY on a client of its own (a new connection), adopting any single matching record.
    public func queryTransaction(
        orderReference: String, endpoint: GatewayEndpoint, expected: TransactionQueryResult.Expected = .init(amountMinor: nil, currency: nil),
        requestId: String, now: Date = Date()
    ) -> TransactionQueryResult {
        queryTransaction(orderReference: orderReference, endpoint: endpoint, expected: expected, requestId: requestId, now: now,
                         using: HTTPClient(configuration: http))
    }
}
