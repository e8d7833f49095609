import AMQP
import Foundation
import JSON
@testable import PaymentStages
import Pipeline
import Postgres
import Testing

extension Integration {
/// A finished operation's event through the notify stage: a signed webhook to the merchant, the event on
/// `paypipe.results`, the attempt recorded; a redelivery publishes the event again and never sends a second webhook.
/// And `paypipe payment void` publishes the job to `paypipe.operations`, calling no gateway.
@Suite struct OperationEventTests {
    static func voidedPayment(_ harness: NotifyHarness) throws -> (payment: StageMessage, operation: OperationStore.Operation) {
        let payment = try harness.insertPayment()
        let database = try harness.database()
        defer { database.close() }
        try database.query("UPDATE payments SET lifecycle = 'captured', authorized_minor = 1050, captured_minor = 1050, refunded_minor = 0 WHERE id = $1",
                           [payment.paymentId])
        let steps = OperationSteps()
        let request = OperationRequest(kind: .void, operationId: "cancel-9", merchantId: payment.merchantId, payment: .jobId(payment.jobId), amount: nil)
        guard case .send(let operation, let attempt, _) = try database.transaction({
            try steps.plan(request, transport: .webservices, timing: .init(sendWindow: 5, settleSeconds: 5), on: $0)
        }) else { throw TestFailure("void not planned") }
        guard case .finished(let finished) = try database.transaction({
            try steps.settle(operation, attempt: attempt, answer: .confirmed(transactionReference: nil), actor: "test", on: $0)
        }) else { throw TestFailure("void not finished") }
        return (payment, finished)
    }

    /// A notify harness whose merchant's webhook answers `status`, a voided payment's operation, and a database connection.
    static func withVoidedPayment(
        answering status: Int,
        _ body: (NotifyHarness, WebhookTestReceiver, StageMessage, OperationStore.Operation, PostgresConnection) throws -> Void
    ) throws {
        let harness = try NotifyHarness()
        defer { harness.tearDown() }
        let receiver = try harness.appliedReceiver(answering: status)
        defer { receiver.stop() }
        let (payment, operation) = try voidedPayment(harness)
        let database = try harness.database()
        defer { database.close() }
        try body(harness, receiver, payment, operation, database)
    }

    /// Whether notify settled the operation's webhook (`notified_at`).
    static func notified(_ operation: Int64, _ database: PostgresConnection) throws -> Bool {
        try database.query("SELECT notified_at FROM payment_operations WHERE id = $1", [operation])[0].decode("notified_at", as: Date?.self) != nil
    }

    static func notifyMessage(_ stage: NotifyStage, _ handOff: AMQPOutboundMessage) throws -> NotifyMessage {
        #expect(handOff.exchange == PipelineTopology.stagesExchange && handOff.routingKey == "notify")
        return try stage.decode(InboundMessage(body: handOff.body, to: .notify))
    }

    static func notifyMessage(_ stage: NotifyStage, _ handOff: OutboundMessage) throws -> NotifyMessage {
        try notifyMessage(stage, handOff.rendered)
    }

    /// The operation's hand-off to notify, as the operations stage sends it, decoded by `stage`.
    static func notifyMessage(stage: NotifyStage, payment: StageMessage, operation: OperationStore.Operation) throws -> NotifyMessage {
        try notifyMessage(stage, .handOff(HandOffMessage(OperationEventMessage(payment: payment, operationRowId: operation.id))))
    }

    @Test func anOperationEventIsASignedWebhookAndAResult() throws {
        try Self.withVoidedPayment(answering: 204) { harness, receiver, payment, operation, database in
            let stage = harness.makeStage()
            let message = try Self.notifyMessage(stage: stage, payment: payment, operation: operation)
            #expect(message.operation == operation.id)
            guard case .success(.publish(let published)) = stage.process([message], database: database)[0] else { throw TestFailure("not published") }
            let requests = receiver.requests
            #expect(requests.count == 1 && requests.allSatisfy(\.verified))
            let event = try JSONValue.parse(requests[0].body)
            #expect(event["type"] == "payment.voided")
            #expect(event["data"]?["operationId"] == "cancel-9" && event["data"]?["requested"] == "void")
            #expect(event["data"]?["amount"] == ["value": 1050, "currency": "GBP"])
            #expect(event["data"]?["lifecycle"]?["status"] == "voided")
            #expect(published.map(\.rendered.routingKey) == ["payment.voided"] && published[0].rendered.body == requests[0].body)
            // Correlated by the operation's id; the headers name the payment's job (docs/job-contract.md "Receiving results").
            #expect(published[0].rendered.properties.correlationId == "cancel-9")
            #expect(published[0].rendered.properties.headers.compactMapValues(\.stringValue) == [
                "merchantId": payment.merchantId, "jobId": payment.jobId, "paymentId": payment.paymentId.paymentIDText,
                "operationId": "cancel-9", "type": "payment.voided",
            ])
            #expect(try harness.deliveries(payment.paymentId).map(\.eventType) == ["payment.voided"])
            // Again: the result is published again, the webhook is not sent again.
            guard case .success(.publish(let again)) = stage.process([message], database: database)[0] else { throw TestFailure("not re-published") }
            #expect(again.first?.rendered.body == published[0].rendered.body)
            #expect(receiver.requests.count == 1)
            // A payment hand-off in the same batch still takes the payment path.
            let mixed = stage.process([message, try Self.notifyMessage(stage, WebhookReplay().handOff(payment))], database: database)
            #expect(mixed.count == 2)
            guard case .success(.publish(let results)) = mixed[1] else { throw TestFailure("payment result not published") }
            #expect(results.first?.rendered.routingKey == "payment.authorized")
        }
    }

    /// Notify reads an operation's event in one statement: the operation (decoded by OperationStore), its payment and
    /// lifecycle (decoded by PaymentStore, the payment's columns prefixed), whether its webhook was attempted or settled.
    @Test func anOperationsEventIsReadInOneStatement() throws {
        try Self.withVoidedPayment(answering: 204) { harness, receiver, payment, operation, database in
            let reader = NotifyEventReader(directory: MerchantDirectory(store: MerchantStore(vault: harness.vault), ttl: 0))
            let first = try StatementCounter.counting(on: database) { try reader.read([.operation(operation.id), .operation(operation.id + 1_000_000)], on: database) }
            #expect(first.statements == 2, "one statement per operation, an unknown one included")
            #expect(first.value[.operation(operation.id + 1_000_000)] == nil, "an unknown operation is absent")
            let read = try #require(try first.value[.operation(operation.id)]?.get())
            #expect(read.payment.id == payment.paymentId && read.payment.jobId == payment.jobId && read.merchantId == payment.merchantId)
            #expect(read.payment.status == .authorized && !read.settled && !read.attempted && read.event?.type == "payment.voided")
            #expect(read.event?.subject == .operation(operation.id) && read.event?.paymentId == payment.paymentId)
            let body = try JSONValue.parse(try #require(read.event).body)
            #expect(body["data"]?["operationId"] == "cancel-9" && body["data"]?["paymentId"] == .string(payment.paymentId.paymentIDText))
            // The lifecycle as PaymentStore's own read of it gives it.
            let lifecycle = try #require(try PaymentStore().money(payment.paymentId, forUpdate: false, on: database)?.lifecycle)
            #expect(lifecycle.status == .voided && body["data"]?["lifecycle"]?["status"] == "voided")
            #expect(body["data"]?["lifecycle"]?["authorized"]?["value"] == .integer(lifecycle.authorizedAmount))
            #expect(body["data"]?["lifecycle"]?["captured"]?["value"] == .integer(lifecycle.capturedAmount))

            let message = try Self.notifyMessage(stage: harness.makeStage(), payment: payment, operation: operation)
            _ = harness.makeStage().process([message], database: database)
            #expect(receiver.requests.count == 1)
            let again = try #require(try reader.read([.operation(operation.id)], on: database)[.operation(operation.id)]?.get())
            #expect(again.settled && again.attempted, "the delivered webhook is settled (notified_at) and its attempt recorded")
        }
    }

    /// An operation's event takes the payment results' one delivery path: a 410 disables the merchant's webhook and is
    /// recorded `disabled`.
    @Test func anOperationEventAnswered410DisablesTheMerchantWebhook() throws {
        try Self.withVoidedPayment(answering: 410) { harness, receiver, payment, operation, database in
            let stage = harness.makeStage()
            let message = try Self.notifyMessage(stage: stage, payment: payment, operation: operation)
            guard case .success(.publish(let published)) = stage.process([message], database: database)[0] else { throw TestFailure("not settled") }
            #expect(published.map(\.rendered.routingKey) == ["payment.voided"])
            #expect(receiver.requests.count == 1)
            let attempts = try harness.deliveries(payment.paymentId)
            #expect(attempts.map(\.outcome) == ["disabled"])
            #expect(attempts.map(\.error) == ["endpoint_gone"])
            #expect(try harness.merchant()?.config.webhook?.enabled == false, "the 410 disabled the merchant's webhook")
            #expect(try Self.notified(operation.id, database))
        }
    }

    /// Endpoint health applies to operation events too: to an endpoint disabled for failing, the event is held (no
    /// request, a `held` attempt, the operation not notified) and `paypipe webhooks endpoints enable` releases it.
    @Test func anOperationEventToADisabledEndpointIsHeldAndReleasedByTheCLI() throws {
        try Self.withVoidedPayment(answering: 204) { harness, receiver, payment, operation, database in
            try database.query(
                """
                INSERT INTO webhook_endpoints (merchant_id, url, failing_since, last_failure_at, last_error, disabled_at, disabled_reason)
                VALUES ('m-notify', $1, now() - interval '6 days', now(), 'http_503', now(), 'failing_continuously')
                """, [receiver.url])
            let stage = harness.makeStage()
            let message = try Self.notifyMessage(stage: stage, payment: payment, operation: operation)
            _ = stage.process([message], database: database)
            #expect(receiver.requests.isEmpty, "nothing is sent to a disabled endpoint")
            #expect(try harness.deliveries(payment.paymentId).map(\.outcome) == ["held"])
            #expect(try !Self.notified(operation.id, database))

            _ = try harness.drain(Stage.notify.queueName)
            // The payment's row keeps its job's trace (migration 15): the released event is sent in it.
            let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            try database.query("UPDATE payments SET trace_parent = $2, trace_state = 'vendor=abc' WHERE id = $1", [payment.paymentId, traceparent])
            let enabled = try harness.paypipe(["webhooks", "endpoints", "enable", "m-notify"])
            #expect(enabled.status == 0, "\(enabled.text)")
            #expect(enabled.text.contains("re-delivering 1 held delivery"))
            let released = try harness.drain(Stage.notify.queueName)
            #expect(released.count == 1)
            #expect(released.first?.properties.headers["traceparent"]?.stringValue == traceparent)
            #expect(released.first?.properties.headers["tracestate"]?.stringValue == "vendor=abc")
            let again = try stage.decode(InboundMessage(body: try #require(released.first).body, to: .notify))
            #expect(again.operation == operation.id)
            _ = stage.process([again], database: database)
            #expect(receiver.requests.count == 1 && receiver.requests.allSatisfy(\.verified))
            #expect(try harness.deliveries(payment.paymentId).map(\.outcome) == ["held", "delivered"])
            #expect(try Self.notified(operation.id, database))
        }
    }

    @Test func theCLIPublishesTheOperationJobAndCallsNoGateway() throws {
        let harness = try NotifyHarness()
        defer { harness.tearDown() }
        _ = try harness.appliedReceiver(answering: 204)
        let payment = try harness.insertPayment()
        let connection = try harness.amqp()
        defer { connection.close() }
        _ = try connection.drain(Stage.operations.queueName)
        let output = try harness.paypipe(["payment", "void", payment.paymentId.paymentIDText, "--operation-id", "cli-void-1"])
        #expect(output.status == 0, "\(output.text)")
        let jobs = try connection.drain(Stage.operations.queueName)
        #expect(jobs.count == 1)
        #expect(jobs.first?.routingKey == "payment.void.requested")
        let body = try JSONValue.parse(jobs.first?.body ?? [])
        #expect(body == ["operationId": "cli-void-1", "merchantId": "m-notify", "paymentId": .string(payment.paymentId.paymentIDText)])
        // A void with an amount is refused before anything is published.
        let refused = try harness.paypipe(["payment", "void", payment.paymentId.paymentIDText, "--operation-id", "cli-void-2", "--amount", "5"])
        #expect(refused.status != 0)
        #expect(try connection.drain(Stage.operations.queueName).isEmpty)
        let shown = try harness.paypipe(["payment", "show", payment.paymentId.paymentIDText])
        #expect(shown.text.contains("\"operations\""))
    }
}
}
