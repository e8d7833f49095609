import Foundation
import PaymentStages
import Pipeline
import Testing

extension Integration {
/// An operation whose merchant no longer has a gateway (its document re-applied without the `gateway` section, which
/// `paypipe merchant apply` accepts: PayPipe then decrypts and nothing reaches a gateway) is refused
/// `gateway_not_configured` in the prepare: recorded failed, reported to the merchant through notify, the payment's
/// money lifecycle untouched and nothing sent to any gateway; in a batch, each message comes to what it came to alone.
@Suite struct OperationGatewayNotConfiguredTests {
    /// The merchant's document applied again without its gateway section.
    static func unconfigure(_ merchantId: String, _ harness: OperationsStageTests.Harness) throws {
        try harness.authorize.applyMerchant(merchantId, gateway: nil, identity: true)
    }

    static func lifecycle(_ payment: UUID, _ harness: OperationsStageTests.Harness) throws -> String? {
        try harness.lifecycle(payment).map { "\($0.status.rawValue) \($0.capturedAmount) \($0.refundedAmount)" }
    }

    static func row(_ operationId: String, merchantId: String = OperationsStageTests.merchantId, _ harness: OperationsStageTests.Harness) throws -> String? {
        try harness.operation(operationId, merchantId: merchantId).map {
            "\($0.state.rawValue) \($0.errorCode ?? "-") \($0.paymentId.map(\.paymentIDText) ?? "-")"
        }
    }

    /// A capture and a void of manual authorisations and a refund of an automatic one: each recorded failed
    /// `gateway_not_configured` against its payment, its operation event handed to notify, the lifecycle unchanged,
    /// nothing sent; a redelivery reports the recorded refusal again and sends nothing.
    @Test func anOperationOfAMerchantWithoutAGatewayIsRefusedAndReported() throws {
        let harness = try OperationsStageTests.Harness(settleDelay: 60)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let captured = try harness.authorizedPayment(amount: 1000, mode: .manual)
        let voided = try harness.authorizedPayment(amount: 700, mode: .manual)
        let refunded = try harness.authorizedPayment(amount: 500, mode: .automatic)
        let before = try [captured, voided, refunded].map { try Self.lifecycle($0, harness) }
        #expect(before == ["authorized 0 0", "authorized 0 0", "captured 500 0"])
        try Self.unconfigure(OperationsStageTests.merchantId, harness)

        let deliveries = [
            harness.delivery(.capture, "nc-cap", payment: captured, amount: 600),
            harness.delivery(.void, "nc-void", payment: voided),
            harness.delivery(.refund, "nc-ref", payment: refunded, amount: 200),
        ]
        for (delivery, (operationId, payment)) in zip(deliveries, [("nc-cap", captured), ("nc-void", voided), ("nc-ref", refunded)]) {
            for round in ["first", "redelivered"] {
                guard case .success(.publish(let handOffs)) = try harness.run(stage, delivery) else {
                    throw TestFailure("\(operationId) (\(round)) not reported")
                }
                #expect(handOffs.count == 1)
                #expect(handOffs.first?.rendered.routingKey == "notify")
                #expect(handOffs.first.map { OperationEventMessage.operation(in: $0.rendered.body) } == (try harness.operation(operationId))?.id)
            }
            #expect(try Self.row(operationId, harness) == "failed gateway_not_configured \(payment.paymentIDText)")
        }
        #expect(try [captured, voided, refunded].map { try Self.lifecycle($0, harness) } == before, "the money lifecycles are unchanged")
        #expect(harness.simulator.ledger.operations.isEmpty, "nothing was sent to the gateway")
    }

    /// In one batch, a refused operation of a merchant without a gateway between ordinary captures of two configured
    /// merchants (one wave), then its redelivery and a capture of another payment of the configured merchant (a later
    /// wave): each message comes to what it came to one at a time, the configured merchants' captures sent once each.
    @Test func aRefusalBetweenOrdinaryOperationsComesToWhatItCameToAlone() throws {
        let harness = try OperationsStageTests.Harness(settleDelay: 60, otherMerchants: 2)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let merchants = [OperationsStageTests.merchantId] + (1...2).map { "\(OperationsStageTests.merchantId)-\($0)" }
        try Self.unconfigure(merchants[1], harness)
        let database = try harness.authorize.database()
        defer { database.close() }
        func scenario(_ tag: String) throws -> (deliveries: [InboundMessage], payments: [UUID]) {
            // Authorised at the simulator directly (``OperationsStageTests/Harness/authorizedPayment``), as while the
            // merchant still had its gateway.
            let payments = try [merchants[0], merchants[1], merchants[2], merchants[0]].map {
                try harness.authorizedPayment(amount: 1000, mode: .manual, merchantId: $0)
            }
            let deliveries = [
                harness.delivery(.capture, "cap0-\(tag)", payment: payments[0], amount: 600, merchantId: merchants[0]),
                harness.delivery(.capture, "nc-\(tag)", payment: payments[1], amount: 600, merchantId: merchants[1]),
                harness.delivery(.capture, "cap2-\(tag)", payment: payments[2], amount: 600, merchantId: merchants[2]),
                harness.delivery(.capture, "nc-\(tag)", payment: payments[1], amount: 600, merchantId: merchants[1]),
                harness.delivery(.capture, "cap3-\(tag)", payment: payments[3], amount: 400, merchantId: merchants[0]),
            ]
            return (deliveries, payments)
        }
        let ((batched, inBatch, sentInBatch), (single, oneByOne, sentOneByOne)) = try OperationRecordBatchTests.batchAndOneByOne(
            scenario, stage: stage, harness: harness, database: database)
        #expect(inBatch == oneByOne)
        #expect(inBatch == ["publish 1", "publish 1", "publish 1", "publish 1", "publish 1"])
        #expect(sentInBatch == 3 && sentOneByOne == 3, "the configured merchants' three captures, once each; nothing for the refused one")
        for (batch, one) in zip(batched.payments, single.payments) {
            #expect(try Self.lifecycle(batch, harness) == Self.lifecycle(one, harness))
        }
        #expect(try batched.payments.map { try Self.lifecycle($0, harness) } == ["captured 600 0", "authorized 0 0", "captured 600 0", "captured 400 0"])
        for (id, merchant) in [("cap0", 0), ("nc", 1), ("cap2", 2), ("cap3", 0)] {
            let shape = { (tag: String) in try harness.operation("\(id)-\(tag)", merchantId: merchants[merchant]).map { "\($0.state.rawValue) \($0.errorCode ?? "-")" } }
            #expect(try shape("b") == shape("s"))
        }
        #expect(try Self.row("nc-b", merchantId: merchants[1], harness) == "failed gateway_not_configured \(batched.payments[1].paymentIDText)")
        #expect(try harness.operation("cap0-b", merchantId: merchants[0])?.state == .succeeded)
    }

    /// The refusals of a wave are recorded set-based, with the round's other writes: a round of three refused captures
    /// (three merchants without a gateway) costs the statements of a round of one plus each extra operation's prepare
    /// (its merchant's entry). Each is recorded failed `gateway_not_configured` and reported; nothing is sent.
    @Test func theRefusalsOfARoundAreRecordedInAFewStatements() throws {
        let harness = try OperationsStageTests.Harness(settleDelay: 60, otherMerchants: 3)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let merchants = [OperationsStageTests.merchantId] + (1...3).map { "\(OperationsStageTests.merchantId)-\($0)" }
        for merchant in merchants { try Self.unconfigure(merchant, harness) }
        let payments = try merchants.map { try harness.authorizedPayment(amount: 1000, mode: .manual, merchantId: $0) }
        let one = try OperationRecordBatchTests.round([(merchants[0], payments[0], "nc-0")], stage: stage, harness: harness)
        let three = try OperationRecordBatchTests.round((1...3).map { (merchants[$0], payments[$0], "nc-\($0)") }, stage: stage, harness: harness)
        print("operations statements, gateway_not_configured: round of 1: \(one.count.statements), round of 3: \(three.count.statements)")
        for result in one.results + three.results {
            #expect(OperationRecordBatchTests.outcome(result) == "publish 1")
        }
        for (index, merchant) in merchants.enumerated() {
            #expect(try Self.row("nc-\(index)", merchantId: merchant, harness) == "failed gateway_not_configured \(payments[index].paymentIDText)")
            #expect(try Self.lifecycle(payments[index], harness) == "authorized 0 0")
        }
        #expect(harness.simulator.ledger.operations.isEmpty)
        #expect(three.count.perMessageLocks == 0)
        // Refused one at a time, each refusal locked, read, wrote and reported on its own (and this fails).
        #expect(three.count.statements - one.count.statements <= 2 * OperationRecordBatchTests.preparePerOperation)
    }
}
}
