import AMQP
import Foundation
import PaymentStages
import Pipeline
import Postgres
import Testing

extension Integration {
    /// The notify stage's set-based database work (one read of the batch in phase 1, one statement for the delivered
    /// answers in phase 3), called directly through `process` on batches that mix every branch: delivered, 500 (retry), 500 on the last attempt (exhausted), 410 (gone), already done, not
    /// terminal, a payment twice in the batch, an unknown payment.
    @Suite struct NotifyBulkTests {
        /// A fixed point in time, so events are identical byte for byte from run to run.
        static let at = Date(timeIntervalSince1970: 1_780_000_000.125)

        /// The role of one message in the mixed batch, and the payment it addresses.
        struct Case {
            enum Target { case ok, failing, merchantWebhook }
            let id = UUID()
            let status: PaymentStatus
            var stage = "notify"
            let target: Target
            var previousRetries = 0
            var withCard = false
            /// No row in `payments`.
            var unknown = false
        }

        /// Indices into ``mixedBatch(_:)``.
        enum Role: Int, CaseIterable {
            case retry, delivered, gone, alreadyDone, notTerminal, duplicate, deliveredLastTier, duplicateAgain, exhausted, unknown
        }

        /// One case per ``Role``, in that order (the duplicate twice). The retry comes first so that, one by one, its
        /// attempt would be recorded before the delivered ones.
        static func mixedBatch(maxRetries: Int) -> [Case] {
            let duplicate = Case(status: .authorized, target: .ok)
            return [
                Case(status: .authorized, target: .failing),
                Case(status: .authorized, target: .ok, withCard: true),
                Case(status: .failed, target: .merchantWebhook),
                Case(status: .declined, stage: "done", target: .ok),
                Case(status: .submitting, stage: "submit", target: .ok),
                duplicate,
                Case(status: .needsReview, target: .ok, previousRetries: 2),
                duplicate,
                Case(status: .declined, target: .failing, previousRetries: maxRetries),
                Case(status: .authorized, target: .ok, unknown: true),
            ]
        }

        /// Three endpoints: one answering 204, one 500, and the merchant's configured webhook answering 410.
        struct Endpoints {
            let ok: WebhookTestReceiver
            let failing: WebhookTestReceiver
            let gone: WebhookTestReceiver

            init() throws {
                ok = try WebhookTestReceiver(secret: NotifyHarness.secret)
                failing = try WebhookTestReceiver(secret: NotifyHarness.secret)
                failing.script([], then: 500)
                gone = try WebhookTestReceiver(secret: NotifyHarness.secret)
                gone.script([], then: 410)
            }

            func stop() { [ok, failing, gone].forEach { $0.stop() } }

            func url(_ target: Case.Target) -> String? {
                switch target {
                case .ok: ok.url
                case .failing: failing.url
                case .merchantWebhook: nil
                }
            }
        }

        /// Inserts the cases' payments (same ids, same timestamps in every database) and applies the merchant.
        func insert(_ cases: [Case], into harness: NotifyHarness, endpoints: Endpoints) throws {
            try harness.applyMerchant(webhookURL: endpoints.gone.url)
            let database = try harness.database()
            defer { database.close() }
            var inserted = Set<UUID>()
            for item in cases where !item.unknown && inserted.insert(item.id).inserted {
                let jobId = "job-\(item.id.uuidString.prefix(8))"
                try database.query(
                    """
                    INSERT INTO payments (id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency, status, stage,
                                          first_received_at, notify_url, metadata, created_at, updated_at)
                    VALUES ($1, 'm-notify', $2, $3, 'ORDER-1', 1050, 'GBP', $4, $5, $6, $7, '{"cart":"c-1"}'::jsonb, $6, $6)
                    """, [item.id, jobId, Array(jobId.utf8), item.status.rawValue, item.stage, Self.at, endpoints.url(item.target)])
                try database.query(
                    """
                    INSERT INTO payment_events (payment_id, at, from_status, to_status, stage, actor)
                    VALUES ($1, $2, 'prepared', $3, $4, 'test')
                    """, [item.id, Self.at.addingTimeInterval(1), item.status.rawValue, item.stage])
                try database.query(
                    """
                    INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, outcome, error_code, error_message,
                                                  transaction_reference, settle_status, masked_pan)
                    VALUES ($1, 'ORDER-1', 'AUTH', 'completed', 'authorized', '0', 'Ok', '1-2-346', '0', '411111######4242')
                    """, [item.id])
                if item.withCard {
                    try CardDataStore(vault: harness.vault).save(AuthorizeStageTests.stored(), for: item.id, on: database)
                }
            }
        }

        static func messages(_ cases: [Case]) -> [NotifyMessage] {
            cases.map { item in
                let message = StageMessage(paymentId: item.id, merchantId: "m-notify", jobId: "job-\(item.id.uuidString.prefix(8))")
                let inbound = InboundMessage(body: Array("{\"paymentId\":\"\(item.id.uuidString.lowercased())\"}".utf8), to: .notify,
                                             previousRetries: item.previousRetries)
                return NotifyMessage(message: message, inbound: inbound)
            }
        }

        /// Outcomes without what legitimately differs between two runs (the exhaustion event's own time).
        static func comparable(_ results: [Result<StageOutcome, StageFailure>]) -> [Result<StageOutcome, StageFailure>] {
            results.map { result in
                result.map { outcome in
                    guard case .publish(let messages) = outcome else { return outcome }
                    return .publish(messages.map { message in
                        // `webhook.exhausted` carries the wall-clock time of the exhaustion (and an id derived from it).
                        guard case .event(let exchange, let type, _, _, _, let mandatory, _, _, _) = message,
                              type == OperationalEvent.Kind.webhookExhausted.rawValue else { return message }
                        return .event(exchange: exchange, type: type, id: "", body: [], timestamp: Date(timeIntervalSince1970: 0), mandatory: mandatory)
                    })
                }
            }
        }

        /// What the batch left in the database, per payment in case order, without serial ids, wall-clock
        /// timestamps and latencies: the attempts in order, the payment's status and stage, whether a retry hold was
        /// stamped (`redriven_at` set: the fixtures leave it null), its audit trail; and whether the merchant's webhook is still enabled.
        struct Snapshot: Equatable {
            struct Attempt: Equatable {
                let eventId: String, eventType: String, url: String, attempt: Int, statusCode: Int?, error: String?, outcome: String
            }
            struct Payment: Equatable {
                let status: String?, stage: String?, held: Bool?, events: [String]
            }
            var attempts: [[Attempt]] = []
            var payments: [Payment] = []
            var merchantWebhookEnabled: Bool?
        }

        static func snapshot(_ cases: [Case], harness: NotifyHarness) throws -> Snapshot {
            let database = try harness.database()
            defer { database.close() }
            var snapshot = Snapshot()
            for item in cases {
                snapshot.attempts.append(try harness.deliveries(item.id).map {
                    Snapshot.Attempt(eventId: $0.eventId, eventType: $0.eventType, url: $0.url, attempt: $0.attempt,
                                     statusCode: $0.statusCode, error: $0.error, outcome: $0.outcome)
                })
                let row = try database.query(
                    "SELECT status, stage, redriven_at IS NOT NULL AS held FROM payments WHERE id = $1", [item.id]).first
                let events = try database.query(
                    "SELECT to_status FROM payment_events WHERE payment_id = $1 ORDER BY id", [item.id]
                ).map { try $0.decode("to_status", as: String.self) }
                snapshot.payments.append(Snapshot.Payment(
                    status: try row?.decode("status", as: String.self), stage: try row?.decode("stage", as: String.self),
                    held: try row?.decode("held", as: Bool?.self), events: events))
            }
            snapshot.merchantWebhookEnabled = try harness.merchant()?.config.webhook?.enabled
            return snapshot
        }

        /// `webhook_deliveries` of the given payments in insertion (id) order.
        static func recordingOrder(_ ids: [UUID], harness: NotifyHarness) throws -> [UUID] {
            let database = try harness.database()
            defer { database.close() }
            return try database.query(
                "SELECT payment_id FROM webhook_deliveries WHERE payment_id = ANY($1::uuid[]) ORDER BY id", [PostgresArray(ids)]
            ).map { try $0.decode("payment_id", as: UUID.self) }
        }

        /// Runs the mixed batch in a fresh database.
        func run(_ cases: [Case], endpoints: Endpoints) throws -> (NotifyHarness, [Result<StageOutcome, StageFailure>]) {
            let harness = try NotifyHarness()
            do {
                try insert(cases, into: harness, endpoints: endpoints)
                let database = try harness.database()
                defer { database.close() }
                let results = harness.makeStage().process(Self.messages(cases), database: database)
                return (harness, results)
            } catch {
                harness.tearDown()
                throw error
            }
        }

        /// The set-based statement really took the delivered answers: it records them before the rest is recorded
        /// one by one.
        @Test func theDeliveredAnswersAreSettledByTheBatchStatement() throws {
            let endpoints = try Endpoints()
            defer { endpoints.stop() }
            let cases = Self.mixedBatch(maxRetries: 3)
            let (harness, _) = try run(cases, endpoints: endpoints)
            defer { harness.tearDown() }
            let rows = try Self.snapshot(cases, harness: harness)
            #expect(rows.attempts.map(\.count) == [1, 1, 1, 0, 0, 1, 1, 1, 1, 0], "attempts per message: \(rows.attempts)")
            let delivered = [Role.delivered, .deliveredLastTier, .duplicate].map { cases[$0.rawValue].id }
            #expect(Set(try Self.recordingOrder(cases.map(\.id), harness: harness).prefix(3)) == Set(delivered))
        }

        /// A plain batch (every webhook answered 2xx) costs the same few statements whatever its size, as
        /// `pg_prepared_statements` counts them (`BEGIN` and savepoints are simple queries, not counted): the batch
        /// read, the merchant (once: a cache with a TTL, as in production), the disabled endpoints, the endpoints'
        /// health, the delivered answers, the commits.
        @Test func aPlainBatchCostsTheSameFewStatementsWhateverItsSize() throws {
            let endpoints = try Endpoints()
            defer { endpoints.stop() }
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            var counts: [Int64] = []
            for size in [1, 12] {
                let cases = (0..<size).map { _ in Case(status: .authorized, target: .ok) }
                try insert(cases, into: harness, endpoints: endpoints)
                // A fresh stage per size, whose merchant cache (unlike the harness's) keeps the merchant for the batch.
                let stage = NotifyStage(
                    directory: MerchantDirectory(store: MerchantStore(vault: harness.vault), ttl: 60),
                    urlGuard: WebhookURLGuard(allowPrivate: true), retrySchedule: harness.configuration.retrySchedule)
                let database = try harness.database()
                defer { database.close() }
                let run = try StatementCounter.counting(on: database) { stage.process(Self.messages(cases), database: database) }
                #expect(run.value.allSatisfy { if case .success(.publish) = $0 { true } else { false } }, "\(run.value)")
                print("notify statements per plain batch of \(size): \(run.statements)")
                counts.append(run.statements)
            }
            #expect(counts[0] == counts[1], "\(counts)")
        }

        @Test func aMixedBatchSettlesEveryBranch() throws {
            let endpoints = try Endpoints()
            defer { endpoints.stop() }
            let cases = Self.mixedBatch(maxRetries: 3)
            let (harness, results) = try run(cases, endpoints: endpoints)
            defer { harness.tearDown() }
            let rows = try Self.snapshot(cases, harness: harness)
            func result(_ role: Role) -> Result<StageOutcome, StageFailure> { results[role.rawValue] }
            func rowsOf(_ role: Role) -> (attempts: [Snapshot.Attempt], payment: Snapshot.Payment) {
                (rows.attempts[role.rawValue], rows.payments[role.rawValue])
            }
            func published(_ role: Role) -> [AMQPOutboundMessage] {
                guard case .success(.publish(let messages)) = result(role) else { return [] }
                let router = DeliveryRouter(stage: .notify, retrySchedule: RetrySchedule(delays: [1], maxRetries: 1))
                return messages.map { router.message(for: $0, now: Date(timeIntervalSince1970: 0)) }
            }
            func eventId(_ role: Role) -> String {
                PaymentEvent.id(paymentId: cases[role.rawValue].id, type: PaymentEventType(status: cases[role.rawValue].status)!)
            }

            // Delivered (bulk): one `delivered` attempt, done, the results event.
            for role in [Role.delivered, .deliveredLastTier] {
                #expect(rowsOf(role).attempts.map(\.outcome) == ["delivered"])
                #expect(rowsOf(role).attempts.map(\.statusCode) == [204])
                #expect(rowsOf(role).payment.stage == "done")
                #expect(rowsOf(role).payment.held == false)
                #expect(published(role).map(\.properties.messageId) == [eventId(role)])
                #expect(published(role).map(\.exchange) == [PipelineTopology.resultsExchange])
            }
            #expect(rowsOf(.deliveredLastTier).attempts.map(\.attempt) == [3])
            // Card data still stored against a terminal payment (only a hand-made row can be: the purge runs with the
            // terminal transition) is never read: the card summary is the gateway's masked PAN.
            let body = String(decoding: try #require(published(.delivered).first).body, as: UTF8.self)
            #expect(body.contains(#""card":{"last4":"4242"}"#))
            #expect(endpoints.ok.requests.allSatisfy { $0.verified })

            // 500 with retries left: recorded `retrying`, held, still at notify; the transient failure's retry copy goes
            // out with the results event, published at the outcome (`PAYPIPE_RESULTS_TIMING=outcome`, the default).
            #expect(rowsOf(.retry).attempts.map(\.outcome) == ["retrying"])
            #expect(rowsOf(.retry).attempts.map(\.error) == ["http_500"])
            #expect(rowsOf(.retry).payment.stage == "notify")
            #expect(rowsOf(.retry).payment.held == true)
            guard case .success(.publish(let retried)) = result(.retry), retried.count == 2,
                  case .retry(_, after: .transient(code: "webhook_failed", _)) = retried[1] else {
                Issue.record("retry: \(result(.retry))")
                return
            }
            #expect(published(.retry).first?.properties.messageId == eventId(.retry))
            #expect(published(.retry).first?.exchange == PipelineTopology.resultsExchange)
            // 500 on the last attempt: `failed`, done, the results event and the dead letter.
            #expect(rowsOf(.exhausted).attempts.map(\.outcome) == ["failed"])
            #expect(rowsOf(.exhausted).payment.stage == "done")
            #expect(published(.exhausted).map(\.routingKey) == ["payment.declined", Stage.notify.deadLetterQueueName, "webhook.exhausted"])
            // 410 from the merchant's webhook: `disabled`, the webhook switched off, done, published.
            #expect(rowsOf(.gone).attempts.map(\.outcome) == ["disabled"])
            #expect(rowsOf(.gone).attempts.map(\.error) == ["endpoint_gone"])
            #expect(rowsOf(.gone).payment.stage == "done")
            #expect(rows.merchantWebhookEnabled == false)
            #expect(published(.gone).map(\.routingKey) == ["payment.failed"])
            // Already done: no POST, no row, the event again.
            #expect(rowsOf(.alreadyDone).attempts.isEmpty)
            #expect(published(.alreadyDone).map(\.properties.messageId) == [eventId(.alreadyDone)])
            // Not terminal: transient, untouched.
            #expect(result(.notTerminal) == .failure(.transient(
                code: "payment_not_terminal", reason: "payment \(cases[Role.notTerminal.rawValue].id) is submitting")))
            #expect(rowsOf(.notTerminal).payment.stage == "submit")
            #expect(rowsOf(.notTerminal).attempts.isEmpty)
            // Twice in the batch: the first message decides (one POST, settled with the batch), the second is already
            // handled and publishes the same event again, as a message for a done payment does.
            #expect(rowsOf(.duplicate).attempts.map(\.outcome) == ["delivered"])
            #expect(rowsOf(.duplicate).payment.stage == "done")
            #expect(published(.duplicate).map(\.properties.messageId) == [eventId(.duplicate)])
            #expect(published(.duplicateAgain) == published(.duplicate))
            // Unknown payment: unattributable.
            guard case .failure(.unattributable(code: "unknown_payment", _)) = result(.unknown) else {
                Issue.record("unknown: \(result(.unknown))")
                return
            }
            #expect(endpoints.ok.requests.count == 3, "one webhook per payment")
            #expect(endpoints.failing.requests.count == 2)
            #expect(endpoints.gone.requests.count == 1)
        }

        /// The statement alone: it settles exactly the payments still at stage `notify` and writes nothing for the
        /// others, which the stage then hands to the per-message path.
        @Test func deliveryBatchSettlesOnlyPaymentsStillAtNotify() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            try harness.applyMerchant(webhookURL: nil)
            let pending = try harness.insertPayment(status: .authorized)
            let settledElsewhere = try harness.insertPayment(status: .declined)
            let database = try harness.database()
            defer { database.close() }
            try PaymentStore().markDone(settledElsewhere.paymentId, on: database)
            let loaded = try PaymentEventLoader()
                .load([pending.paymentId, settledElsewhere.paymentId], on: database)
            let entries = try [pending, settledElsewhere].map { message in
                let event = try #require(try loaded[message.paymentId]?.get().loaded?.event)
                return WebhookDeliveryBatch.Entry(
                    attempt: WebhookAttempt(url: "https://example.test/hook", number: 2, statusCode: 200, latencyMs: 12, outcome: .delivered),
                    event: event)
            }
            let settled = try database.transaction { try WebhookDeliveryBatch().settle(entries, on: $0) }
            #expect(settled == [pending.paymentId])
            #expect(try harness.stage(of: pending.paymentId) == .done)
            let recorded = try harness.deliveries(pending.paymentId)
            #expect(recorded.map(\.eventId) == [entries[0].event.id])
            #expect(recorded.map(\.attempt) == [2])
            #expect(recorded.map(\.statusCode) == [200])
            #expect(recorded.map(\.latencyMs) == [12])
            #expect(recorded.map(\.url) == ["https://example.test/hook"])
            #expect(recorded.map(\.outcome) == ["delivered"])
            #expect(try harness.deliveries(settledElsewhere.paymentId).isEmpty)
        }

        /// The settle statement finds its payments by primary key only. With `stage = 'notify'` as a scan condition the
        /// planner could walk the partial index `payments_stage_updated`, whose `notify` entries — dead row versions of
        /// every payment already done, until vacuum — grow with the table: in benchmark runs notify fell steadily behind.
        @Test func settlingNeverWalksTheStageIndex() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            try harness.applyMerchant(webhookURL: nil)
            let database = try harness.database()
            defer { database.close() }
            var payments: [StageMessage] = []
            for _ in 0..<200 { payments.append(try harness.insertPayment(status: .authorized)) }
            for payment in payments.dropLast(10) { try PaymentStore().markDone(payment.paymentId, on: database) }
            let pending = Array(payments.suffix(10))
            let loaded = try PaymentEventLoader().load(pending.map(\.paymentId), on: database)
            let entries = try pending.map { message in
                WebhookDeliveryBatch.Entry(
                    attempt: WebhookAttempt(url: "https://example.test/hook", number: 1, statusCode: 200, latencyMs: 1, outcome: .delivered),
                    event: try #require(try loaded[message.paymentId]?.get().loaded?.event))
            }
            func stageIndexScans() throws -> Int64 {
                // Statistics reach the shared view when a backend goes idle, at most once a second unless forced.
                try database.query("SELECT pg_stat_force_next_flush()")
                return try database.query(
                    "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'payments_stage_updated'")[0].decode("idx_scan", as: Int64.self)
            }
            let before = try stageIndexScans()
            struct RollBack: Error {}
            for _ in 0..<6 {  // past the five custom plans, so a cached generic plan is exercised too
                do {
                    try database.transaction { transaction in
                        #expect(try WebhookDeliveryBatch().settle(entries, on: transaction) == Set(pending.map(\.paymentId)))
                        throw RollBack()  // the same payments settle again next round
                    }
                } catch is RollBack {}
            }
            _ = try stageIndexScans()
            #expect(try stageIndexScans() == before)
        }

        /// The batch read and the one-payment read build the same events (they share the row → event code).
        @Test func batchLoadMatchesSingleLoad() throws {
            let endpoints = try Endpoints()
            defer { endpoints.stop() }
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            let cases = Self.mixedBatch(maxRetries: 3)
            try insert(cases, into: harness, endpoints: endpoints)
            let database = try harness.database()
            defer { database.close() }
            let loader = PaymentEventLoader()
            let batch = try loader.load(cases.map(\.id), on: database)
            #expect(batch.count == Set(cases.filter { !$0.unknown }.map(\.id)).count)
            for item in cases {
                let single = try PaymentStore().load(item.id, on: database)
                let fromBatch = try batch[item.id]?.get()
                #expect(fromBatch?.payment == single)
                guard let single else { continue }
                let loaded = try loader.load(single, on: database)
                #expect(fromBatch?.loaded?.event == loaded?.event)
                #expect(fromBatch?.loaded?.notifyURL == loaded?.notifyURL)
                #expect((loaded == nil) == (item.status == .submitting))
            }
        }
    }
}
