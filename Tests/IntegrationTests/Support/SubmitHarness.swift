import Foundation
import HTTP
import JWT
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres

/// The submit stage against an in-process ``GatewaySimulator`` on an ephemeral port, on its own database (through
/// ``AuthorizeHarness``): payments are prepared by the real authorize stage, so the claims sent are the real ones.
struct SubmitHarness {
    static let merchantId = "submit-m"
    let authorize: AuthorizeHarness
    let simulator: GatewaySimulator

    init(slowResponseSeconds: Double = 2.5) throws {
        authorize = try AuthorizeHarness()
        simulator = GatewaySimulator(configuration: GatewaySimulatorConfiguration(
            host: "127.0.0.1", port: 0, merchants: ["jwt.paypipe.test": AuthorizeHarness.jwtSecret],
            webservicesUsers: ["ws.paypipe.test": "ws-password"], slowResponseSeconds: slowResponseSeconds, threads: 4))
        try simulator.start()
        try useGateway(at: simulator.baseURL)
    }

    func tearDown() {
        simulator.stop()
        authorize.tearDown()
    }

    /// Points the merchant at `baseUrl` (e.g. a port where nothing listens).
    func useGateway(at baseUrl: String) throws {
        var gateway = AuthorizeHarness.gateway(mode: "merchant-decrypts")
        gateway["baseUrl"] = baseUrl
        try authorize.applyMerchant(Self.merchantId, gateway: gateway, identity: true)
    }

    /// A payment taken through the real authorize stage to `prepared`, with card data stored.
    func preparedPayment(
        amount: Int64, receivedSecondsAgo: Double = 0, orderReference given: String? = nil
    ) throws -> (message: StageMessage, orderReference: String) {
        let orderReference = given ?? "ORD-\(UUID().uuidString.prefix(8))"
        let message = try authorize.insertPayment(
            merchantId: Self.merchantId, amount: amount, currency: "GBP", orderReference: orderReference,
            data: Integration.AuthorizeStageTests.stored(Integration.AuthorizeStageTests.card(amount: amount)))
        let database = try authorize.database()
        defer { database.close() }
        if receivedSecondsAgo > 0 {
            try database.query("UPDATE payments SET first_received_at = now() - make_interval(secs => $2) WHERE id = $1",
                               [message.paymentId, receivedSecondsAgo])
        }
        _ = try database.transaction { try authorize.makeStage().handle([message], transaction: $0) }
        let stored = try authorize.storedRequest(message.paymentId)
        return (message, stored?.orderReference ?? orderReference)
    }

    func makeStage(
        timeout: Double = 1, grace: Double = 0.2, maxQueries: Int = 2, deadline: Double = 600,
        circuitFailures: Int = 100, circuitOpen: Double = 0.5, merchantConcurrency: Int = 4, callConcurrency: Int = 8,
        sendWindow: Double = 0.3, notFoundConfirmations: Int = 1, clock: @escaping @Sendable () -> Date = { Date() }
    ) -> SubmitStage {
        let vault = authorize.vault
        return SubmitStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: 0),
            requests: GatewayRequestStore(vault: vault),
            client: TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 0.5, totalTimeout: timeout), transport: .init(deployment: .sandbox)),
            settings: SubmitSettings(reconcileGrace: grace, maxInconclusiveQueries: maxQueries, paymentDeadline: deadline,
                                     circuitFailureThreshold: circuitFailures, circuitOpenSeconds: circuitOpen,
                                     merchantConcurrency: merchantConcurrency, callConcurrency: callConcurrency, sendWindow: sendWindow,
                                     notFoundConfirmations: notFoundConfirmations),
            clock: clock)
    }

    /// One message through the stage's own `process`, as the runtime calls it.
    func process(_ stage: SubmitStage, _ message: StageMessage) throws -> Result<StageOutcome, StageFailure> {
        let database = try authorize.database()
        defer { database.close() }
        return stage.process([message], database: database)[0]
    }

    func payment(_ id: UUID) throws -> PaymentRecord {
        guard let payment = try authorize.payment(id) else { throw TestFailure("payment \(id) vanished") }
        return payment
    }

    func attempts(_ id: UUID) throws -> [GatewayAttempt] {
        let database = try authorize.database()
        defer { database.close() }
        return try GatewayAttemptStore().attempts(paymentId: id, on: database)
    }

    /// The recorded outcome columns of the payment's latest AUTH attempt.
    func authColumns(_ id: UUID) throws -> [String: String] {
        let database = try authorize.database()
        defer { database.close() }
        let rows = try database.query(
            """
            SELECT state, coalesce(outcome,'') AS outcome, coalesce(error_code,'') AS error_code,
                   coalesce(transaction_reference,'') AS transaction_reference, coalesce(auth_code,'') AS auth_code,
                   coalesce(masked_pan,'') AS masked_pan, coalesce(settle_status,'') AS settle_status,
                   coalesce(acquirer_response_code,'') AS acquirer_response_code
            FROM gateway_attempts WHERE payment_id = $1 AND request_type <> 'TRANSACTIONQUERY' ORDER BY id DESC LIMIT 1
            """, [id])
        guard let row = rows.first else { return [:] }
        var columns: [String: String] = [:]
        for name in ["state", "outcome", "error_code", "transaction_reference", "auth_code", "masked_pan", "settle_status", "acquirer_response_code"] {
            columns[name] = try row.decode(name, as: String.self)
        }
        return columns
    }

    /// Whether both the card data and the stored gateway request are crypto-shredded.
    func isPurged(_ id: UUID) throws -> Bool {
        let database = try authorize.database()
        defer { database.close() }
        let rows = try database.query(
            """
            SELECT (SELECT count(*) FROM card_data WHERE payment_id = $1 AND ciphertext IS NOT NULL)
                 + (SELECT count(*) FROM gateway_requests WHERE payment_id = $1 AND ciphertext IS NOT NULL) AS live
            """, [id])
        return try rows[0].decode("live", as: Int64.self) == 0
    }

    /// Moves the payment's attempts `seconds` into the past (as if their reconciliation time had come), instead of
    /// sleeping through it.
    func ageAttempts(_ id: UUID, by seconds: Double) throws {
        let database = try authorize.database()
        defer { database.close() }
        try database.query(
            """
            UPDATE gateway_attempts SET started_at = started_at - make_interval(secs => $2),
                   send_deadline = send_deadline - make_interval(secs => $2), reconcile_after = reconcile_after - make_interval(secs => $2)
            WHERE payment_id = $1
            """, [id, seconds])
    }

    /// AUTH records the simulator's ledger holds for order references starting with `prefix` (a per-payment
    /// reference starts with the merchant's), read in-process.
    func ledgerAuths(prefix: String) -> [JSONValue] {
        simulator.ledger.authCounts().keys.filter { $0.hasPrefix(prefix) }.flatMap { simulator.ledger.records(orderReference: $0) }
    }

    /// AUTHs the simulator accepted for the payment whose merchant reference is `orderReference` (the reference sent
    /// is that plus a suffix of the payment id).
    func authCount(_ orderReference: String) throws -> Int {
        ledgerAuths(prefix: orderReference).count
    }
}
