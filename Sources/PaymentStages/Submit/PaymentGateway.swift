import Foundation
import HTTP
import JWT
import Pipeline

/// What the submit stage needs from a gateway: send a stored request once, and ask what became of an order.
///
/// Implementations never throw: every way a call can end — answer, refusal, timeout, forged answer — is a
/// ``GatewayResult`` or ``TransactionQueryResult`` the stage must record. ``TrustPaymentsClient`` is the first
/// implementation; another gateway (TapPay, OPP) would map its own codes onto the same outcomes.
public protocol PaymentGateway: Sendable {
    /// Seconds after which a call has certainly ended on our side; an attempt older than this plus the grace
    /// period is no longer in flight, so it may be queried.
    var totalTimeout: Double { get }

    /// The total timeout of a call over `transport` (the `webservices` transport has its own, the SDK's 60 s by
    /// default): what an attempt's reconciliation time adds to its send deadline.
    func totalTimeout(for transport: GatewayEndpoint.Transport) -> Double

    /// How the HTTP clients that calls run on are configured (the submit stage keeps a pool of keep-alive clients).
    var http: HTTPClientConfiguration { get }

    /// One AUTH over `client`, which belongs to the calling thread (its connection is kept alive between calls).
    /// With a `window`, the request is never sent after its deadline.
    func authorize(
        claims: JSONValue, requestTypes: [String], endpoint: GatewayEndpoint, requestId: String, now: Date, window: SendWindow?,
        using client: HTTPClient
    ) -> GatewayResult

    /// One TRANSACTIONQUERY over `client`, which belongs to the calling thread; a record is adopted only if it
    /// matches `expected`.
    func queryTransaction(
        orderReference: String, endpoint: GatewayEndpoint, expected: GatewayResponseMapper.Expected, requestId: String, now: Date,
        using client: HTTPClient
    ) -> TransactionQueryResult
}

extension PaymentGateway {
    public func totalTimeout(for transport: GatewayEndpoint.Transport) -> Double { totalTimeout }

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
        orderReference: String, endpoint: GatewayEndpoint, expected: GatewayResponseMapper.Expected = .init(amountMinor: nil, currency: nil),
        requestId: String, now: Date = Date()
    ) -> TransactionQueryResult {
        queryTransaction(orderReference: orderReference, endpoint: endpoint, expected: expected, requestId: requestId, now: now,
                         using: HTTPClient(configuration: http))
    }
}
