import AMQP
import Foundation
import Pipeline
import Postgres
import Synchronization

/// A minimal real stage for runtime tests: moves a payment `decrypted → prepared` through
/// ``PaymentStore`` and hands off to `submit`, exactly like a production stage, with knobs to fail.
final class AdvanceStage: TransactionalStageHandler {
    struct Controls {
        /// Payments whose handling throws a transient failure this many more times.
        var transientFailures: [UUID: Int] = [:]
        /// Seconds each message's handling sleeps (to keep work in flight).
        var delay: Double = 0
        /// Hand off to a routing key no queue is bound to (a message no re-declaration can route).
        var unroutable = false
        /// When set, each message's handling waits for it to be signalled (a lane blocked inside a call).
        var hold: DispatchSemaphore?
        var handled = 0
    }

    let stage = Stage.authorize
    let controls = Mutex(Controls())

    func decode(_ message: InboundMessage) throws(StageFailure) -> StageMessage {
        try StageMessage.decode(message.body)
    }

    func handle(_ batch: [StageMessage], transaction: PostgresConnection) throws -> [Result<StageOutcome, StageFailure>] {
        try batch.map { message in
            let (fail, delay, unroutable, hold) = controls.withLock { controls -> (Bool, Double, Bool, DispatchSemaphore?) in
                controls.handled += 1
                let remaining = controls.transientFailures[message.paymentId] ?? 0
                if remaining > 0 { controls.transientFailures[message.paymentId] = remaining - 1 }
                return (remaining > 0, controls.delay, controls.unroutable, controls.hold)
            }
            hold?.wait()
            if unroutable {
                return .success(.publish([.event(exchange: PipelineTopology.stagesExchange, type: "nowhere", id: message.paymentId.paymentIDText,
                                                 body: message.encoded(), timestamp: Date(), mandatory: true)]))
            }
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            if fail { return .failure(.transient(code: "test_transient", reason: "injected transient failure")) }
            switch try PaymentStore().transition(message.paymentId, from: .decrypted, to: .prepared, actor: "test", on: transaction) {
            case .applied, .statusWas(.prepared), .statusWas(.submitting):
                return .success(.handOff(to: .submit, message))
            case .statusWas(let other) where other.isTerminal:
                return .success(.handOff(to: .notify, message))
            case .statusWas(let other):
                return .failure(.unattributable(code: "unexpected_status", reason: "payment is \(other.rawValue)"))
            }
        }
    }
}
