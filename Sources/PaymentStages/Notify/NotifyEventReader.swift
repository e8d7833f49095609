import Foundation
import JSON
import Pipeline
import Postgres

/// What notify reads for one request at the start of a batch, as its decisions see it.
public struct NotifyRead: Sendable {
    public let payment: PaymentRecord
    /// The merchant the request belongs to (an operation's own, which its hand-off must name).
    public let merchantId: String
    /// `nil` while there is nothing to notify yet (the payment not terminal, the operation not finished).
    public let event: NotifyEvent?
    /// The job's `notify_url`.
    public let notifyURL: String?
    /// The webhook of this event was settled before: the payment is `done`, the operation `notified_at` is set.
    public let settled: Bool
    /// A webhook attempt of this event is recorded: notify decided on it before.
    public let attempted: Bool
    /// What the subject is while not final, for the `payment_not_terminal` reason.
    public let pending: String
}

/// The notify stage's batch read: every payment result of the batch in one query (``PaymentEventLoader``), and each
/// operation's event with its own reads (operations are rare next to payments). An id without a row is absent; a row
/// that does not decode fails only its own request.
struct NotifyEventReader: Sendable {
    private let payments = PaymentEventLoader()

    func read(_ requests: [NotifyRequest], on connection: PostgresConnection) throws -> [NotifyRequest: Result<NotifyRead, any Error>] {
        var reads: [NotifyRequest: Result<NotifyRead, any Error>] = [:]
        let paymentIds = requests.compactMap { request -> UUID? in
            if case .payment(let id) = request { return id }
            return nil
        }
        for (id, loaded) in try payments.load(paymentIds, on: connection) {
            reads[.payment(id)] = loaded.map { loaded in
                let payment = loaded.payment
                return NotifyRead(
                    payment: payment, merchantId: payment.merchantId, event: loaded.loaded.map { NotifyEvent($0.event) },
                    notifyURL: loaded.loaded?.notifyURL, settled: payment.stage == .done, attempted: loaded.loaded?.attempted ?? false,
                    pending: "payment \(payment.id) is \(payment.status.rawValue)")
            }
        }
        for case .operation(let rowId) in Set(requests) {
            do {
                if let read = try operation(rowId, on: connection) { reads[.operation(rowId)] = .success(read) }
            } catch {
                reads[.operation(rowId)] = .failure(error)
            }
        }
        for case .credential(let rowId) in Set(requests) {
            do {
                if let read = try credential(rowId, on: connection) { reads[.credential(rowId)] = .success(read) }
            } catch {
                reads[.credential(rowId)] = .failure(error)
            }
        }
        return reads
    }

    /// A recorded credential event: it, the payment that stored the credential and that payment's `notify_url`, and
    /// whether the event was notified or attempted before.
    private func credential(_ rowId: Int64, on connection: PostgresConnection) throws -> NotifyRead? {
        guard let recorded = try CredentialEventStore().load(rowId, on: connection),
              let payment = try PaymentStore().load(recorded.paymentId, on: connection) else { return nil }
        let row = try connection.query(
            """
            SELECT p.notify_url, EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.payment_id = p.id AND d.event_id = $2) AS attempted
            FROM payments p WHERE p.id = $1
            """, [payment.id, recorded.eventId])[0]
        return NotifyRead(
            payment: payment, merchantId: recorded.merchantId, event: NotifyEvent(CredentialEvent(event: recorded, payment: payment)),
            notifyURL: try row.decode("notify_url", as: String?.self), settled: recorded.notified,
            attempted: try row.decode("attempted", as: Bool.self), pending: "credential event \(rowId) is recorded")
    }

    /// A finished operation's event: the operation, its payment with the lifecycle after it, the job's metadata and
    /// `notify_url`, and whether the event was notified or attempted before.
    private func operation(_ rowId: Int64, on connection: PostgresConnection) throws -> NotifyRead? {
        guard let operation = try OperationStore().load(rowId, on: connection), let paymentId = operation.paymentId,
              let payment = try PaymentStore().load(paymentId, on: connection) else { return nil }
        let lifecycle = try PaymentStore().money(paymentId, forUpdate: false, on: connection)?.lifecycle
        let probe = OperationEvent(operation: operation, payment: payment, lifecycle: lifecycle, metadata: .object([]))
        let row = try connection.query(
            """
            SELECT p.notify_url, p.metadata::text AS metadata, o.notified_at,
                   EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.payment_id = p.id AND d.event_id = $3) AS attempted
            FROM payments p, payment_operations o WHERE p.id = $1 AND o.id = $2
            """, [paymentId, rowId, probe.id])[0]
        let metadata = (try? JSONValue.parse(Array(try row.decode("metadata", as: String.self).utf8))) ?? .object([])
        let finished = operation.state == .succeeded || operation.state == .failed
        return NotifyRead(
            payment: payment, merchantId: operation.merchantId,
            event: finished ? NotifyEvent(OperationEvent(operation: operation, payment: payment, lifecycle: lifecycle, metadata: metadata)) : nil,
            notifyURL: try row.decode("notify_url", as: String?.self), settled: try row.decode("notified_at", as: Date?.self) != nil,
            attempted: try row.decode("attempted", as: Bool.self), pending: "operation \(operation.operationId) is \(operation.state.rawValue)")
    }
}
