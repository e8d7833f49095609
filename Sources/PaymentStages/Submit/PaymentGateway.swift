import Foundation
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

    func authorize(claims: JSONValue, requestTypes: [String], endpoint: GatewayEndpoint, requestId: String, now: Date) -> GatewayResult

    func queryTransaction(orderReference: String, endpoint: GatewayEndpoint, requestId: String, now: Date) -> TransactionQueryResult
}
