import Foundation
import HTTP
import JWT

/// How long an AUTH may wait on our side before its bytes leave: ``gate`` refuses to send after the deadline
/// (measured on the monotonic clock from before its attempt was committed, so never later than the attempt's
/// `send_deadline` on the database clock), and ``expiresAt`` is the wall-clock deadline the JWT's `exp` derives from.
public struct SendWindow: Sendable {
    public let deadline: ContinuousClock.Instant
    public let expiresAt: Date

    public init(deadline: ContinuousClock.Instant, expiresAt: Date) {
        self.deadline = deadline
        self.expiresAt = expiresAt
    }

    /// A window of `seconds` from `start` (taken before the attempt is committed).
    public init(seconds: Double, from start: ContinuousClock.Instant, wallClock: Date) {
        deadline = start.advanced(by: .milliseconds(Int64((seconds * 1000).rounded(.down))))
        expiresAt = wallClock.addingTimeInterval(seconds)
    }

    public var gate: HTTPSendGate {
        let deadline = deadline
        return HTTPSendGate { _ in
            let now = ContinuousClock.now
            return now <= deadline ? nil : "send window passed \(now - deadline) ago"
        }
    }
}

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
        orderReference: String, endpoint: GatewayEndpoint, expected: GatewayResponseMapper.Expected = .init(amountMinor: nil, currency: nil),
        requestId: String, now: Date = Date()
    ) -> TransactionQueryResult {
        queryTransaction(orderReference: orderReference, endpoint: endpoint, expected: expected, requestId: requestId, now: now,
                         using: HTTPClient(configuration: http))
    }
}
