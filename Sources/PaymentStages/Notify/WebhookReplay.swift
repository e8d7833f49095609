import AMQP
import Foundation
import Pipeline
import Postgres

/// Manual re-delivery (`paypipe webhooks replay`): puts terminal payments back into the notify stage
/// (`stage done → notify`) and returns their hand-offs to publish to `paypipe.notify`. The event id derives from the
/// payment and its status, so the replayed request carries the **same** `webhook-id` and receivers dedupe it.
public struct WebhookReplay: Sendable {
    public init() {}

    /// Which payments to replay.
    public enum Selection: Sendable, Equatable {
        case payment(UUID)
        /// Payments with a `failed` or `disabled` delivery attempt at or after the date (Svix-style "recover").
        case failedSince(Date)
    }

    /// Resets the selected terminal payments to stage `notify` (one statement) and returns their hand-offs.
    public func reset(_ selection: Selection, on connection: PostgresConnection) throws -> [StageMessage] {
        let paymentId: UUID?
        let since: Date?
        switch selection {
        case .payment(let id): (paymentId, since) = (id, nil)
        case .failedSince(let date): (paymentId, since) = (nil, date)
        }
        return try PaymentStore().requeueForNotification(paymentId: paymentId, failedSince: since, on: connection)
    }

    /// The persistent hand-off to `paypipe.notify` for one replayed payment.
    public func handOff(_ message: StageMessage) -> AMQPOutboundMessage {
        var outbound = DeliveryRouter(stage: .notify, retrySchedule: .standard).handOff(message, to: .notify)
        outbound.properties.appId = "paypipe-cli"
        return outbound
    }

    /// The persistent hand-off to `paypipe.notify` for one held operation event released (``OperationEvents/held(_:on:)``).
    public func handOff(_ operation: OperationEventMessage) -> AMQPOutboundMessage {
        var outbound = DeliveryRouter(stage: .notify, retrySchedule: .standard).handOff(HandOffMessage(operation))
        outbound.properties.appId = "paypipe-cli"
        return outbound
    }
}
