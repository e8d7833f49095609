import Foundation
import HTTP
import JWT

/// What the submit stage needs from a gateway: send a stored request once, and ask what became of an order.
///
/// Implementations never throw: every way a call can end — answer, refusal, timeout, forged answer — is a
/// ``GatewayResult`` or ``TransactionQueryResult`` the stage must record. ``TrustPaymentsClient`` is the first
/// implementation; another gateway (TapPay, OPP) would map its own codes onto the same outcomes.
public protocol PaymentGateway: Sendable {
    /// Seconds after which a call has certainly ended on our side; an attempt older than this plus the grace
    /// period is no longer in flight, so it may be queried.
    var totalTimeout: Double { get }

    /// How the HTTP clients that calls run on are configured (the submit stage keeps a pool of keep-alive clients).
    var http: HTTPClientConfiguration { get }

    /// One AUTH over `client`, which belongs to the calling thread (its connection is kept alive between calls).
    func authorize(
        claims: JSONValue, requestTypes: [String], endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> GatewayResult

    /// One TRANSACTIONQUERY over `client`, which belongs to the calling thread.
    func queryTransaction(
        orderReference: String, endpoint: GatewayEndpoint, requestId: String, now: Date, using client: HTTPClient
    ) -> TransactionQueryResult
}

extension PaymentGateway {
    /// One AUTH on a client of its own (a new connection): for one-off calls outside a pool.
    public func authorize(claims: JSONValue, requestTypes: [String], endpoint: GatewayEndpoint, requestId: String, now: Date = Date()) -> GatewayResult {
        authorize(claims: claims, requestTypes: requestTypes, endpoint: endpoint, requestId: requestId, now: now,
                  using: HTTPClient(configuration: http))
    }

    /// One TRANSACTIONQUERY on a client of its own (a new connection).
    public func queryTransaction(orderReference: String, endpoint: GatewayEndpoint, requestId: String, now: Date = Date()) -> TransactionQueryResult {
        queryTransaction(orderReference: orderReference, endpoint: endpoint, requestId: requestId, now: now,
                         using: HTTPClient(configuration: http))
    }
}
