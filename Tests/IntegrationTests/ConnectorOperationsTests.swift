import Foundation
import HTTP
import JWT
@testable import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// OPP's and TapPay's operations on real services: merchants applied with `captureMode: manual`, payments authorised by
/// the real authorize and submit stages against the simulator's faces (an OPP `PA`, a TapPay trade with no automatic
/// capture), then captured, refunded and over-refunded by the real operations stage. The simulator's operation ledger
/// shows exactly one gateway operation per operation, also when an answer was lost and reconciled.
@Suite struct ConnectorOperationsTests {
    final class Harness {
        let base: ConnectorEndToEndTests.Harness
        var authorize: AuthorizeHarness { base.authorize }
        var simulator: GatewaySimulator { base.simulator }

        init() throws {
            base = try ConnectorEndToEndTests.Harness()
            try authorize.applyMerchant("opp-ops", gateway: [
                "type": "opp", "baseUrl": simulator.baseURL, "mode": "merchant-decrypts", "captureMode": "manual",
                "opp": ["entityId": ConnectorEndToEndTests.entity, "accessToken": "e2e-token", "paymentBrand": "VISA"],
            ], identity: true)
            // Trust Payments' operations go over its webservices transport (docs/operations.md).
            try authorize.applyMerchant("tp-ops", gateway: [
                "type": "trustpayments", "baseUrl": simulator.baseURL, "siteReference": "test_site12345", "mode": "merchant-decrypts",
                "transport": "webservices", "webservicesUsername": "ws.paypipe.test", "webservicesPassword": "ws-password",
            ], identity: true)
            try authorize.applyMerchant("tappay-ops", gateway: [
                "type": "tappay", "baseUrl": simulator.baseURL, "mode": "gateway-decrypts", "captureMode": "manual",
                "tapPay": ["merchantId": "tappay_e2e", "partnerKey": "partner_e2e"],
            ], identity: false)
        }

        func operations() -> OperationsStage {
            OperationsStage(directory: MerchantDirectory(store: MerchantStore(vault: authorize.vault), ttl: 0),
                            client: TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 0.5, totalTimeout: 1), transport: .init(deployment: .sandbox),
                                                        webservices: WebservicesTransport(connectTimeout: 0.5, totalTimeout: 1)),
                            sendWindow: 0.5, reconcileGrace: 0.2)
        }

        /// A manual payment of `merchant` authorised through the real authorize and submit stages.
        func authorized(_ merchant: String, amount: Int64, currency: String, data: StoredPaymentData) throws -> StageMessage {
            let message = try base.prepared(merchant, amount: amount, currency: currency, data: data)
            do {
                // The merchant's capture mode, as the payment's creation records it (paypipe_capture_policy).
                let database = try authorize.database()
                defer { database.close() }
                try PaymentStore().setCapturePolicy(message.paymentId, CapturePolicy(mode: .manual, captureWithin: nil), on: database)
            }
            let outcome = try base.process(base.stage(), message)
            #expect(outcome == .success(.handOff(to: .notify, message)), "\(outcome)")
            #expect(try lifecycle(message)?.status == .authorized, "a manual AUTH leaves the payment authorised, nothing captured")
            return message
        }

        func run(_ stage: OperationsStage, _ kind: OperationRequest.Kind, _ operationId: String, _ payment: StageMessage, amount: Int64? = nil) throws
            -> Result<StageOutcome, StageFailure> {
            var body: [(key: String, value: JSONValue)] = [
                ("operationId", .string(operationId)), ("merchantId", .string(payment.merchantId)), ("paymentId", .string(payment.paymentId.paymentIDText)),
            ]
            if let amount { body.append(("amount", .integer(amount))) }
            let database = try authorize.database()
            defer { database.close() }
            let message = try stage.decode(InboundMessage(job: JSONValue.object(body).serialized(), routingKey: kind.routingKey))
            return stage.process([message], database: database)[0]
        }

        func operation(_ payment: StageMessage, _ operationId: String) throws -> OperationStore.Operation? {
            let database = try authorize.database()
            defer { database.close() }
            return try OperationStore().find(merchantId: payment.merchantId, operationId: operationId, on: database)
        }

        func outcome(_ payment: StageMessage, _ operationId: String) throws -> String {
            guard let operation = try operation(payment, operationId) else { return "absent" }
            return [operation.state.rawValue, operation.errorCode].compactMap { $0 }.joined(separator: " ")
        }

        func lifecycle(_ payment: StageMessage) throws -> MoneyLifecycle? {
            let database = try authorize.database()
            defer { database.close() }
            return try PaymentStore().money(payment.paymentId, forUpdate: false, on: database)?.lifecycle
        }

        /// Moves the payment's operation attempts a minute into the past: their reconciliation time has come (rather
        /// than waiting for it).
        func ageAttempts(_ payment: StageMessage) throws {
            let database = try authorize.database()
            defer { database.close() }
            try database.query(
                """
                UPDATE operation_attempts a SET started_at = started_at - interval '60 seconds', send_deadline = send_deadline - interval '60 seconds',
                       reconcile_after = reconcile_after - interval '60 seconds'
                FROM payment_operations o WHERE o.id = a.operation_id AND o.payment_id = $1
                """, [payment.paymentId])
        }

        /// The simulator's operation ledger for one payment (by its processor id): `requesttypedescription amount`.
        func ledger(_ transactionReference: String) -> [String] {
            simulator.ledger.operations.filter { $0["transactionreference"]?.stringValue == transactionReference }
                .map { "\($0["requesttypedescription"]?.stringValue ?? "?") \($0["baseamount"]?.stringValue ?? "-")" }
        }

        func processorId(_ payment: StageMessage) throws -> String {
            let database = try authorize.database()
            defer { database.close() }
            return try #require(try OperationStore().gatewayFacts(paymentId: payment.paymentId, on: database)?.transactionReference)
        }
    }

    static func published(_ result: Result<StageOutcome, StageFailure>) -> Bool {
        if case .success(.publish) = result { return true }
        return false
    }

    @Test func oppManualCapturePartialCaptureRefundsAndARefusedOverRefund() throws {
        let harness = try Harness()
        let stage = harness.operations()
        let payment = try harness.authorized("opp-ops", amount: 1000, currency: "GBP", data: ConnectorEndToEndTests.oppData(1000))
        // The AUTH was a pre-authorisation (PA), whatever the merchant's paymentType.
        let sent = harness.simulator.ledger.captured.last { $0["path"]?.stringValue == "/v1/payments" }
        #expect(sent?["form"]?["paymentType"] == "PA")
        let id = try harness.processorId(payment)

        #expect(Self.published(try harness.run(stage, .capture, "ship", payment, amount: 600)))
        #expect(try harness.outcome(payment, "ship") == "succeeded")
        #expect(try harness.lifecycle(payment).map { "\($0.status.rawValue) \($0.capturedAmount)" } == "captured 600")
        // The same operation again sends nothing; a second capture is refused.
        #expect(Self.published(try harness.run(stage, .capture, "ship", payment, amount: 600)))
        #expect(Self.published(try harness.run(stage, .capture, "ship-again", payment, amount: 400)))
        #expect(try harness.outcome(payment, "ship-again") == "failed already_captured")
        // A void of the captured payment is refused: refund it instead.
        #expect(Self.published(try harness.run(stage, .void, "cancel", payment)))
        #expect(try harness.outcome(payment, "cancel") == "failed payment_settled")

        #expect(Self.published(try harness.run(stage, .refund, "return-1", payment, amount: 200)))
        #expect(Self.published(try harness.run(stage, .refund, "return-2", payment, amount: 300)))
        #expect(Self.published(try harness.run(stage, .refund, "return-3", payment, amount: 101)))
        #expect(try [harness.outcome(payment, "return-1"), harness.outcome(payment, "return-2"), harness.outcome(payment, "return-3")]
            == ["succeeded", "succeeded", "failed amount_exceeds_refundable"])
        #expect(try harness.lifecycle(payment).map { "\($0.status.rawValue) \($0.capturedAmount) \($0.refundedAmount)" } == "partially_refunded 600 500")
        #expect(harness.ledger(id) == ["CP 600", "RF 200", "RF 300"])
        // Issue 40, item 5: the refunds of the captured pre-authorisation referenced the capture's id, as OPP's refund
        // example does (docs/connectors.md), not the PA's.
        let captureId = try #require(try harness.operation(payment, "ship")?.gatewayReference)
        #expect(captureId != id)
        let refundPaths = harness.simulator.ledger.captured.filter { $0["form"]?["paymentType"] == "RF" }.compactMap { $0["path"]?.stringValue }
        #expect(refundPaths == ["/v1/payments/\(captureId)", "/v1/payments/\(captureId)"])
        // Each operation carried its own merchantTransactionId.
        let references = harness.simulator.ledger.operations.filter { $0["transactionreference"]?.stringValue == id }.compactMap { $0["requestreference"]?.stringValue }
        #expect(Set(references).count == 3 && references.allSatisfy { $0.hasPrefix(payment.paymentId.paymentIDText + "-op") })
    }

    @Test func oppVoidReversesTheAuthorisation() throws {
        let harness = try Harness()
        let stage = harness.operations()
        let payment = try harness.authorized("opp-ops", amount: 1200, currency: "GBP", data: ConnectorEndToEndTests.oppData(1200))
        #expect(Self.published(try harness.run(stage, .void, "cancel", payment)))
        #expect(try harness.outcome(payment, "cancel") == "succeeded")
        #expect(try harness.lifecycle(payment)?.status == .voided)
        #expect(Self.published(try harness.run(stage, .refund, "return", payment, amount: 100)))
        #expect(try harness.outcome(payment, "return") == "failed payment_voided")
        #expect(harness.ledger(try harness.processorId(payment)) == ["RV -"])
    }

    @Test func tapPayManualFullCaptureRefundAndRefusals() throws {
        let harness = try Harness()
        let stage = harness.operations()
        let payment = try harness.authorized("tappay-ops", amount: 100_000, currency: "TWD", data: ConnectorEndToEndTests.tapPayData())
        let id = try harness.processorId(payment)
        // The trade was made with no automatic capture (delay_capture_in_days -1): the Record API shows it uncaptured.
        let endpoint = try GatewayEndpoint.forMerchant(try #require(try harness.authorize.merchant("tappay-ops")).config.gateway,
                                                       secrets: try harness.authorize.merchant("tappay-ops")?.secrets, site: nil).get()
        let shown = stage.connectors.findOperation(.capture(transactionId: id, amountMinor: 100_000, currency: "TWD"), reference: id, endpoint: endpoint,
                                                   requestId: "T1", now: Date(), using: HTTPClient())
        #expect(shown == .success(.payment(.init(isCaptured: false, refundedAmount: 0))))

        // A partial capture is refused with a classified failure, without a call; a void has no API.
        #expect(Self.published(try harness.run(stage, .capture, "part", payment, amount: 50_000)))
        #expect(try harness.outcome(payment, "part") == "failed partial_capture_not_supported")
        #expect(Self.published(try harness.run(stage, .void, "cancel", payment)))
        #expect(try harness.outcome(payment, "cancel") == "failed operation_not_supported")
        #expect(harness.ledger(id).isEmpty)

        #expect(Self.published(try harness.run(stage, .capture, "ship", payment)))
        #expect(try harness.outcome(payment, "ship") == "succeeded")
        // The refund learns the capture from the Record API (is_captured) first.
        #expect(Self.published(try harness.run(stage, .refund, "return-1", payment, amount: 30_000)))
        #expect(Self.published(try harness.run(stage, .refund, "return-2", payment, amount: 70_100)))
        #expect(try [harness.outcome(payment, "return-1"), harness.outcome(payment, "return-2")] == ["succeeded", "failed amount_exceeds_refundable"])
        // An amount TapPay cannot express (TWD in whole dollars) is refused, never sent as a refund of everything.
        #expect(Self.published(try harness.run(stage, .refund, "return-3", payment, amount: 150)))
        #expect(try harness.outcome(payment, "return-3") == "failed amount_not_representable")
        #expect(try harness.lifecycle(payment).map { "\($0.status.rawValue) \($0.capturedAmount) \($0.refundedAmount)" } == "partially_refunded 100000 30000")
        #expect(harness.ledger(id) == ["cap 100000", "refund 30000"])
    }

    /// A capture's and a refund's answers lost after the processor took them: each is reconciled by the connector's
    /// status query (OPP by the operation's merchantTransactionId, TapPay by the Record API), never sent again.
    @Test(arguments: ["opp", "tappay"])
    func lostCaptureAndRefundAnswersAreReconciledNotResent(connector: String) throws {
        let harness = try Harness()
        let stage = harness.operations()
        let opp = connector == "opp"
        let amount: Int64 = opp ? 1300 : 130_000
        let payment = try harness.authorized("\(connector)-ops", amount: amount, currency: opp ? "GBP" : "TWD",
                                             data: opp ? ConnectorEndToEndTests.oppData(amount) : ConnectorEndToEndTests.tapPayData())
        let id = try harness.processorId(payment)
        let (capture, refund) = opp ? ("CP", "RF") : ("cap", "refund")

        harness.simulator.holds.hold(.init(requestType: capture, orderReferencePrefix: "E2E-\(amount)", loseProcessed: true))
        let lost = try harness.run(stage, .capture, "ship", payment)
        #expect(ConnectorEndToEndTests.transientCode(lost) == "reconciliation_pending", "\(lost)")
        #expect(try harness.outcome(payment, "ship") == "requested")
        // Before its reconciliation time nothing is queried or sent.
        #expect(ConnectorEndToEndTests.transientCode(try harness.run(stage, .capture, "ship", payment)) == "attempt_open")
        try harness.ageAttempts(payment)
        #expect(Self.published(try harness.run(stage, .capture, "ship", payment)))
        #expect(try harness.outcome(payment, "ship") == "succeeded")

        let part: Int64 = opp ? 400 : 40_000
        harness.simulator.holds.hold(.init(requestType: refund, orderReferencePrefix: "E2E-\(amount)", loseProcessed: true))
        #expect(ConnectorEndToEndTests.transientCode(try harness.run(stage, .refund, "return", payment, amount: part)) == "reconciliation_pending")
        try harness.ageAttempts(payment)
        #expect(Self.published(try harness.run(stage, .refund, "return", payment, amount: part)))
        #expect(try harness.outcome(payment, "return") == "succeeded")
        #expect(try harness.lifecycle(payment).map { "\($0.status.rawValue) \($0.refundedAmount)" } == "partially_refunded \(part)")
        #expect(harness.ledger(id) == ["\(capture) \(amount)", "\(refund) \(part)"])
        // The operations' attempts: one request each, reconciled by one query each.
        let database = try harness.authorize.database()
        defer { database.close() }
        let attempts = try database.query(
            """
            SELECT string_agg(a.request_type || ':' || a.state || ':' || coalesce(a.outcome, ''), ',' ORDER BY a.id) AS attempts
            FROM operation_attempts a JOIN payment_operations o ON o.id = a.operation_id WHERE o.payment_id = $1
            """, [payment.paymentId]).first?.decode("attempts", as: String?.self)
        #expect(attempts == "CAPTURE:completed:succeeded,QUERY:completed:took_effect,REFUND:completed:succeeded,QUERY:completed:took_effect")
    }

    /// Issue 40, defect 1: a capture lost before OPP processed it. The query by the operation's merchantTransactionId
    /// answers "not found" as OPP does (HTTP 404, `700.400.580`): the capture is sent again, once, and succeeds.
    @Test func oppCaptureLostBeforeProcessingIsSentAgainOnce() throws {
        let harness = try Harness()
        let stage = harness.operations()
        let payment = try harness.authorized("opp-ops", amount: 1700, currency: "GBP", data: ConnectorEndToEndTests.oppData(1700))
        let id = try harness.processorId(payment)
        let lose = harness.simulator.holds.hold(.init(requestType: "CP", orderReferencePrefix: "E2E-1700", loseUnprocessed: true))
        #expect(ConnectorEndToEndTests.transientCode(try harness.run(stage, .capture, "ship", payment)) == "reconciliation_pending")
        harness.simulator.holds.release(lose)
        #expect(harness.ledger(id).isEmpty)
        var outcome: Result<StageOutcome, StageFailure> = .success(.completed)
        for _ in 0..<3 where !Self.published(outcome) {
            try harness.ageAttempts(payment)
            outcome = try harness.run(stage, .capture, "ship", payment)
        }
        #expect(Self.published(outcome), "\(outcome)")
        #expect(try harness.outcome(payment, "ship") == "succeeded")
        #expect(harness.ledger(id) == ["CP 1700"])
        #expect(try harness.lifecycle(payment).map { "\($0.status.rawValue) \($0.capturedAmount)" } == "captured 1700")
    }

    /// The Trust Payments settlement poll never selects another connector's captured payments (their settlement is
    /// learnt when a refund needs it): they would otherwise fill its 500 every round.
    @Test func theSettlementPollLeavesOtherConnectorsPaymentsAlone() throws {
        let harness = try Harness()
        let opp = try harness.base.prepared("opp-m", amount: 1500, currency: "GBP", data: ConnectorEndToEndTests.oppData(1500))
        #expect(try harness.base.process(harness.base.stage(), opp) == .success(.handOff(to: .notify, opp)))
        let database = try harness.authorize.database()
        defer { database.close() }
        try database.query("UPDATE payments SET updated_at = clock_timestamp() - interval '2 days' WHERE id = $1", [opp.paymentId])
        #expect(try harness.lifecycle(opp)?.status == .captured)
        let due = try OperationsUpkeepRound(stage: OperationsStage(directory: MerchantDirectory(store: MerchantStore(vault: harness.authorize.vault), ttl: 0),
                                                                   client: TrustPaymentsClient(transport: .init(deployment: .sandbox))),
                                            settlementPoll: 3600).settlementDue(database: database)
        #expect(due["opp-m"] == nil)
        // A Trust Payments merchant's aged captured payment is selected by the same query.
        try harness.authorize.applyMerchant("tp-m", gateway: AuthorizeHarness.gateway(mode: "merchant-decrypts"), identity: true)
        try database.query("UPDATE payments SET merchant_id = 'tp-m' WHERE id = $1", [opp.paymentId])
        #expect(try OperationsUpkeepRound(stage: OperationsStage(directory: MerchantDirectory(store: MerchantStore(vault: harness.authorize.vault), ttl: 0),
                                                                 client: TrustPaymentsClient(transport: .init(deployment: .sandbox))),
                                          settlementPoll: 3600)
            .settlementDue(database: database)["tp-m"] == [opp.paymentId])
    }

    /// A lost refund answer the query does not show (the refund was dropped before processing) goes to review: never
    /// resent, and the payment takes no other operation meanwhile.
    @Test func aLostRefundTheQueryDoesNotShowGoesToReview() throws {
        let harness = try Harness()
        let stage = harness.operations()
        let payment = try harness.authorized("opp-ops", amount: 1400, currency: "GBP", data: ConnectorEndToEndTests.oppData(1400))
        #expect(Self.published(try harness.run(stage, .capture, "ship", payment)))
        harness.simulator.holds.hold(.init(requestType: "RF", orderReferencePrefix: "E2E-1400", loseUnprocessed: true))
        #expect(ConnectorEndToEndTests.transientCode(try harness.run(stage, .refund, "return", payment, amount: 500)) == "reconciliation_pending")
        try harness.ageAttempts(payment)
        #expect(try harness.run(stage, .refund, "return", payment, amount: 500)
            == .success(.settled(note: "under_review", reason: "operation return waits for review; nothing was sent")))
        #expect(try harness.outcome(payment, "return") == "needs_review refund_outcome_unknown")
        #expect(Self.published(try harness.run(stage, .refund, "return-2", payment, amount: 100)))
        #expect(try harness.outcome(payment, "return-2") == "failed operation_under_review")
        #expect(harness.ledger(try harness.processorId(payment)) == ["CP 1400"])
    }
}
}
