import Foundation
import HTTP
import JSON
import Pipeline
import Postgres

/// Operation events (``OperationEvent``) through the notify stage, with the payment results' guarantees: the signed
/// webhook to the job's `notify_url` or the merchant's webhook, every attempt in `webhook_deliveries`, retries through
/// the runtime's tiers, and the event on `paypipe.results` published (confirmed before the ack) once the webhook is
/// settled; a redelivery after that publishes the event again (same id), never a second webhook. One message at a time:
/// operations are rare next to payments. Endpoint health (disabling, holding) is the payment results' alone.
extension NotifyStage {
    func processOperation(_ message: NotifyMessage, operationRowId: Int64, database: PostgresConnection) -> Result<StageOutcome, StageFailure> {
        do {
            return try deliverOperation(message, operationRowId: operationRowId, database: database)
        } catch let failure as StageFailure {
            return .failure(failure)
        } catch {
            return .failure(FailureClassifier.classify(error))
        }
    }

    private func deliverOperation(_ message: NotifyMessage, operationRowId: Int64, database: PostgresConnection) throws -> Result<StageOutcome, StageFailure> {
        let operations = OperationStore()
        guard let operation = try operations.load(operationRowId, on: database), let paymentId = operation.paymentId,
              operation.merchantId == message.message.merchantId,
              let payment = try PaymentStore().load(paymentId, on: database) else {
            throw StageFailure.unattributable(code: "unknown_payment", reason: "operation \(operationRowId) does not exist")
        }
        guard operation.state == .succeeded || operation.state == .failed else {
            throw StageFailure.transient(code: "payment_not_terminal", reason: "operation \(operation.operationId) is \(operation.state.rawValue)")
        }
        let extra = try database.query("SELECT notify_url, metadata::text AS metadata, notified_at FROM payments p, payment_operations o WHERE p.id = $1 AND o.id = $2",
                                       [paymentId, operationRowId])[0]
        let metadata = (try? JSONValue.parse(Array(try extra.decode("metadata", as: String.self).utf8))) ?? .object([])
        let event = OperationEvent(operation: operation, payment: payment,
                                   lifecycle: try PaymentStore().money(paymentId, forUpdate: false, on: database)?.lifecycle, metadata: metadata)
        let body = event.body
        let result = Self.resultsExchangeMessage(id: event.id, type: event.type, body: body, timestamp: event.occurredAt,
                                                merchantId: payment.merchantId, about: event.subject)
        if try extra.decode("notified_at", as: Date?.self) != nil {
            // Settled before: the webhook is never sent twice, the results event may not have been published.
            return .success(.publish([result]))
        }
        func finish(_ also: [OutboundMessage] = []) throws -> Result<StageOutcome, StageFailure> {
            try operations.markNotified(operationRowId, on: database)
            return .success(.publish([result] + also))
        }
        guard let target = try target(for: payment, notifyURL: try extra.decode("notify_url", as: String?.self), on: database) else { return try finish() }
        let number = message.previousRetries + 1
        func record(_ attempt: WebhookAttempt) throws {
            try deliveries.record(attempt, paymentId: paymentId, eventId: event.id, eventType: event.type, on: database)
        }
        guard target.secrets.allSatisfy({ WebhookSecretPolicy.problem($0) == nil }), let signer = try? WebhookSigner(secrets: target.secrets) else {
            try record(WebhookAttempt(url: target.url, number: number, error: "invalid_webhook_secret", outcome: .failed))
            return try finish()
        }
        if case .refused(let reason) = urlGuard.check(target.url) {
            try record(WebhookAttempt(url: target.url, number: number, error: "ssrf_refused: \(reason)", outcome: .failed))
            return try finish()
        }
        var attempt = WebhookAttempt(url: target.url, number: number, outcome: .retrying)
        let classification: WebhookResponseClass
        switch gate.acquire(EndpointGate.Call(endpoint: Self.endpointKey(target.url)), rate: target.ratePerSecond ?? rate) {
        case .refused(let refusal):
            classification = .retry(error: NotifyDecision.error(refusal))
        case .acquired(let permit):
            let unsent = attempt
            let sent = senders.perform(1) { [self] _, client in
                var posted = unsent
                let answer = post(body, id: event.id, to: target.url, signer: signer, client: client, attempt: &posted)
                return (answer, posted)
            }[0]
            classification = sent.0
            attempt = sent.1
            gate.release(permit, report: Self.isRetry(classification) ? .failed(pause: attempt.retryAfterSeconds) : .healthy)
        }
        switch classification {
        case .delivered:
            try record(Self.deliveredAttempt(attempt))
            return try finish()
        case .gone, .refused:
            attempt.outcome = .failed
            if case .refused(let error) = classification { attempt.error = error } else { attempt.error = "endpoint_gone" }
            try record(attempt)
            return try finish()
        case .retry(let error):
            attempt.error = error
            let failed = StageFailure.transient(code: "webhook_failed", reason: "webhook attempt \(number) to \(Self.endpointKey(target.url)) failed: \(error)")
            guard case .retry = router.retrySchedule.decision(previousRetries: message.previousRetries) else {
                attempt.outcome = .failed
                try record(attempt)
                return try finish([OutboundMessage.exhausted(message.inbound, after: failed)])
            }
            try record(attempt)
            return .failure(failed)
        }
    }
}
