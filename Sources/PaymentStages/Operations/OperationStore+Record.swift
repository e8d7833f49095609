import Foundation
import Pipeline
import Postgres

/// The operations stage's part of ``Pipeline/OperationStore`` that records answers, kept with the stage that runs it:
/// the attempts as stored (read back by the record and by `paypipe payment show`), what an answer writes into its
/// attempt, and the operations' endings (succeeded with the payment's lifecycle change, failed, or to review).
extension OperationStore {
    /// One attempt as stored.
    public struct Attempt: Sendable, Equatable {
        public enum State: String, Sendable, Hashable { case sending, completed, uncertain, notSent = "not_sent" }
        public let id: Int64
        public let requestType: String
        public let state: State
        public let outcome: String?
        public let errorCode: String?
        public let transactionReference: String?
        public let settleStatus: String?
        public let settleBaseAmount: Int64?
        public let reconcileAfter: Date?
    }

    private static let attemptColumns = "id, request_type, state, outcome, error_code, transaction_reference, settle_status, settle_base_amount, reconcile_after"

    /// The operation's attempts, oldest first.
    public func attempts(_ operationId: Int64, on connection: PostgresConnection) throws -> [Attempt] {
        try connection.query("SELECT \(Self.attemptColumns) FROM operation_attempts WHERE operation_id = $1 ORDER BY id", [operationId])
            .map(Attempt.init(row:))
    }

    /// The attempts of `operations`, oldest first, by operation, in one statement.
    public func attempts(operations: [Int64], on connection: PostgresConnection) throws -> [Int64: [Attempt]] {
        guard !operations.isEmpty else { return [:] }
        let rows = try connection.query(
            "SELECT operation_id, \(Self.attemptColumns) FROM operation_attempts WHERE operation_id = ANY($1::int8[]) ORDER BY id",
            [PostgresArray(operations)])
        return try rows.reduce(into: [:]) { attempts, row in
            attempts[try row.decode("operation_id", as: Int64.self), default: []].append(try Attempt(row: row))
        }
    }

    /// The attempts `ids` (of any operations), by id, in one statement.
    public func attempts(ids: [Int64], on connection: PostgresConnection) throws -> [Int64: Attempt] {
        guard !ids.isEmpty else { return [:] }
        let attempts = try connection.query("SELECT \(Self.attemptColumns) FROM operation_attempts WHERE id = ANY($1::int8[])", [PostgresArray(ids)])
            .map(Attempt.init(row:))
        return Dictionary(attempts.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// What an answer (or the failure to get one) writes into its attempt.
    public struct AttemptAnswer: Sendable, Equatable {
        public var state: Attempt.State
        public var outcome: String
        public var errorCode: String?
        public var errorMessage: String?
        public var transactionReference: String?
        public var settleStatus: String?
        public var settleBaseAmount: Int64?

        public init(state: Attempt.State, outcome: String, errorCode: String? = nil, errorMessage: String? = nil,
                    transactionReference: String? = nil, settleStatus: String? = nil, settleBaseAmount: Int64? = nil) {
            (self.state, self.outcome, self.errorCode, self.errorMessage) = (state, outcome, errorCode, errorMessage)
            (self.transactionReference, self.settleStatus, self.settleBaseAmount) = (transactionReference, settleStatus, settleBaseAmount)
        }
    }

    /// Raised when the attempt an answer is for was no longer open: another consumer settled it; nothing is written
    /// (the transaction rolls back).
    public struct NotCurrent: Error, CustomStringConvertible {
        public let attemptId: Int64
        public var description: String { "operation attempt \(attemptId) is no longer open" }

        public init(attemptId: Int64) { self.attemptId = attemptId }
    }

    /// Writes an attempt's answer; only while it is still `sending` or `uncertain`.
    public func finishAttempt(_ attemptId: Int64, _ answer: AttemptAnswer, on connection: PostgresConnection) throws {
        try finishAttempts([(attemptId, answer)], on: connection)
    }

    /// An attempt's answer as ``finishAttempts(_:on:)`` writes it.
    public typealias AttemptWrite = (id: Int64, written: AttemptAnswer)

    /// Writes each attempt's answer in one statement, only while it is still `sending` or `uncertain`; if any one was
    /// no longer open, throws ``NotCurrent`` for it (the caller's transaction rolls back, nothing is kept).
    public func finishAttempts(_ answers: [AttemptWrite], on connection: PostgresConnection) throws {
        guard !answers.isEmpty else { return }
        let rows = try connection.query(
            """
            UPDATE operation_attempts a
            SET state = i.state, outcome = i.outcome, error_code = i.error_code, error_message = i.error_message,
                transaction_reference = i.transaction_reference, settle_status = i.settle_status, settle_base_amount = i.settle_base_amount,
                finished_at = CASE WHEN i.state = 'uncertain' THEN NULL ELSE clock_timestamp() END
            FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int8[])
                AS i(id, state, outcome, error_code, error_message, transaction_reference, settle_status, settle_base_amount)
            WHERE a.id = i.id AND a.state IN ('sending', 'uncertain')
            RETURNING a.id
            """,
            [PostgresArray(answers.map(\.id)), PostgresArray(answers.map(\.written.state.rawValue)), PostgresArray(answers.map(\.written.outcome)),
             PostgresArray(answers.map(\.written.errorCode)), PostgresArray(answers.map { $0.written.errorMessage.map { String($0.prefix(500)) } }),
             PostgresArray(answers.map(\.written.transactionReference)), PostgresArray(answers.map(\.written.settleStatus)),
             PostgresArray(answers.map(\.written.settleBaseAmount))])
        let written = Set(try rows.map { try $0.decode("id", as: Int64.self) })
        if let stale = answers.first(where: { !written.contains($0.id) }) { throw NotCurrent(attemptId: stale.id) }
    }

    /// Ends a `requested` operation as the gateway confirmed it: the payment's lifecycle moves to the decided effect
    /// (through ``PaymentStore``, checked by ``CheckedLifecycleChange`` and guarded by the state decided on), then the
    /// operation is `succeeded`. False when the operation or the payment was not in the expected state (nothing written).
    /// The caller holds the payment's row lock.
    public func succeed(
        _ operation: Operation, gatewayReference: String?, settleStatus: SettlementState?, actor: String, on connection: PostgresConnection
    ) throws -> Bool {
        guard operation.state == .requested, let paymentId = operation.paymentId, let effect = operation.effect else { return false }
        if let before = operation.before {
            let change = try CheckedLifecycleChange(from: before, to: effect.lifecycle)
            let detail = "\(operation.kind.rawValue) \(operation.operationId): \(effect.event.rawValue) \(effect.amount)"
            guard try PaymentStore().changeLifecycle(paymentId, change, settleStatus: settleStatus, actor: actor,
                                                     operationId: operation.operationId, detail: detail, on: connection) else { return false }
        }
        return try end(operation.id, state: .succeeded, gatewayReference: gatewayReference, code: nil, reason: nil, on: connection)
    }

    /// Ends an open operation `failed` (the gateway refused it, or an operator closed a review) with its code; the
    /// payment's lifecycle is unchanged.
    @discardableResult
    public func fail(_ operationId: Int64, code: String, reason: String, on connection: PostgresConnection) throws -> Bool {
        try end(operationId, state: .failed, gatewayReference: nil, code: code, reason: reason, on: connection)
    }

    /// Puts a `requested` operation up for review with its code; the payment takes no other operation meanwhile.
    @discardableResult
    public func review(_ operationId: Int64, code: String, reason: String, on connection: PostgresConnection) throws -> Bool {
        try end([Ending(operation: operationId, state: .needsReview, code: code, reason: reason)], on: connection) == [operationId]
    }

    private func end(_ id: Int64, state: State, gatewayReference: String?, code: String?, reason: String?, on connection: PostgresConnection) throws -> Bool {
        try end([Ending(operation: id, state: state, gatewayReference: gatewayReference, code: code, reason: reason)], on: connection) == [id]
    }

    /// How an operation ends (``end(_:on:)``): `succeeded` or `failed` from `requested` or `needs_review`, or
    /// `needs_review` from `requested` (a review keeps the operation open).
    public struct Ending: Sendable, Equatable {
        public let operation: Int64
        public let state: State
        public let gatewayReference: String?
        public let code: String?
        public let reason: String?

        public init(operation: Int64, state: State, gatewayReference: String? = nil, code: String?, reason: String?) {
            (self.operation, self.state, self.gatewayReference, self.code, self.reason) = (operation, state, gatewayReference, code, reason)
        }
    }

    /// Ends each operation as its ``Ending`` says, in one statement; returns the operations written (one in another
    /// state is left as it is).
    public func end(_ endings: [Ending], on connection: PostgresConnection) throws -> Set<Int64> {
        guard !endings.isEmpty else { return [] }
        let rows = try connection.query(
            """
            UPDATE payment_operations o
            SET state = i.state, gateway_reference = coalesce(i.gateway_reference, o.gateway_reference), error_code = i.error_code,
                error_message = i.error_message, finished_at = CASE WHEN i.state = 'needs_review' THEN o.finished_at ELSE clock_timestamp() END
            FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[]) AS i(id, state, gateway_reference, error_code, error_message)
            WHERE o.id = i.id AND (o.state = 'requested' OR (o.state = 'needs_review' AND i.state <> 'needs_review'))
            RETURNING o.id
            """,
            [PostgresArray(endings.map(\.operation)), PostgresArray(endings.map(\.state.rawValue)), PostgresArray(endings.map(\.gatewayReference)),
             PostgresArray(endings.map(\.code)), PostgresArray(endings.map { $0.reason.map { String($0.prefix(500)) } })])
        return Set(try rows.map { try $0.decode("id", as: Int64.self) })
    }
}

extension OperationStore.Attempt {
    /// The attempt its row stores (``OperationStore/attemptColumns``).
    init(row: PostgresRow) throws {
        state = try row.decodeChoice("state", as: State.self)
        id = try row.decode("id", as: Int64.self)
        requestType = try row.decode("request_type", as: String.self)
        outcome = try row.decode("outcome", as: String?.self)
        errorCode = try row.decode("error_code", as: String?.self)
        transactionReference = try row.decode("transaction_reference", as: String?.self)
        settleStatus = try row.decode("settle_status", as: String?.self)
        settleBaseAmount = try row.decode("settle_base_amount", as: Int64?.self)
        reconcileAfter = try row.decode("reconcile_after", as: Date?.self)
    }
}
