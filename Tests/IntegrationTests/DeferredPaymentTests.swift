import Foundation
import HTTP
import JSON
@testable import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// TapPay deferred payments on the real database and the simulator's TapPay face: a job with `amountPending` waits in
/// `awaiting_amount`; `payment.complete.requested` hands it back to authorize with the amount, and its Pay by Prime
/// goes through submit exactly once; without a completion it fails `prime_expired` with no call. Days pass by the
/// injected batch clock, never by sleeping.
@Suite struct DeferredPaymentTests {
    static let day: TimeInterval = 86_400

    final class Harness {
        let base: ConnectorEndToEndTests.Harness
        let operations: OperationsStage
        /// The stage with its upkeep round (the deferred series' gauge), as the worker runs it.
        let worker: OperationsWorker

        init() throws {
            base = try ConnectorEndToEndTests.Harness()
            operations = OperationsStage(
                directory: MerchantDirectory(store: MerchantStore(vault: base.authorize.vault), ttl: 0),
                client: TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 0.5, totalTimeout: 1), transport: .init(deployment: .sandbox),
                                            webservices: WebservicesTransport(connectTimeout: 0.5, totalTimeout: 1)),
                sendWindow: 0.5, reconcileGrace: 0.2)
            worker = OperationsWorker(operations, settlementPoll: 6 * 3600)
        }

        /// A deferred TapPay payment of at most `maximum` minor units whose prime was obtained `age` seconds ago, run
        /// through the real authorize stage: it must wait.
        func waiting(maximum: Int64, primeAge: TimeInterval = 0, merchant: String = "tappay-m") throws -> StageMessage {
            let published = Date().addingTimeInterval(-primeAge)
            let prime = "sim_deferred_\(Int64(published.timeIntervalSince1970 * 1000))_\(UUID().uuidString.prefix(8))"
            let data = StoredPaymentData.tapPay(prime: prime, kind: .deferred, publishedAt: published, billingContact: nil, shippingContact: nil)
            let (message, outcome) = try base.authorizing(merchant, amount: maximum, currency: "TWD", data: data)
            #expect(outcome == .success(.handOff(to: .notify, message)), "parked, and handed to notify (payment.awaiting_amount)")
            #expect(try base.status(message) == .awaitingAmount)
            return message
        }

        func complete(_ message: StageMessage, amount: Int64, at clock: BatchClock) throws -> Result<StageOutcome, StageFailure> {
            let database = try base.authorize.database()
            defer { database.close() }
            let request = CompletionRequest(operationId: "complete-\(UUID().uuidString.prefix(8))", merchantId: message.merchantId,
                                            paymentId: message.paymentId, amount: amount)
            return worker.completion.complete([request], database: database, clock: clock)[0]
        }

        func authorize(_ message: StageMessage) throws -> Result<StageOutcome, StageFailure> {
            let database = try base.authorize.database()
            defer { database.close() }
            return base.authorize.makeStage().process([message], database: database)[0]
        }

        /// Requests the simulator's TapPay face received for the payment (its references start with the order reference).
        func payByPrimes(_ message: StageMessage) throws -> Int {
            base.auths(try #require(try base.authorize.payment(message.paymentId)?.orderReference))
        }

        func databaseClock(plus seconds: TimeInterval) throws -> BatchClock {
            let database = try base.authorize.database()
            defer { database.close() }
            let now = try BatchClock.read(database)
            return BatchClock(database: now.database.addingTimeInterval(seconds), worker: now.worker.addingTimeInterval(seconds))
        }
    }

    @Test func aDeferredPaymentIsCompletedADayLaterAndSentOnce() throws {
        let harness = try Harness()
        let message = try harness.waiting(maximum: 500_000, primeAge: Self.day)
        // A redelivery of the authorize hand-off changes nothing: still waiting, nothing sent.
        #expect(try harness.authorize(message) == .success(.handOff(to: .notify, message)))
        #expect(try harness.payByPrimes(message) == 0)
        let clock = try harness.databaseClock(plus: Self.day)
        // Above the job's amount: refused, the payment still waits.
        guard case .failure(.unattributable("amount_exceeds_maximum", _)) = try harness.complete(message, amount: 500_100, at: clock) else {
            Issue.record("a completion above the job's amount was not refused")
            return
        }
        let registry = MetricsRegistry()
        harness.worker.attach(metrics: registry)
        #expect(try harness.complete(message, amount: 120_000, at: clock) == .success(.handOff(to: .authorize, message)))
        #expect(try MetricsScrape(registry.render()).value("paypipe_deferred_payments_total", ["outcome": "completed"]) == 1)
        let completed = try #require(try harness.base.authorize.payment(message.paymentId))
        #expect(completed.status == .decrypted && completed.amountMinor == 120_000)
        // The same completion again, before authorize ran (a redelivery): handed on again, nothing written.
        #expect(try harness.complete(message, amount: 120_000, at: clock) == .success(.handOff(to: .authorize, message)))
        #expect(try harness.authorize(message) == .success(.handOff(to: .submit, message)))
        #expect(try harness.base.process(harness.base.stage(), message) == .success(.handOff(to: .notify, message)))
        #expect(try harness.base.status(message) == .authorized)
        #expect(try harness.payByPrimes(message) == 1)
        // The processor charged the completion's amount (TWD 1200), not the job's.
        let reference = try #require(try harness.base.authorize.payment(message.paymentId)?.orderReference)
        let charged = harness.base.simulator.ledger.records(matching: []).filter { $0["orderreference"]?.stringValue?.hasPrefix(reference + ".") == true }
        #expect(charged.count == 1 && charged.first?["baseamount"]?.stringValue == "120000")
        // Later completions: the same amount is a repeat, another is refused; neither sends anything.
        #expect(try harness.complete(message, amount: 120_000, at: clock) == .success(.settled(note: "already_completed", reason: "the payment was completed with this amount before")))
        guard case .failure(.unattributable("payment_not_awaiting_amount", _)) = try harness.complete(message, amount: 130_000, at: clock) else {
            Issue.record("a second completion with another amount was not refused")
            return
        }
        #expect(try harness.payByPrimes(message) == 1)
    }

    /// The merchant hears when a deferred payment starts waiting: authorize hands it to notify, which sends
    /// `payment.awaiting_amount` (signed webhook and `paypipe.results`, status `awaiting_amount`, the job's amount: the
    /// most a completion may charge) once and marks it done; a redelivered hand-off sends no second webhook. Once
    /// completed, its outcome is told like any payment's, with the completion's amount, under an id of its own.
    @Test func theMerchantIsToldWhenADeferredPaymentStartsWaiting() throws {
        let harness = try Harness()
        let receiver = try WebhookTestReceiver(secret: NotifyHarness.secret)
        defer { receiver.stop() }
        try harness.base.authorize.applyMerchant("tappay-hooked", gateway: harness.base.tapPayGateway, identity: false,
                                                 webhook: ["url": receiver.url, "secret": NotifyHarness.secret])
        let message = try harness.waiting(maximum: 500_000, merchant: "tappay-hooked")
        let notify = NotifyStage(directory: MerchantDirectory(store: MerchantStore(vault: harness.base.authorize.vault), ttl: 0),
                                 urlGuard: WebhookURLGuard(allowPrivate: true), retrySchedule: .standard)
        let handOff = try notify.decode(InboundMessage(body: message.encoded(), to: .notify))
        let database = try harness.base.authorize.database()
        defer { database.close() }
        guard case .success(.publish(let published)) = notify.process([handOff], database: database)[0] else { throw TestFailure("not published") }
        #expect(receiver.requests.count == 1 && receiver.requests.allSatisfy(\.verified))
        let waiting = try JSONValue.parse(try #require(receiver.requests.first).body)
        #expect(waiting["type"] == "payment.awaiting_amount" && waiting["data"]?["status"] == "awaiting_amount")
        #expect(waiting["data"]?["amount"] == ["value": 500_000, "currency": "TWD"] && waiting["data"]?["paymentId"]?.stringValue == message.paymentId.paymentIDText)
        #expect(published.map(\.rendered.routingKey) == ["payment.awaiting_amount"] && published.first?.rendered.body == receiver.requests.first?.body)
        #expect(try harness.base.authorize.payment(message.paymentId).map { "\($0.status.rawValue) \($0.stage.rawValue)" } == "awaiting_amount done")
        // Redelivered (authorize's hand-off again): no second webhook; the payment still waits.
        #expect(try harness.authorize(message) == .success(.handOff(to: .notify, message)))
        _ = notify.process([handOff], database: database)
        #expect(receiver.requests.count == 1)
        #expect(try harness.base.status(message) == .awaitingAmount)
        #expect(try harness.payByPrimes(message) == 0)
        // Completed: the outcome is told as for any payment, with the completion's amount.
        #expect(try harness.complete(message, amount: 120_000, at: harness.databaseClock(plus: 60)) == .success(.handOff(to: .authorize, message)))
        #expect(try harness.authorize(message) == .success(.handOff(to: .submit, message)))
        #expect(try harness.base.process(harness.base.stage(), message) == .success(.handOff(to: .notify, message)))
        _ = notify.process([handOff], database: database)
        #expect(receiver.requests.count == 2)
        let authorized = try JSONValue.parse(try #require(receiver.requests.last).body)
        #expect(authorized["type"] == "payment.authorized" && authorized["data"]?["amount"] == ["value": 120_000, "currency": "TWD"])
        #expect(authorized["data"]?["id"] != waiting["data"]?["id"], "each event its own webhook-id")
        #expect(try harness.payByPrimes(message) == 1)
    }

    /// The completion hands the payment back to authorize in the job's trace, the one its row keeps, not in the
    /// operation's (the runtime keeps a hand-off's own trace: TraceContextTests).
    @Test func aCompletionContinuesTheJobsTrace() throws {
        let harness = try Harness()
        let message = try harness.waiting(maximum: 500_000)
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let database = try harness.base.authorize.database()
        defer { database.close() }
        try database.query("UPDATE payments SET trace_parent = $2, trace_state = 'vendor=abc' WHERE id = $1", [message.paymentId, traceparent])
        guard case .success(.handOff(let handOff)) = try harness.complete(message, amount: 120_000, at: harness.databaseClock(plus: 60)) else {
            Issue.record("the completion did not hand the payment on")
            return
        }
        #expect(handOff.stage == .authorize && handOff.message == message)
        #expect(handOff.trace?.traceparent == traceparent && handOff.trace?.state == "vendor=abc", "in the job's trace: \(String(describing: handOff.trace))")
    }

    /// The worker's handler (``OperationsWorker``) decodes `payment.complete.requested` as a completion and the rest
    /// as operations, and answers a mixed batch in its order: the completion decided by ``DeferredCompletion``, the
    /// operation by the stage. A completion that cannot be decoded is dead-lettered unread.
    @Test func theWorkerRoutesCompletionsApartFromOperations() throws {
        let harness = try Harness()
        let message = try harness.waiting(maximum: 500_000)
        let database = try harness.base.authorize.database()
        defer { database.close() }
        let completion = InboundMessage(job: JSONValue.object([
            ("operationId", .string("complete-routed")), ("merchantId", .string(message.merchantId)),
            ("paymentId", .string(message.paymentId.paymentIDText)), ("amount", .integer(120_000)),
        ]).serialized(), routingKey: CompletionRequest.routingKey)
        let capture = InboundMessage(job: JSONValue.object([
            ("operationId", .string("capture-routed")), ("merchantId", .string("no-such-merchant")), ("paymentId", .string(UUID().paymentIDText)),
        ]).serialized(), routingKey: OperationRequest.Kind.capture.routingKey)
        let batch = try [capture, completion].map { try harness.worker.decode($0) }
        guard case .operation(.request) = batch[0], case .completion(let request) = batch[1] else {
            Issue.record("decoded as \(batch)")
            return
        }
        #expect(request.amount == 120_000 && request.paymentId == message.paymentId)
        let results = harness.worker.process(batch, database: database)
        #expect(results.count == 2)
        guard case .failure(.unattributable("unknown_merchant", _)) = results[0] else {
            Issue.record("the operation of an unknown merchant was not refused by the stage: \(results[0])")
            return
        }
        #expect(results[1] == .success(.handOff(to: .authorize, message)))
        #expect(try harness.base.authorize.payment(message.paymentId)?.amountMinor == 120_000)
        do {
            _ = try harness.worker.decode(InboundMessage(job: Array(#"{"merchantId":"m1"}"#.utf8), routingKey: CompletionRequest.routingKey))
            Issue.record("a completion without an operationId was decoded")
        } catch {
            guard case .unattributable = error else {
                Issue.record("not dead-lettered unread: \(error)")
                return
            }
        }
    }

    @Test func aDeferredPaymentExpiresWithoutACall() throws {
        let harness = try Harness()
        let swept = try harness.waiting(maximum: 510_000)
        let completedLate = try harness.waiting(maximum: 520_000)
        let database = try harness.base.authorize.database()
        defer { database.close() }
        // The deferred series (docs/operations.md): two waiting, seen by the upkeep's gauge.
        let registry = MetricsRegistry()
        harness.worker.attach(metrics: registry)
        try harness.worker.upkeep(database: database, logger: Logger(component: "test", threshold: .error))
        #expect(try MetricsScrape(registry.render()).value("paypipe_payments_awaiting_amount") == 2)
        // 29 days on: nothing expires.
        #expect(try harness.worker.completion.expireDeferred(clock: harness.databaseClock(plus: 29 * Self.day), on: database).isEmpty)
        #expect(try harness.base.status(swept) == .awaitingAmount)
        // A completion after 30 days fails the payment instead of sending it.
        let late = try harness.databaseClock(plus: 30 * Self.day + 60)
        #expect(try harness.complete(completedLate, amount: 120_000, at: late) == .success(.handOff(to: .notify, completedLate)))
        // The reconciler's sweep fails the other one.
        #expect(try harness.worker.completion.expireDeferred(clock: late, on: database) == [swept])
        for message in [swept, completedLate] {
            let payment = try #require(try harness.base.authorize.payment(message.paymentId))
            #expect(payment.status == .failed && payment.errorCode == "prime_expired")
            #expect(try harness.payByPrimes(message) == 0)
        }
        #expect(harness.base.simulator.ledger.authCounts().isEmpty, "the simulator saw no Pay by Prime")
        // Nothing is left to sweep.
        #expect(try harness.worker.completion.expireDeferred(clock: late, on: database).isEmpty)
        try harness.worker.upkeep(database: database, logger: Logger(component: "test", threshold: .error))
        let scrape = try MetricsScrape(registry.render())
        #expect(scrape.value("paypipe_payments_awaiting_amount") == 0)
        #expect(scrape.value("paypipe_deferred_payments_total", ["outcome": "expired"]) == 2)
        #expect(scrape.value("paypipe_deferred_payments_total", ["outcome": "completed"]) == 0)
    }

    @Test func aLostAnswerOfTheCompletionIsReconciledWithOneCall() throws {
        let harness = try Harness()
        let message = try harness.waiting(maximum: 530_000, primeAge: Self.day)
        // 109 600 minor units (TWD 1096): the simulator records the charge and loses the answer.
        #expect(try harness.complete(message, amount: 109_600, at: try harness.databaseClock(plus: Self.day)) == .success(.handOff(to: .authorize, message)))
        #expect(try harness.authorize(message) == .success(.handOff(to: .submit, message)))
        let stage = harness.base.stage()
        #expect(ConnectorEndToEndTests.transientCode(try harness.base.process(stage, message)) == "gateway_outcome_uncertain")
        try harness.base.ageAttempts(message)
        #expect(try harness.base.process(stage, message) == .success(.handOff(to: .notify, message)))
        #expect(try harness.base.status(message) == .authorized)
        #expect(try harness.payByPrimes(message) == 1)
    }

    /// An ordinary prime keeps its 90 s: one published two minutes ago is refused without a call, as before.
    @Test func anOrdinaryPrimeKeepsItsNinetySeconds() throws {
        let harness = try Harness()
        let published = Date().addingTimeInterval(-120)
        let data = StoredPaymentData.tapPay(prime: "sim_\(Int64(published.timeIntervalSince1970 * 1000))_\(UUID().uuidString.prefix(8))",
                                            publishedAt: published, billingContact: nil, shippingContact: nil)
        let message = try harness.base.prepared("tappay-m", amount: 540_000, currency: "TWD", data: data)
        _ = try harness.base.process(harness.base.stage(), message)
        let payment = try #require(try harness.base.authorize.payment(message.paymentId))
        #expect(payment.status == .failed && payment.errorCode == "prime_expired")
        #expect(harness.base.simulator.ledger.authCounts().isEmpty)
    }
}
}
