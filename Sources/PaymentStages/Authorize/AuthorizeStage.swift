import AMQP
import Foundation
import Pipeline
import Postgres

/// Stage 2: decrypted payment → stored, ready-to-sign Trust Payments request.
///
/// Per message, inside the batch transaction: lock the payment; if it is already past `decrypted` (a redelivery, a
/// duplicate hand-off) hand off to wherever it is now; otherwise read the merchant's gateway settings and the
/// stored card data, validate and build the claims (``TrustPaymentsClaimsBuilder``), store them encrypted in
/// `gateway_requests`, advance `decrypted → prepared` and hand off to submit. A validation error ends the payment
/// `failed` with its ``AuthorizeError`` code (the runtime records it and hands off to notification).
///
/// No network I/O happens here, so the whole effect is one savepoint of the batch transaction; signing happens in
/// the submit stage at send time with a fresh `iat` (``TrustPaymentsClaimsBuilder/signedJWT(claims:secret:issuedAt:algorithm:)``).
public struct AuthorizeStage: TransactionalStageHandler {
    public let stage = Stage.authorize
    private let directory: MerchantDirectory
    private let cardData: CardDataStore
    let requests: GatewayRequestStore
    private let clock: @Sendable () -> Date
    private let payments = PaymentStore()

    /// - Parameter clock: the initial `iat` of built claims (informational: submit re-signs with its own clock).
    public init(
        directory: MerchantDirectory, cardData: CardDataStore, requests: GatewayRequestStore,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.directory = directory
        self.cardData = cardData
        self.requests = requests
        self.clock = clock
    }

    public func decode(_ delivery: AMQPDelivery) throws(StageFailure) -> StageMessage {
        try StageMessage.decode(delivery.body)
    }

    public func handle(_ message: StageMessage, transaction: PostgresConnection) throws -> StageOutcome {
        // FOR UPDATE: two deliveries of the same payment in concurrent lanes serialise here, and the second sees
        // the first one's result instead of building a second request.
        guard let payment = try payments.load(message.paymentId, forUpdate: true, on: transaction) else {
            throw StageFailure.unattributable(code: "unknown_payment", reason: "payment \(message.paymentId) does not exist")
        }
        switch payment.status {
        case .decrypted:
            break
        case .received:
            // Decrypt commits the status and its hand-off together, so this is a hand-off that overtook its
            // commit (or a hand-made message): try again later rather than act on a payment that is not ready.
            throw StageFailure.transient(code: "payment_not_decrypted", reason: "payment \(payment.id) is still received")
        default:
            return .handOff(to: payment.status.stage, payment.message)
        }
        let request: GatewayRequest
        do {
            let merchant = try directory.entry(payment.merchantId, on: transaction)?.merchant
            request = try build(payment, merchant: merchant, data: try cardData.load(payment.id, on: transaction))
        } catch let error as AuthorizeError {
            return .failed(PaymentFailure(paymentId: payment.id, code: error.code, reason: error.reason))
        }
        try requests.save(request, for: payment.id, on: transaction)
        try payments.transition(payment.id, from: .decrypted, to: .prepared, actor: "authorize", on: transaction)
        return .handOff(to: .submit, payment.message)
    }

    /// The set-based fast path (``AuthorizeBatch``): locks the batch's payments with their card data in one
    /// statement, builds the claims in Swift, and stores the requests, advances the payments and writes their events
    /// in a second. Left to ``handle(_:transaction:)`` (`nil`): a payment id repeated in the batch (the later
    /// deliveries then find it `prepared`), unknown payments, payments not `decrypted` (already advanced, or still
    /// `received`), and every payment whose claims cannot be built (the one-by-one path records the failure).
    public func handleInBulk(_ messages: [StageMessage], transaction: PostgresConnection) throws -> [StageOutcome?] {
        var firstIndex: [UUID: Int] = [:]
        for (index, message) in messages.enumerated() where firstIndex[message.paymentId] == nil {
            firstIndex[message.paymentId] = index
        }
        let locked = try AuthorizeBatch.lock(Array(firstIndex.keys), on: transaction)
        var batch = AuthorizeBatch()
        var merchants = BatchMerchants(directory)
        for (index, message) in messages.enumerated() where firstIndex[message.paymentId] == index {
            guard let row = locked[message.paymentId], let payment = try? PaymentRecord(row: row), payment.status == .decrypted else {
                continue
            }
            let merchant = try merchants.entry(payment.merchantId, on: transaction)?.merchant
            // Any error here (no card data, a validation error, a vault error) is the one-by-one path's to report.
            guard let data = try? cardData.open(row, for: payment.id),
                  let request = try? build(payment, merchant: merchant, data: data) else { continue }
            batch.append(AuthorizeBatch.Row(index: index, payment: payment, request: request, sealed: try requests.seal(request, for: payment.id)))
        }
        let prepared = try batch.apply(on: transaction)
        var outcomes = [StageOutcome?](repeating: nil, count: messages.count)
        for row in batch.rows where prepared.contains(row.payment.id) {
            outcomes[row.index] = .handOff(to: .submit, row.payment.message)
        }
        return outcomes
    }

    /// The claims of `payment`, shared by both paths so they build exactly the same request.
    private func build(_ payment: PaymentRecord, merchant: MerchantStore.Merchant?, data: StoredPaymentData?) throws(AuthorizeError) -> GatewayRequest {
        try TrustPaymentsClaimsBuilder.build(
            gateway: merchant?.config.gateway, jwtSecret: merchant?.secrets.jwtSecret,
            webservicesPassword: merchant?.secrets.webservicesPassword, payment: GatewayPaymentDetails(payment), data: data, issuedAt: clock())
    }
}
