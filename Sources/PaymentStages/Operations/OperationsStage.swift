import Foundation
import HTTP
import Pipeline
import Postgres

/// `paypipe-operations`: capture, void and refund of authorised payments (docs/operations-lifecycle.md), consumed from
/// `paypipe.operations` (routing keys `payment.capture.requested`, `payment.void.requested`,
/// `payment.refund.requested` on `paypipe.jobs`) on the same runtime as the AUTH stages: retries, dead letters, metrics.
///
/// The stage's shape, one file each (docs/architecture.md, "A refund through operations"):
/// - this file: the batch shape (waves, the call and answer types);
/// - `OperationsStage+Prepare.swift`: the read under the payment's lock and the decision (``OperationSteps``, the rules
///   of ``OperationProtocol``), committing the operation and its attempt before any call;
/// - `OperationsStage+CallOut.swift`: the calls, through the runtime's call-out phase (the pool, the endpoint gate, the
///   send window) and the merchant's connector (``OperationConnector``);
/// - `OperationsStage+Record.swift`: the answers applied, and the hand-off to notify (``OperationEventMessage``);
/// - `OperationsStage+Settlement.swift`: settlement learnt before a refund, decided by ``OperationUpkeep`` and sent
///   through the same phase.
///
/// Not a payment's path, so beside the stage in ``OperationsWorker`` (the worker's handler, wired by the launch): the
/// upkeep round's suspensions of manual AUTHs, settlement poll and merchant-token events (`OperationsUpkeepRound`),
/// the payments the reconciler hands over (expiry, late AUTHs), and deferred payments' completions
/// (`DeferredCompletion`: they set an amount, never reach a processor).
///
/// Exactly once: the operation and its `sending` attempt are committed before the call; a redelivered or concurrent
/// message finds them and resumes instead of sending again; a lost update answer is reconciled by querying the
/// processor, a lost refund answer goes to review and is never resent. Never two messages of one merchant in one round.
public struct OperationsStage: CallingStageHandler {
    public let stage = Stage.operations
    public static let actor = "operations"

    let directory: MerchantDirectory
    /// Every connector (``ConnectorRegistry``): what a merchant's operation goes through.
    let connectors: GatewayConnectors
    let steps: OperationSteps
    /// Seconds an attempt's bytes may wait on our side before they are refused (`PAYPIPE_SEND_WINDOW`).
    let sendWindow: Double
    /// Seconds after the send deadline and the transport's total timeout before a lost answer is reconciled.
    let reconcileGrace: Double
    /// The call-out phase's pool and gate; the gate takes every gateway call of the worker (operations, their status
    /// queries, the upkeep's), as submit's: a circuit per endpoint URL and at most `maxConcurrent` calls in flight per
    /// merchant.
    public let callOut: CallOut
    public var gate: EndpointGate { callOut.gate }

    /// `gate`: the worker's endpoint gate, built from its policy by the launch (`OperationsStageLaunch.swift`).
    public init(directory: MerchantDirectory, connectors: GatewayConnectors, steps: OperationSteps,
                sendWindow: Double, reconcileGrace: Double, gate: EndpointGate) {
        // One call thread: a wave holds at most one message per merchant and operations are rare next to AUTHs.
        self.callOut = CallOut(pool: HTTPClientPool(size: 1, configuration: connectors.http, name: "paypipe-operations-call"),
                               gate: gate, sendWindow: sendWindow, rounds: 3)
        self.directory = directory
        self.connectors = connectors
        self.steps = steps
        self.sendWindow = sendWindow
        self.reconcileGrace = reconcileGrace
    }

    /// A decoded delivery: an operation, or why it cannot be one (its merchant and id known).
    public enum Message: Sendable, Equatable {
        case request(OperationRequest)
        case invalid(kind: OperationRequest.Kind, merchantId: String, operationId: String, reason: String)
        /// The reconciler's hand-off of a payment (``OperationsWorker/reconcile(on:)``): void its late AUTH, or its authorisation not
        /// captured within `captureWithin`.
        case reconciled(StageMessage)

        var merchantId: String {
            switch self {
            case .request(let request): request.merchantId
            case .invalid(_, let merchantId, _, _): merchantId
            case .reconciled(let payment): payment.merchantId
            }
        }
    }

    public func spanAttributes(of message: Message) -> [SpanAttribute] {
        switch message {
        case .request(let request):
            let payment = switch request.payment {
            case .paymentId(let id): SpanAttribute("paymentId", id.paymentIDText)
            case .jobId(let jobId): SpanAttribute("jobId", jobId)
            }
            return [SpanAttribute("operationId", request.operationId), SpanAttribute("merchantId", request.merchantId), payment,
                    SpanAttribute("kind", request.kind.rawValue)]
        case .invalid(let kind, let merchantId, let operationId, _):
            return [SpanAttribute("operationId", operationId), SpanAttribute("merchantId", merchantId), SpanAttribute("kind", kind.rawValue)]
        case .reconciled(let payment):
            return payment.spanAttributes
        }
    }

    public func decode(_ inbound: InboundMessage) throws(StageFailure) -> Message {
        if inbound.jobRoutingKey == nil, inbound.isFromWorkers {
            // Only workers publish to the stages exchange: a payment hand-off here is the reconciler's.
            return .reconciled(try StageMessage.decode(inbound.body))
        }
        guard let key = inbound.jobRoutingKey, let kind = OperationRequest.Kind(routingKey: key) else {
            throw .unattributable(code: "malformed_job", reason: "not an operation: routing key \(inbound.routingKey.prefix(64))")
        }
        do {
            return .request(try OperationRequest.decode(inbound.body, kind: kind))
        } catch {
            switch error {
            case .unaddressed(let reason): throw .unattributable(code: "malformed_job", reason: reason)
            case .invalid(let merchantId, let operationId, let reason):
                return .invalid(kind: kind, merchantId: merchantId, operationId: operationId, reason: reason)
            }
        }
    }

    /// The runtime's batch shape (``CallingStageHandler``) in waves of at most one message per merchant, so two
    /// operations of one payment never share a prepare transaction: the second is planned only after the first's
    /// round settled it, as when messages were handled one by one. Before a wave, a refund of a payment still recorded
    /// `captured` asks the processor whether it settled since (``learnSettlement(_:database:)``).
    public func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        guard !batch.isEmpty else { return [] }
        var results = [Result<StageOutcome, StageFailure>?](repeating: nil, count: batch.count)
        for wave in Self.waves(batch.map(\.merchantId)) {
            var ready: [Int] = []
            for (index, learnt) in zip(wave, learnSettlement(wave.map { batch[$0] }, database: database)) {
                switch learnt {
                case .success: ready.append(index)
                case .failure(let failure): results[index] = .failure(failure)
                }
            }
            for (index, result) in zip(ready, processInRounds(ready.map { batch[$0] }, database: database)) { results[index] = result }
        }
        return results.map { $0! }
    }

    /// Batch indices in waves, each with at most one message of a merchant, every merchant's messages in batch order.
    static func waves(_ merchants: [String]) -> [[Int]] {
        var waves: [[Int]] = [], taken: [String: Int] = [:]
        for (index, merchant) in merchants.enumerated() {
            let wave = taken[merchant, default: 0]
            taken[merchant] = wave + 1
            if wave == waves.count { waves.append([]) }
            waves[wave].append(index)
        }
        return waves
    }

    // MARK: What a round carries

    /// A gateway call an operation's plan committed the attempt of: its request, or the status query of a lost answer.
    public enum Call: Sendable {
        case send(Planned, request: GatewayOperation)
        case query(Planned, request: GatewayOperation)

        var planned: Planned {
            switch self {
            case .send(let planned, _), .query(let planned, _): planned
            }
        }
    }

    /// What a call's answer is recorded against, and what its connector needs to make it.
    public struct Planned: Sendable {
        let operation: OperationStore.Operation
        let attempt: Int64
        let endpoint: GatewayEndpoint
        let transport: OperationProtocol.Transport
        let context: OperationContext
        /// The batch's clocks, read once in its prepare: what the answer's reconciliation time is computed with.
        let clock: BatchClock
    }

    public enum Answer: Sendable {
        case sent(OperationSteps.Answer)
        case queried(Result<OperationProtocol.Evidence, OperationQueryFailure>)
    }
}
