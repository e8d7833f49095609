import Foundation
import AMQP
import HTTP
import JWT
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing
import TrustPaymentsWire

extension Integration {
/// The operations stage on the real PostgreSQL against the in-process simulator over HTTP (`/json/`): the story of
/// the issue (manual capture → partial capture → settlement → two partial refunds → a refused over-refund), exactly
/// once per operation on the simulator's operation ledger, duplicates never sent again, a lost REFUND answer never
/// resent.
@Suite struct OperationsStageTests {
    static let merchantId = "ops-m"

    struct Harness {
        let authorize: AuthorizeHarness
        let simulator: GatewaySimulator

        /// The merchant used everywhere, plus `otherMerchants` more on the same gateway (`ops-m-1`, …): a wave holds one
        /// message per merchant, so a round of N operations needs N merchants.
        init(settleDelay: Double, otherMerchants: Int = 0) throws {
            authorize = try AuthorizeHarness()
            simulator = GatewaySimulator(configuration: GatewaySimulatorConfiguration(
                host: "127.0.0.1", port: 0, merchants: [:], webservicesUsers: ["ws.paypipe.test": "ws-password"],
                slowResponseSeconds: 2, threads: 4, settleDelaySeconds: settleDelay))
            try simulator.start()
            for merchant in [OperationsStageTests.merchantId] + (0..<otherMerchants).map({ "\(OperationsStageTests.merchantId)-\($0 + 1)" }) {
                try authorize.applyMerchant(merchant, gateway: [
                    "type": "trustpayments", "baseUrl": simulator.baseURL, "siteReference": "test_site12345", "mode": "merchant-decrypts",
                    "transport": "webservices", "webservicesUsername": "ws.paypipe.test", "webservicesPassword": "ws-password",
                ], identity: true)
            }
        }

        func tearDown() {
            simulator.stop()
            authorize.tearDown()
        }

        var endpoint: GatewayEndpoint {
            GatewayEndpoint(baseUrl: simulator.baseURL, siteReference: "test_site12345", transport: .webservices,
                            username: "ws.paypipe.test", secret: "ws-password")
        }

        var client: TrustPaymentsClient {
            TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 0.5, totalTimeout: 1), transport: .init(deployment: .sandbox),
                                webservices: WebservicesTransport(connectTimeout: 0.5, totalTimeout: 1))
        }

        func stage() -> OperationsStage {
            OperationsStage(directory: MerchantDirectory(store: MerchantStore(vault: authorize.vault), ttl: 0), client: client,
                            sendWindow: 0.5, reconcileGrace: 0.2)
        }

        /// The stage with its upkeep round and reconciler hand-offs, as the worker runs it.
        func worker(settlementPoll: Double = 3600) -> OperationsWorker {
            OperationsWorker(stage(), settlementPoll: settlementPoll)
        }

        /// A payment authorised at the simulator by a real AUTH (settlestatus 2 asked for a manual capture), recorded
        /// as the submit stage records it.
        func authorizedPayment(amount: Int64, mode: CaptureMode, askSuspension: Bool? = nil, merchantId: String = OperationsStageTests.merchantId) throws -> UUID {
            let message = try authorize.insertPayment(merchantId: merchantId, amount: amount, currency: "GBP",
                                                      orderReference: "OPS-\(UUID().uuidString.prefix(6))", data: nil)
            var payload: JSONValue = [
                "requesttypedescriptions": ["AUTH"], "sitereference": "test_site12345", "accounttypedescription": "ECOM",
                "currencyiso3a": "GBP", "baseamount": .string(String(amount)), "orderreference": .string("OPS-\(message.paymentId.paymentIDText.prefix(8))"),
                "pan": "4111111111111111", "expirydate": "12/2031",
            ]
            let suspend = askSuspension ?? (mode == .manual)
            if suspend { payload.set("2", forKey: "settlestatus") }
            let answer = client.authorize(claims: ["payload": payload], requestTypes: ["AUTH"], endpoint: endpoint, requestId: "A1")
            // A suspended answer is what a manual-capture AUTH asks for (the submit stage maps it for manual payments).
            #expect(answer.transactionReference != nil && answer.settleStatus == (suspend ? "2" : "0"))
            let database = try authorize.database()
            defer { database.close() }
            try database.query("UPDATE payments SET status = 'submitting', stage = 'submit' WHERE id = $1", [message.paymentId])
            try PaymentStore().setCapturePolicy(message.paymentId, CapturePolicy(mode: mode, captureWithin: nil), on: database)
            try database.query(
                """
                INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, outcome, transaction_reference, settle_status, finished_at)
                VALUES ($1, 'o', 'AUTH', 'completed', 'authorized', $2, $3, now())
                """, [message.paymentId, answer.transactionReference, answer.settleStatus])
            _ = try PaymentStore().transition(message.paymentId, from: .submitting, to: .authorized, actor: "test", on: database)
            return message.paymentId
        }

        /// A payment whose AUTH reached the gateway after PayPipe had ended it failed: its answer came late
        /// (evidence), and submit put it up for review as `late_authorization`.
        func lateAuthorization(
            merchantId: String = OperationsStageTests.merchantId, orderReference: String, on database: PostgresConnection
        ) throws -> StageMessage {
            let message = try authorize.insertPayment(merchantId: merchantId, amount: 900, currency: "GBP", orderReference: orderReference, data: nil)
            let answer = client.authorize(claims: ["payload": [
                "requesttypedescriptions": ["AUTH"], "sitereference": "test_site12345", "accounttypedescription": "ECOM", "currencyiso3a": "GBP",
                "baseamount": "900", "orderreference": .string("\(orderReference)-x"), "pan": "4111111111111111", "expirydate": "12/2031",
            ]], requestTypes: ["AUTH"], endpoint: endpoint, requestId: "A9")
            try database.query("UPDATE payments SET status = 'failed', stage = 'done', error_code = 'deadline_exceeded' WHERE id = $1", [message.paymentId])
            try database.query(
                """
                INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, outcome, late_outcome, late_transaction_reference,
                                              late_settle_status, finished_at)
                VALUES ($1, $2, 'AUTH', 'not_sent', 'transient', 'authorized', $3, '0', now())
                """, [message.paymentId, "\(orderReference)-x", answer.transactionReference])
            _ = try PaymentStore().transition(message.paymentId, from: .failed, to: .needsReview, actor: "submit", errorCode: "late_authorization",
                                              detail: "late AUTH", on: database)
            return message
        }

        func delivery(
            _ kind: OperationRequest.Kind, _ operationId: String, payment: UUID, amount: Int64? = nil, merchantId: String = OperationsStageTests.merchantId
        ) -> InboundMessage {
            var body: [(key: String, value: JSONValue)] = [
                ("operationId", .string(operationId)), ("merchantId", .string(merchantId)),
                ("paymentId", .string(payment.paymentIDText)),
            ]
            if let amount { body.append(("amount", .integer(amount))) }
            return InboundMessage(job: JSONValue.object(body).serialized(), routingKey: kind.routingKey)
        }

        func run(_ stage: OperationsStage, _ delivery: InboundMessage) throws -> Result<StageOutcome, StageFailure> {
            let database = try authorize.database()
            defer { database.close() }
            return stage.process([try stage.decode(delivery)], database: database)[0]
        }

        func operation(_ operationId: String, merchantId: String = OperationsStageTests.merchantId) throws -> OperationStore.Operation? {
            let database = try authorize.database()
            defer { database.close() }
            return try OperationStore().find(merchantId: merchantId, operationId: operationId, on: database)
        }

        func lifecycle(_ payment: UUID) throws -> MoneyLifecycle? {
            let database = try authorize.database()
            defer { database.close() }
            return try PaymentStore().money(payment, forUpdate: false, on: database)?.lifecycle
        }
    }

    /// One batch with an operation, its duplicate and a second operation of the same payment: planned one after the
    /// other (never in one prepare transaction), the duplicate is reported again without a second request, and the
    /// second capture is decided on the first one's outcome.
    @Test func operationsOfOnePaymentInOneBatchRunInTurn() throws {
        let harness = try Harness(settleDelay: 60)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let payment = try harness.authorizedPayment(amount: 1000, mode: .manual)
        let capture = harness.delivery(.capture, "batch-1", payment: payment, amount: 800)
        let database = try harness.authorize.database()
        defer { database.close() }
        let results = stage.process(try [capture, capture, harness.delivery(.capture, "batch-2", payment: payment, amount: 100)].map(stage.decode),
                                    database: database)
        guard case .success(.publish) = results[0], case .success(.publish) = results[1] else { throw TestFailure("capture not reported twice: \(results)") }
        #expect(try harness.operation("batch-1")?.state == .succeeded)
        #expect(try harness.operation("batch-2")?.state == .failed, "a second capture of a captured payment is refused")
        #expect(harness.simulator.ledger.operations.count == 1, "one TRANSACTIONUPDATE for the operation and its duplicate")
        #expect(try harness.lifecycle(payment).map { ($0.status, $0.capturedAmount) } ?? (.voided, 0) == (.captured, 800))
    }

    /// Issue 40, defect 4: an invalid operation is recorded so that it never collides with a usable one. The issue's two
    /// messages end `invalid_job`, then `operation_conflict` (both dead-lettered with their reasons, nothing sent), even
    /// when a real payment's `jobId` is `-` (the stand-in invalid operations were once recorded under); that payment's
    /// own capture is carried out.
    @Test func anInvalidOperationNeverReadsAsARepeatOfAUsableOne() throws {
        let harness = try Harness(settleDelay: 60)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let payment = try harness.authorizedPayment(amount: 1000, mode: .manual)
        do {
            let database = try harness.authorize.database()
            defer { database.close() }
            try database.query("UPDATE payments SET job_id = '-' WHERE id = $1", [payment])
        }
        func capture(_ json: String) -> InboundMessage { InboundMessage(job: Array(json.utf8), routingKey: OperationRequest.Kind.capture.routingKey) }
        let merchant = Self.merchantId
        let invalid = try harness.run(stage, capture(#"{"operationId":"X","merchantId":"\#(merchant)","paymentId":"\#(payment.paymentIDText)","amount":8.0}"#))
        guard case .failure(.unattributable("invalid_job", let invalidReason)) = invalid else { throw TestFailure("not invalid_job: \(invalid)") }
        #expect(invalidReason.contains("amount"))
        #expect(try harness.operation("X").map { "\($0.state.rawValue) \($0.errorCode ?? "-") \($0.paymentId == nil)" } == "failed invalid_job true")

        let second = try harness.run(stage, capture(#"{"operationId":"X","merchantId":"\#(merchant)","jobId":"-"}"#))
        guard case .failure(.unattributable("operation_conflict", let conflictReason)) = second else {
            throw TestFailure("the second message did not end as operation_conflict: \(second)")
        }
        #expect(conflictReason.contains("X"))
        #expect(harness.simulator.ledger.operations.isEmpty, "nothing was sent for either message")
        #expect(try harness.lifecycle(payment)?.status == .authorized)

        let own = try harness.run(stage, capture(#"{"operationId":"Y","merchantId":"\#(merchant)","jobId":"-"}"#))
        guard case .success(.publish) = own else { throw TestFailure("the capture of job '-' was not carried out: \(own)") }
        #expect(try harness.operation("Y")?.state == .succeeded)
        #expect(try harness.lifecycle(payment).map { "\($0.status.rawValue) \($0.capturedAmount)" } == "captured 1000")
        #expect(harness.simulator.ledger.operations.count == 1)
    }

    @Test func manualCapturePartialCaptureSettlementTwoRefundsAndARefusedOverRefund() throws {
        let harness = try Harness(settleDelay: 0.5)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let payment = try harness.authorizedPayment(amount: 1000, mode: .manual)
        #expect(try harness.lifecycle(payment)?.status == .authorized)

        // A partial capture: one TRANSACTIONUPDATE settlestatus 0 + settlebaseamount 800; a duplicate sends nothing.
        let capture = harness.delivery(.capture, "ship-1", payment: payment, amount: 800)
        guard case .success(.publish(let handOffs)) = try harness.run(stage, capture) else { throw TestFailure("capture not reported") }
        #expect(handOffs.first?.rendered.routingKey == "notify")
        #expect(OperationEventMessage.operation(in: handOffs[0].rendered.body) == (try harness.operation("ship-1"))?.id)
        guard case .success(.publish) = try harness.run(stage, capture) else { throw TestFailure("duplicate capture not reported again") }
        #expect(try harness.operation("ship-1")?.state == .succeeded)
        #expect(try harness.lifecycle(payment).map { ($0.status, $0.capturedAmount) } ?? (.voided, 0) == (.captured, 800))

        // A refund before settlement would be a lower capture; wait for the simulated settlement run instead.
        let reference = try #require(try harness.operation("ship-1")?.request?.targetReference)
        try TestServices.eventually("the simulator settles the captured AUTH") {
            guard case .success(let queried?) = harness.client.queryAuth(transactionReference: reference, endpoint: harness.endpoint,
                                                                         requestId: "T", using: HTTPClient(configuration: harness.client.http)) else { return false }
            return queried.settleStatus == .settled
        }
        for (operationId, amount) in [("return-1", Int64(300)), ("return-2", 400)] {
            guard case .success(.publish) = try harness.run(stage, harness.delivery(.refund, operationId, payment: payment, amount: amount)) else {
                throw TestFailure("\(operationId) not reported")
            }
            let refund = try #require(try harness.operation(operationId))
            #expect(refund.state == .succeeded && refund.request == .refund(parentTransactionReference: refund.request!.targetReference, amount: amount))
            #expect(refund.gatewayReference != nil, "the REFUND's own transaction reference")
        }
        guard case .success(.publish) = try harness.run(stage, harness.delivery(.refund, "return-3", payment: payment, amount: 101)) else {
            throw TestFailure("over-refund not reported")
        }
        #expect(try harness.operation("return-3").map { ($0.state, $0.errorCode) } ?? (.requested, nil) == (.failed, "amount_exceeds_refundable"))
        let final = try #require(try harness.lifecycle(payment))
        #expect(final.status == .partiallyRefunded && final.capturedAmount == 800 && final.refundedAmount == 700)

        // The gateway's ledger: one capture and two refunds, each under its own attempt's request reference.
        let ledger = harness.simulator.ledger.operations
        #expect(ledger.map { $0["requesttypedescription"]?.stringValue ?? "" } == ["TRANSACTIONUPDATE", "REFUND", "REFUND"])
        let references = ledger.compactMap { $0["requestreference"]?.stringValue?.split(separator: "-").first.map(String.init) }
        #expect(Set(references).count == 3)
        #expect(ledger[0]["updates"] == ["settlestatus": "0", "settlebaseamount": "800"])
    }

    @Test func aLostRefundAnswerGoesToReviewAndIsNeverResent() throws {
        let harness = try Harness(settleDelay: 0)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let payment = try harness.authorizedPayment(amount: 500, mode: .automatic)
        let hold = harness.simulator.holds.hold(SimulatorHolds.Rule(requestType: "REFUND", loseProcessed: true))
        let refund = harness.delivery(.refund, "lost-1", payment: payment, amount: 200)
        guard case .success(.settled("under_review", _)) = try harness.run(stage, refund) else { throw TestFailure("lost refund not for review") }
        #expect(try harness.operation("lost-1").map { ($0.state, $0.errorCode) } ?? (.failed, nil) == (.needsReview, "refund_outcome_unknown"))
        harness.simulator.holds.release(hold)
        // Redelivered: still for review, nothing sent; another refund of the payment is refused (and reported) while it
        // is for review: only an operator ends it, so waiting would only exhaust the retries and dead-letter the job.
        guard case .success(.settled("under_review", _)) = try harness.run(stage, refund) else {
            throw TestFailure("redelivered refund not for review")
        }
        guard case .success(.publish) = try harness.run(stage, harness.delivery(.refund, "lost-2", payment: payment, amount: 1)) else {
            throw TestFailure("a second refund was not refused and reported")
        }
        #expect(try harness.operation("lost-2").map { ($0.state, $0.errorCode) } ?? (.requested, nil) == (.failed, "operation_under_review"))
        #expect(harness.simulator.ledger.operations.count == 1, "the REFUND took effect once and was never resent")
        #expect(try harness.lifecycle(payment)?.refundedAmount == 0, "not counted until an operator resolves it")
    }

    @Test func aLostUpdateAnswerIsReconciledByQueryingTheAuth() throws {
        let harness = try Harness(settleDelay: 0)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let payment = try harness.authorizedPayment(amount: 500, mode: .manual)
        let hold = harness.simulator.holds.hold(SimulatorHolds.Rule(requestType: "TRANSACTIONUPDATE", loseProcessed: true))
        let void = harness.delivery(.void, "cancel-1", payment: payment)
        #expect(ConnectorEndToEndTests.transientCode(try harness.run(stage, void)) == "reconciliation_pending", "lost void retried")
        harness.simulator.holds.release(hold)
        // Once the attempt's reconciliation time has come (moved into the past rather than waited for; the wait before
        // it is OperationResumptionTests'), the redelivery queries: settle status 3, it took effect.
        let database = try harness.authorize.database()
        defer { database.close() }
        try database.query(
            """
            UPDATE operation_attempts a SET started_at = started_at - interval '60 seconds', send_deadline = send_deadline - interval '60 seconds',
                   reconcile_after = reconcile_after - interval '60 seconds'
            FROM payment_operations o WHERE o.id = a.operation_id AND o.operation_id = 'cancel-1'
            """)
        let outcome = try harness.run(stage, void)
        guard case .success(.publish) = outcome else { throw TestFailure("void not reconciled: \(outcome)") }
        #expect(try harness.operation("cancel-1")?.state == .succeeded)
        #expect(try harness.lifecycle(payment)?.status == .voided)
        #expect(harness.simulator.ledger.operations.count == 1, "the TRANSACTIONUPDATE was not sent again")
    }

    /// The merchant's gateway.captureMode / captureWithin with a job's over them, as payments are created; a manual
    /// document needs the webservices transport.
    @Test func theCapturePolicyOfANewPaymentIsTheJobsOverTheMerchants() throws {
        let harness = try Harness(settleDelay: 0)
        defer { harness.tearDown() }
        let database = try harness.authorize.database()
        defer { database.close() }
        func policy(_ mode: String?, _ within: String?) throws -> String {
            let row = try database.query("SELECT capture_mode, capture_within_seconds FROM paypipe_capture_policy($1, $2, $3)",
                                         [Self.merchantId, mode, within])[0]
            return "\(try row.decode("capture_mode", as: String.self)) \(try row.decode("capture_within_seconds", as: Double?.self).map { String(Int($0)) } ?? "-")"
        }
        #expect(try policy(nil, nil) == "automatic -")
        #expect(try policy("manual", "PT36H") == "manual 129600")
        try harness.authorize.applyMerchant(Self.merchantId, gateway: [
            "type": "trustpayments", "baseUrl": harness.simulator.baseURL, "siteReference": "test_site12345", "mode": "merchant-decrypts",
            "transport": "webservices", "webservicesUsername": "ws.paypipe.test", "webservicesPassword": "ws-password",
            "captureMode": "manual", "captureWithin": "P7D",
        ], identity: true)
        #expect(try policy(nil, nil) == "manual 604800")
        #expect(try policy("manual", "P2W") == "manual 1209600")
        #expect(try policy("automatic", nil) == "automatic -", "switching the mode drops the merchant's captureWithin")
        // insertNew applies it to the batch's new payments: the job's over the merchant's, an invalid job the merchant's.
        let job = try PaymentJob.decode(Array("""
            {"jobId":"policy-1","merchantId":"\(Self.merchantId)","orderReference":"o-1","amount":{"value":100,"currency":"GBP"},
             "captureMode":"manual","captureWithin":"PT1H","applePayToken":{"paymentData":{"version":"EC_v1"}}}
            """.utf8))
        let plain = try PaymentJob.decode(Array("""
            {"jobId":"policy-2","merchantId":"\(Self.merchantId)","orderReference":"o-2","amount":{"value":100,"currency":"GBP"},
             "applePayToken":{"paymentData":{"version":"EC_v1"}}}
            """.utf8))
        func new(_ job: PaymentJob?, _ jobId: String) -> Decrypt.NewPayment<DataVault.SealedBox> {
            Decrypt.NewPayment(id: UUID(), key: Decrypt.JobKey(merchantId: Self.merchantId, jobId: jobId), jobHash: [1], job: job,
                               settled: .failed(Rejection(code: "signature_invalid", reason: "test")))
        }
        let rows = [new(job, "policy-1"), new(plain, "policy-2"), new(nil, "policy-3")]
        #expect(try PaymentStore().insertNew(rows, receivedAt: Date(), on: database).count == 3)
        let stored = try rows.map { row in try #require(try PaymentStore().load(row.id, on: database)) }
        #expect(stored.map(\.captureMode) == [.manual, .manual, .manual])
        let within = try database.query("SELECT capture_within_seconds FROM payments WHERE job_id LIKE 'policy-%' ORDER BY job_id")
            .map { try $0.decode("capture_within_seconds", as: Double?.self) }
        #expect(within == [3600, 604_800, 604_800])
        #expect(throws: MerchantStore.MerchantError.self) {
            try harness.authorize.applyMerchant(Self.merchantId, gateway: AuthorizeHarness.gateway(mode: "merchant-decrypts").merging(["captureMode": "manual"]) { $1 },
                                                identity: true)
        }
        #expect(throws: MerchantStore.MerchantError.self) {
            try harness.authorize.applyMerchant(Self.merchantId, gateway: [
                "type": "trustpayments", "baseUrl": harness.simulator.baseURL, "siteReference": "s", "mode": "merchant-decrypts",
                "transport": "webservices", "webservicesUsername": "u", "webservicesPassword": "p", "captureWithin": "P7D",
            ], identity: true)
        }
    }

    /// A manual AUTH the gateway answered pending settlement (its settlestatus "2" not honoured) is suspended by the
    /// stage's upkeep with a TRANSACTIONUPDATE before settlement can take it.
    @Test func anUnsuspendedManualAuthIsSuspendedByTheUpkeep() throws {
        let harness = try Harness(settleDelay: 3600)
        defer { harness.tearDown() }
        // Sent without settlestatus 2 (as a gateway ignoring the field would answer): recorded settle status 0.
        let payment = try harness.authorizedPayment(amount: 700, mode: .manual, askSuspension: false)
        let database = try harness.authorize.database()
        defer { database.close() }
        try harness.worker().upkeep(database: database, logger: Logger(component: "test", threshold: .error))
        let ledger = harness.simulator.ledger.operations
        #expect(ledger.count == 1 && ledger.first?["updates"] == ["settlestatus": "2"])
        #expect(try PaymentStore().money(payment, forUpdate: false, on: database)?.settleStatus == .suspended)
        // Nothing more to do on the next round.
        try harness.worker().upkeep(database: database, logger: Logger(component: "test", threshold: .error))
        #expect(harness.simulator.ledger.operations.count == 1)
    }

    /// A late AUTH on a payment PayPipe failed (put up for review as `late_authorization` by submit) is voided by the
    /// operations stage once the reconciler hands it over: one TRANSACTIONUPDATE settlestatus 3, an audited void
    /// operation, the payment closed `failed` (`late_authorization_voided`) and notified; never a second void.
    @Test func aLateAuthorizationOnAFailedPaymentIsVoidedAutomatically() throws {
        let harness = try Harness(settleDelay: 3600)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let database = try harness.authorize.database()
        defer { database.close() }
        let message = try harness.lateAuthorization(orderReference: "LATE-1", on: database)
        let handed = try OperationsWorker(stage).reconcile(on: database)
        #expect(handed.map(\.message.paymentId) == [message.paymentId] && handed.first?.stage == .operations)
        let delivery = InboundMessage(body: handed[0].message.encoded(), to: .operations)
        let outcome = stage.process([try stage.decode(delivery)], database: database)[0]
        guard case .success(.publish(let published)) = outcome else { throw TestFailure("late AUTH not voided: \(outcome)") }
        #expect(published.map(\.rendered.routingKey) == ["notify", "notify"], "the void's event and the payment's closing")
        let voidRow = try #require(try harness.operation(OperationSteps.lateAuthorizationOperationId(message.paymentId))).id
        #expect(published.map(\.rendered.properties.messageId) == ["operation:\(voidRow):notify", "\(message.paymentId.paymentIDText):notify"])
        #expect(published.allSatisfy { $0.rendered.properties.type == "notify" && $0.rendered.properties.timestamp != nil && $0.rendered.mandatory })
        let void = try #require(try harness.operation(OperationSteps.lateAuthorizationOperationId(message.paymentId)))
        #expect(void.state == .succeeded && void.requestedBy == .lateAuthorization && void.effect?.event == .voided && void.effect?.amount == 900)
        let payment = try #require(try PaymentStore().load(message.paymentId, on: database))
        #expect(payment.status == .failed && payment.errorCode == "late_authorization_voided" && payment.stage == .notify)
        #expect(harness.simulator.ledger.operations.map { $0["updates"] } == [["settlestatus": "3"]])
        // Done: not handed over again, and a redelivered hand-off sends nothing more.
        #expect(try OperationsWorker(stage).reconcile(on: database).isEmpty)
        _ = stage.process([try stage.decode(delivery)], database: database)
        #expect(harness.simulator.ledger.operations.count == 1)
    }

    /// A manual authorisation not captured within its `captureWithin` is voided once the reconciler hands it over
    /// (`requestedBy: expiry`, `payment.voided`); a capture after the deadline is refused.
    @Test func anUncapturedAuthorizationIsVoidedAfterCaptureWithin() throws {
        let harness = try Harness(settleDelay: 3600)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let database = try harness.authorize.database()
        defer { database.close() }
        let payment = try harness.authorizedPayment(amount: 400, mode: .manual)
        try database.query("UPDATE payments SET capture_deadline = clock_timestamp() WHERE id = $1", [payment])
        guard case .success(.publish) = try harness.run(stage, harness.delivery(.capture, "late-capture", payment: payment)) else {
            throw TestFailure("capture after the deadline not reported")
        }
        #expect(try harness.operation("late-capture")?.errorCode == "authorization_expired")
        let handed = try OperationsWorker(stage).reconcile(on: database)
        #expect(handed.map(\.message.paymentId) == [payment])
        let delivery = InboundMessage(body: handed[0].message.encoded(), to: .operations)
        let outcome = stage.process([try stage.decode(delivery)], database: database)[0]
        guard case .success(.publish) = outcome else { throw TestFailure("expiry void not reported: \(outcome)") }
        let void = try #require(try harness.operation(OperationSteps.expiryOperationId(payment)))
        #expect(void.state == .succeeded && void.requestedBy == .expiry && void.effect?.event == .voided && void.effect?.amount == 400)
        #expect(try harness.lifecycle(payment)?.status == .voided)
        #expect(harness.simulator.ledger.operations.map { $0["updates"] } == [["settlestatus": "3"]])
        #expect(try OperationsWorker(stage).reconcile(on: database).isEmpty)
    }

    /// The settlement poll: captured payments not checked for `PAYPIPE_SETTLEMENT_POLL` are queried in one
    /// TRANSACTIONQUERY per merchant; the settled ones become `settled`, the others are checked again later.
    @Test func settlementIsLearntByBatchedStatusQueries() throws {
        let harness = try Harness(settleDelay: 0)
        defer { harness.tearDown() }
        let database = try harness.authorize.database()
        defer { database.close() }
        let payments = try (0..<3).map { _ in try harness.authorizedPayment(amount: 300, mode: .automatic) }
        let fresh = try harness.authorizedPayment(amount: 300, mode: .automatic)
        try database.query("UPDATE payments SET updated_at = clock_timestamp() - interval '2 hours' WHERE id = ANY($1::uuid[])", [PostgresArray(payments)])
        let before = harness.simulator.ledger.captured.count
        try harness.worker(settlementPoll: 3600).upkeep(database: database, logger: Logger(component: "test", threshold: .error))
        #expect(try payments.allSatisfy { try harness.lifecycle($0)?.status == .settled })
        #expect(try harness.lifecycle(fresh)?.status == .captured, "not due yet")
        #expect(harness.simulator.ledger.captured.count == before + 1, "one query for the merchant's three payments")
        try harness.worker(settlementPoll: 3600).upkeep(database: database, logger: Logger(component: "test", threshold: .error))
        #expect(harness.simulator.ledger.captured.count == before + 1, "nothing due on the next round")
    }

    /// The settlement poll starts after the AUTH's `settleduedate` (recorded from its answer): a payment whose due date
    /// has passed is queried though captured a moment ago; one whose due date is today is not, though an interval old.
    @Test func settlementIsFirstQueriedAfterTheSettleDueDate() throws {
        let harness = try Harness(settleDelay: 0)
        defer { harness.tearDown() }
        let database = try harness.authorize.database()
        defer { database.close() }
        let pastDue = try harness.authorizedPayment(amount: 300, mode: .automatic)
        let dueToday = try harness.authorizedPayment(amount: 300, mode: .automatic)
        try database.query("UPDATE gateway_attempts SET settle_due_date = (clock_timestamp() AT TIME ZONE 'UTC')::date - 1 WHERE payment_id = $1", [pastDue])
        try database.query("UPDATE gateway_attempts SET settle_due_date = (clock_timestamp() AT TIME ZONE 'UTC')::date WHERE payment_id = $1", [dueToday])
        try database.query("UPDATE payments SET updated_at = clock_timestamp() - interval '2 hours' WHERE id = $1", [dueToday])
        try harness.worker(settlementPoll: 3600).upkeep(database: database, logger: Logger(component: "test", threshold: .error))
        #expect(try harness.lifecycle(pastDue)?.status == .settled)
        #expect(try harness.lifecycle(dueToday)?.status == .captured, "not before its due date has passed")
    }

    /// The AUTH answer's `settleduedate` is recorded with its attempt (the simulator sends the UTC date it settles).
    @Test func theSettleDueDateIsRecordedFromTheAuthAnswer() throws {
        let result = TrustPaymentsResponseMapper.result(fromItem: ["requesttypedescription": "AUTH", "errorcode": "0", "settlestatus": "0",
                                                            "transactionreference": "1-2-3", "settleduedate": "2026-12-02"])
        #expect(result.settleDueDate == "2026-12-02")
        #expect(TrustPaymentsResponseMapper.result(fromItem: ["errorcode": "0", "settleduedate": "02/12/2026"]).settleDueDate == nil)
        let harness = try Harness(settleDelay: 0)
        defer { harness.tearDown() }
        let database = try harness.authorize.database()
        defer { database.close() }
        let payment = try harness.authorizedPayment(amount: 300, mode: .automatic)
        let attempt = try #require(try database.query("SELECT id FROM gateway_attempts WHERE payment_id = $1", [payment]).first?.decode("id", as: Int64.self))
        try database.query("UPDATE gateway_attempts SET state = 'sending' WHERE id = $1", [attempt])
        try GatewayAttemptStore().finish(attempt, state: .completed, result: result, on: database)
        let recorded = try database.query("SELECT to_char(settle_due_date, 'YYYY-MM-DD') AS due FROM gateway_attempts WHERE id = $1", [attempt])
        #expect(try recorded.first?.decode("due", as: String?.self) == "2026-12-02")
    }

    @Test func jwtMerchantsAndConflictsAreRefused() throws {
        let harness = try Harness(settleDelay: 0)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let payment = try harness.authorizedPayment(amount: 500, mode: .automatic)
        guard case .success(.publish) = try harness.run(stage, harness.delivery(.refund, "r-1", payment: payment, amount: 100)) else {
            throw TestFailure("refund not reported")
        }
        guard case .failure(.unattributable(let code, _)) = try harness.run(stage, harness.delivery(.refund, "r-1", payment: payment, amount: 99)) else {
            throw TestFailure("conflict not dead-lettered")
        }
        #expect(code == "operation_conflict")
        try harness.authorize.applyMerchant(Self.merchantId, gateway: AuthorizeHarness.gateway(mode: "merchant-decrypts"), identity: true)
        guard case .success(.publish) = try harness.run(stage, harness.delivery(.void, "v-1", payment: payment)) else {
            throw TestFailure("jwt void not reported")
        }
        #expect(try harness.operation("v-1").map { ($0.state, $0.errorCode) } ?? (.requested, nil) == (.failed, "operation_not_supported"))
        #expect(harness.simulator.ledger.operations.count == 1)
    }
}
}

extension OutboundMessage {
    /// As the operations worker's runtime publishes it.
    var rendered: AMQPOutboundMessage { DeliveryRouter(stage: .operations, retrySchedule: .standard).message(for: self) }
}
