import AMQP
import Foundation
import HTTP
import JWT
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

/// The submit stage against the gateway simulator on the real PostgreSQL (and RabbitMQ for the outage test):
/// terminal outcomes with their recorded facts, reconciliation through TRANSACTIONQUERY with exactly one AUTH,
/// outages, forged answers, the payment deadline and card-data purging.
extension Integration {
@Suite struct SubmitStageTests {
    /// Moves the payment's attempts this far into the past, past their reconciliation time (send window 0.3 s + client
    /// timeout 1 s + grace 0.2 s after they started): the stage reads the database's time once per batch, so no test
    /// waits for that clock; the decisions at either side of the time are `SubmitDecisionTests`' (injected clock).
    static let pastReconciliation = 60.0

    static func expectHandOffToNotify(_ result: Result<StageOutcome, StageFailure>, _ message: StageMessage) {
        #expect(result == .success(.handOff(to: .notify, message)))
    }

    static func transientCode(_ result: Result<StageOutcome, StageFailure>) -> String? {
        // A wait whose end is known is retried too, at that time.
        switch result {
        case .failure(.transient(let code, _)), .failure(.waiting(let code, _, _)): return code
        default: return nil
        }
    }

    /// The runtime hands the worker's registry over once (`attach(metrics:)`): the stage's own counter and its gateway
    /// gate's circuits are registered then, and exported before their first event.
    @Test func attachingTheRegistryRegistersTheStagesSeries() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let registry = MetricsRegistry()
        harness.makeStage().attach(metrics: registry)
        let exported = registry.render()
        #expect(exported.contains("# HELP paypipe_late_answers_total Gateway answers that arrived after their payment had ended"))
        #expect(exported.contains("# TYPE paypipe_late_answers_total counter"))
        #expect(registry.value("paypipe_circuits_open", labels: ["stage": "submit"]) == 0)
        #expect(exported.contains("paypipe_circuits_open{stage=\"submit\"} 0"))
    }

    /// A permanent failure the runtime carries to the record step (`SubmitStage.recordFailure`): a `prepared` payment
    /// ends `failed`, a `submitting` one `needs_review` (an AUTH may be out), each with the failure's code and reason
    /// and a `pipeline` event, handed to notification; a terminal one is left as it is and handed off again; an
    /// unknown one is unattributable.
    @Test func aPermanentFailureIsRecordedOnThePaymentItNames() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage()
        let (prepared, _) = try harness.preparedPayment(amount: 1000)
        let (submitting, _) = try harness.preparedPayment(amount: 1000)
        let database = try harness.authorize.database()
        defer { database.close() }
        _ = try database.transaction { transaction in
            try PaymentStore().transition(submitting.paymentId, from: .prepared, to: .submitting, actor: "submit", on: transaction)
        }
        func recordFailure(_ message: StageMessage, code: String) throws -> StageOutcome? {
            try database.transaction { transaction in
                try stage.recordFailure(PermanentFailure(subject: message.paymentId, code: code, reason: "reason of \(code)"),
                                        for: message, transaction: transaction)
            }
        }
        for (message, from, to) in [(prepared, "prepared", PaymentStatus.failed), (submitting, "submitting", .needsReview)] {
            #expect(try recordFailure(message, code: "test_permanent") == .handOff(to: .notify, message))
            let payment = try harness.payment(message.paymentId)
            #expect(payment.status == to)
            #expect(payment.errorCode == "test_permanent")
            #expect(payment.errorMessage == "reason of test_permanent")
            let events = try database.query(
                "SELECT from_status, to_status, actor, error_code, detail FROM payment_events WHERE payment_id = $1 ORDER BY id DESC LIMIT 1",
                [message.paymentId])
            #expect(try events.first?.decode("from_status", as: String.self) == from)
            #expect(try events.first?.decode("to_status", as: String.self) == to.rawValue)
            #expect(try events.first?.decode("actor", as: String.self) == "pipeline")
            #expect(try events.first?.decode("error_code", as: String?.self) == "test_permanent")
            #expect(try events.first?.decode("detail", as: String?.self) == "reason of test_permanent")
        }
        // Already terminal (a redelivery): nothing changes, the payment is handed off again.
        #expect(try recordFailure(prepared, code: "later") == .handOff(to: .notify, prepared))
        #expect(try harness.payment(prepared.paymentId).errorCode == "test_permanent")
        let unknown = StageMessage(paymentId: UUID(), merchantId: SubmitHarness.merchantId, jobId: "job-unknown")
        #expect(throws: StageFailure.unattributable(code: "unknown_payment", reason: "payment \(unknown.paymentId) does not exist")) {
            try recordFailure(unknown, code: "test_permanent")
        }
    }

    @Test func authorisedDeclinedAndPermanentErrorsAreRecordedAndPurged() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage()
        let cases: [(amount: Int64, status: PaymentStatus, code: String?, auths: Int)] = [
            (1000, .authorized, nil, 1), (1051, .declined, "gateway_70000", 1), (1091, .failed, "gateway_30000", 0),
            (1094, .needsReview, "gateway_60034", 1),
        ]
        for expected in cases {
            let (message, order) = try harness.preparedPayment(amount: expected.amount)
            #expect(try !harness.isPurged(message.paymentId))
            Self.expectHandOffToNotify(try harness.process(stage, message), message)
            let payment = try harness.payment(message.paymentId)
            #expect(payment.status == expected.status, "amount \(expected.amount)")
            #expect(payment.errorCode == expected.code)
            #expect(try harness.isPurged(message.paymentId))
            #expect(try harness.authCount(order) == expected.auths)
            let columns = try harness.authColumns(message.paymentId)
            #expect(columns["state"] == "completed")
            if expected.status == .authorized {
                #expect(columns["auth_code"] == "SIM42")
                #expect(columns["masked_pan"] == "510000######0511")
                #expect(columns["acquirer_response_code"] == "00")
                #expect(columns["settle_status"] == "0")
                #expect(columns["transaction_reference"]?.hasPrefix("9-9-") == true)
            }
            if expected.amount == 1091 { #expect(payment.errorMessage?.contains("sitereference") == true) }
            // A redelivery of a finished payment sends nothing and hands off again.
            Self.expectHandOffToNotify(try harness.process(stage, message), message)
            #expect(try harness.authCount(order) == expected.auths)
        }
    }

    @Test("an answer lost after the gateway recorded the AUTH is reconciled by TRANSACTIONQUERY", arguments: [Int64(1098), 1096, 1099])
    func lostAnswerIsReconciledWithExactlyOneAuth(amount: Int64) throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage()
        let (message, order) = try harness.preparedPayment(amount: amount)
        #expect(Self.transientCode(try harness.process(stage, message)) == "gateway_outcome_uncertain")
        #expect(try harness.payment(message.paymentId).status == .submitting)
        #expect(try harness.attempts(message.paymentId).map(\.state) == [.uncertain])
        #expect(try harness.authCount(order) == 1)
        // Too early: the AUTH may still be in flight, so neither a resend nor a query happens.
        #expect(Self.transientCode(try harness.process(stage, message)) == "awaiting_reconciliation")
        try harness.ageAttempts(message.paymentId, by: Self.pastReconciliation)
        Self.expectHandOffToNotify(try harness.process(stage, message), message)
        #expect(try harness.payment(message.paymentId).status == .authorized)
        #expect(try harness.authCount(order) == 1)
        let attempts = try harness.attempts(message.paymentId)
        #expect(attempts.map(\.requestType) == ["AUTH", GatewayAttemptStore.queryRequestType])
        #expect(attempts.map(\.outcome) == ["authorized", "found"])
        #expect(try harness.authColumns(message.paymentId)["auth_code"] == "SIM42")
        #expect(try harness.isPurged(message.paymentId))
    }

    @Test func aForgedAnswerIsRejectedAndTheVerifiedQueryDecides() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage()
        let (message, order) = try harness.preparedPayment(amount: 1092)
        #expect(Self.transientCode(try harness.process(stage, message)) == "gateway_outcome_uncertain")
        #expect(try harness.payment(message.paymentId).status == .submitting)
        #expect(try harness.authColumns(message.paymentId)["error_code"] == "paypipe.signature_invalid")
        try harness.ageAttempts(message.paymentId, by: Self.pastReconciliation)
        Self.expectHandOffToNotify(try harness.process(stage, message), message)
        #expect(try harness.payment(message.paymentId).status == .authorized)
        #expect(try harness.authCount(order) == 1)

        // The client alone: an answer signed with another key is never believed.
        let forged = TrustPaymentsClient(http: HTTPClientConfiguration(totalTimeout: 2), transport: .init(deployment: .sandbox)).queryTransaction(
            orderReference: order,
            endpoint: GatewayEndpoint(baseUrl: harness.simulator.baseURL, siteReference: "test_site12345", jwtUsername: "jwt.paypipe.test", secret: "not-the-secret"),
            requestId: "Q1")
        guard case .inconclusive(let code, _) = forged else {
            Issue.record("a forged answer was accepted: \(forged)")
            return
        }
        #expect(code == "paypipe.signature_invalid")
    }

    /// A crash between the committed `sending` attempt and the commit of the outcome, rebuilt in the database:
    /// `sent` says whether the AUTH reached the gateway before the crash.
    static func crashedAfterSending(_ harness: SubmitHarness, amount: Int64, sent: Bool) throws -> (StageMessage, String) {
        let (message, order) = try harness.preparedPayment(amount: amount)
        let database = try harness.authorize.database()
        defer { database.close() }
        if sent {
            guard let request = try harness.authorize.storedRequest(message.paymentId) else { throw TestFailure("no stored request") }
            let result = TrustPaymentsClient(http: HTTPClientConfiguration(totalTimeout: 5), transport: .init(deployment: .sandbox)).authorize(
                claims: request.claims, requestTypes: request.requestTypes,
                endpoint: GatewayEndpoint(baseUrl: harness.simulator.baseURL, siteReference: "test_site12345",
                                          jwtUsername: "jwt.paypipe.test", secret: AuthorizeHarness.jwtSecret),
                requestId: "crash")
            #expect(result.outcome == .authorized)
        }
        try database.transaction { transaction in
            _ = try GatewayAttemptStore().begin(paymentId: message.paymentId, orderReference: order, requestType: "AUTH", on: transaction)
            try PaymentStore().transition(message.paymentId, from: .prepared, to: .submitting, actor: "submit", on: transaction)
        }
        return (message, order)
    }

    /// Issue 40, defect 3: a message waiting for an uncertain AUTH's `reconcile_after` is re-driven at that time by the
    /// runtime's retry routing, not parked on a fixed tier: here already retried three times (the fixed schedule's next
    /// tier is 120 s), its copy comes back no later than `reconcile_after` plus the shortest tier.
    @Test func theRuntimeRedrivesAWaitingAuthAtItsReconciliationTime() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage()
        let (message, _) = try Self.crashedAfterSending(harness, amount: 1000, sent: false)
        let database = try harness.authorize.database()
        defer { database.close() }
        try database.query("UPDATE gateway_attempts SET reconcile_after = clock_timestamp() + interval '20 seconds' WHERE payment_id = $1", [message.paymentId])
        guard case .failure(let failure) = try harness.process(stage, message) else { throw TestFailure("the AUTH was not waited for") }
        #expect(failure.code == "awaiting_reconciliation")
        let remaining = try #require(try database.query(
            "SELECT extract(epoch FROM reconcile_after - clock_timestamp())::float8 AS s FROM gateway_attempts WHERE payment_id = $1", [message.paymentId]
        ).first?.decode("s", as: Double.self))
        var properties = AMQPProperties()
        properties.headers[DeliveryRouter.Header.retries] = .int(3)
        let delivery = AMQPDelivery(body: message.encoded(), properties: properties, exchange: BrokerLayout.stagesExchange, routingKey: "submit",
                                    redelivered: false, deliveryTag: 1, generation: 1)
        let (copy, exhausted) = DeliveryRouter(stage: Stage.submit.name, retrySchedule: .standard).retry(delivery, after: failure)
        #expect(!exhausted)
        let expiration = try #require(copy.properties.expiration.flatMap(Double.init)) / 1000
        #expect(expiration <= remaining + RetrySchedule.standard.delays[0], "back after \(expiration) s for a wait of \(remaining) s (\(copy.routingKey))")
    }

    @Test func aCrashAfterSendingIsReconciledWithoutASecondAuth() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage()
        let (message, order) = try Self.crashedAfterSending(harness, amount: 1000, sent: true)
        #expect(Self.transientCode(try harness.process(stage, message)) == "awaiting_reconciliation")
        try harness.ageAttempts(message.paymentId, by: Self.pastReconciliation)
        Self.expectHandOffToNotify(try harness.process(stage, message), message)
        #expect(try harness.payment(message.paymentId).status == .authorized)
        #expect(try harness.authCount(order) == 1)
    }

    @Test func aCrashBeforeTheAuthLeftResendsOnlyAfterTheGatewayConfirmsAbsence() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage()
        let (message, order) = try Self.crashedAfterSending(harness, amount: 1000, sent: false)
        try harness.ageAttempts(message.paymentId, by: Self.pastReconciliation)
        Self.expectHandOffToNotify(try harness.process(stage, message), message)
        #expect(try harness.payment(message.paymentId).status == .authorized)
        #expect(try harness.authCount(order) == 1)
        let attempts = try harness.attempts(message.paymentId)
        #expect(attempts.map(\.state) == [.notSent, .completed, .completed])
        #expect(attempts.map(\.outcome) == ["transient", "not_found", "authorized"])
    }

    @Test func inconclusiveQueriesEndInNeedsReview() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage(maxQueries: 2)
        let (message, _) = try Self.crashedAfterSending(harness, amount: 1000, sent: false)
        try harness.useGateway(at: try Self.deadGatewayURL())
        try harness.ageAttempts(message.paymentId, by: Self.pastReconciliation)
        #expect(Self.transientCode(try harness.process(stage, message)) == "reconciliation_inconclusive")
        Self.expectHandOffToNotify(try harness.process(stage, message), message)
        let payment = try harness.payment(message.paymentId)
        #expect(payment.status == .needsReview)
        #expect(payment.errorCode == "reconciliation_inconclusive")
        #expect(try harness.isPurged(message.paymentId))

        // An operator closes it (`paypipe payment resolve`): recorded in the audit trail, handed to notification.
        let database = try harness.authorize.database()
        defer { database.close() }
        let resolution = try PaymentResolution(paymentId: message.paymentId, as: "declined", reason: "no AUTH in back office", actor: "alice")
        #expect(try resolution.apply(on: database) == message)
        #expect(try harness.payment(message.paymentId).status == .declined)
        #expect(try harness.payment(message.paymentId).errorCode == PaymentResolution.errorCode)
        #expect(try harness.authorize.events(message.paymentId).last == "needs_review→declined by operator:alice")
        #expect(throws: PaymentResolution.ResolutionError.notInReview(message.paymentId, .declined)) { try resolution.apply(on: database) }
    }

    @Test func aMerchantUnconfiguredWhileAnAuthIsOutstandingGoesToReviewNotFailed() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let (message, _) = try Self.crashedAfterSending(harness, amount: 1000, sent: true)
        var gateway = AuthorizeHarness.gateway(mode: "merchant-decrypts", secret: nil)
        gateway["baseUrl"] = harness.simulator.baseURL
        try harness.authorize.applyMerchant(SubmitHarness.merchantId, gateway: gateway, identity: true)
        // Within the AUTH's settle window its answer may still come: nothing is decided yet.
        #expect(Self.transientCode(try harness.process(harness.makeStage(), message)) == "awaiting_reconciliation")
        #expect(try harness.payment(message.paymentId).status == .submitting)
        try harness.ageAttempts(message.paymentId, by: 60)
        Self.expectHandOffToNotify(try harness.process(harness.makeStage(), message), message)
        let payment = try harness.payment(message.paymentId)
        #expect(payment.status == .needsReview)
        #expect(payment.errorCode == "gateway_not_configured")
    }

    @Test func aPreparedPaymentOfAnUnconfiguredMerchantFailsWithoutSending() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let (message, order) = try harness.preparedPayment(amount: 1000)
        var gateway = AuthorizeHarness.gateway(mode: "merchant-decrypts", secret: nil)
        gateway["baseUrl"] = harness.simulator.baseURL
        try harness.authorize.applyMerchant(SubmitHarness.merchantId, gateway: gateway, identity: true)
        Self.expectHandOffToNotify(try harness.process(harness.makeStage(), message), message)
        #expect(try harness.payment(message.paymentId).status == .failed)
        #expect(try harness.payment(message.paymentId).errorCode == "gateway_not_configured")
        #expect(try harness.authCount(order) == 0)
        #expect(try harness.isPurged(message.paymentId))
    }

    @Test func noAuthIsSentAfterThePaymentDeadline() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let (message, order) = try harness.preparedPayment(amount: 1000, receivedSecondsAgo: 700)
        Self.expectHandOffToNotify(try harness.process(harness.makeStage(deadline: 600), message), message)
        let payment = try harness.payment(message.paymentId)
        #expect(payment.status == .failed)
        #expect(payment.errorCode == "deadline_exceeded")
        #expect(try harness.authCount(order) == 0)
        #expect(try harness.attempts(message.paymentId).isEmpty)
        #expect(try harness.isPurged(message.paymentId))
    }

    /// A base URL where nothing listens: a simulator's ephemeral port, released.
    static func deadGatewayURL() throws -> String {
        let probe = GatewaySimulator(configuration: GatewaySimulatorConfiguration(port: 0, merchants: ["x": "y"]))
        try probe.start()
        let url = probe.baseURL
        probe.stop()
        return url
    }

    @Test func withTheGatewayDownRetriesParkAndSucceedWhenItReturns() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let deadURL = try Self.deadGatewayURL()
        try harness.useGateway(at: deadURL)
        let (message, order) = try harness.preparedPayment(amount: 1000)
        // Two refused connections open the circuit for 2 s: further retries park without calling.
        let stage = harness.makeStage(circuitFailures: 2, circuitOpen: 2)
        let configuration = try WorkerConfiguration(stage: .submit, environment: EnvironmentReader([
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": TestServices.amqpURL, "PAYPIPE_DATABASE_URL": harness.authorize.databaseURL,
            "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_METRICS_HOST": "127.0.0.1", "PAYPIPE_RETRY_DELAYS": "300ms,600ms",
            "PAYPIPE_MAX_RETRIES": "30", "PAYPIPE_PREFETCH": "10", "PAYPIPE_BATCH_SIZE": "5",
            "PAYPIPE_HEARTBEAT_SECONDS": "4", "PAYPIPE_RECONCILE_INTERVAL": "0", "PAYPIPE_SHUTDOWN_TIMEOUT": "20s",
        ]))
        let broker = try TestServices.amqp()
        try broker.declare(PipelineTopology.topology(retrySchedule: configuration.retrySchedule))
        broker.close()
        let runtime = try StageRuntime(handler: stage, configuration: configuration,
                                       logger: Logger(component: "submit", threshold: .debug, sink: harness.authorize.logSink),
                                       components: ReconcilerComponent.components(for: stage))
        try runtime.start()
        defer {
            runtime.requestStop()
            _ = runtime.waitUntilStopped()
        }
        let publisher = AMQPPublisher(configuration: try AMQPConfiguration(url: TestServices.amqpURL),
                                      topology: PipelineTopology.topology(retrySchedule: configuration.retrySchedule))
        var properties = AMQPProperties()
        properties.contentType = "application/json"
        try publisher.publish([AMQPOutboundMessage(exchange: PipelineTopology.stagesExchange, routingKey: Stage.submit.rawValue,
                                                   body: message.encoded(), properties: properties, mandatory: true)], timeout: 30)
        publisher.close()

        try TestServices.eventually(timeout: 20, "refused attempts while the gateway is down") {
            try harness.attempts(message.paymentId).filter { $0.state == .notSent }.count >= 2
        }
        #expect(!stage.gate.permits(deadURL + "/jwt/"), "the circuit is open")
        #expect(try harness.payment(message.paymentId).status == .prepared)
        // No call while the circuit is open: with the gateway still down, the next call is the probe once the 2 s have
        // passed from the second refusal (each attempt starts on the database clock after the gate let it through).
        var attempts: [GatewayAttempt] = []
        try TestServices.eventually(timeout: 20, "the probe after the circuit's open time") {
            attempts = try harness.attempts(message.paymentId).sorted { $0.id < $1.id }
            return attempts.count >= 3
        }
        let closedFor = attempts[2].startedAt.timeIntervalSince(attempts[1].startedAt)
        #expect(closedFor >= 1.9, "no call while the circuit is open: the probe came \(closedFor) s after the second refusal")
        try harness.useGateway(at: harness.simulator.baseURL)
        try TestServices.eventually(timeout: 20, "authorised once the gateway is back") {
            try harness.payment(message.paymentId).status == .authorized
        }
        #expect(try harness.authCount(order) == 1)
        #expect(try harness.authorize.handOffs(in: Stage.notify.queueName, for: [message.paymentId]) == [message.paymentId: 1])
        #expect(try harness.isPurged(message.paymentId))
    }
}
}
