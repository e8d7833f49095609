import Foundation
import Pipeline
import Postgres

/// Hands recorded credential events (``Pipeline/CredentialEventStore``, the outbox the credential changes write) to
/// the notify stage: one thread of `paypipe-notify`, every `PAYPIPE_RECONCILE_INTERVAL` (none when 0), on its own
/// database connection. A claimed event's hand-off that is lost (a crash before the broker confirmed it) or whose
/// delivery was held (a disabled endpoint) is claimed again after `PAYPIPE_STUCK_AFTER`; notify settles each event's
/// webhook once (`notified_at`), so a repeated hand-off sends nothing more.
public enum CredentialEventRelay {
    /// One round: the due events claimed (one statement) and their hand-offs.
    public static func claim(stuckAfter: Double, on connection: PostgresConnection) throws -> [HandOffMessage] {
        try CredentialEventStore().claimForHandOff(stuckAfter: stuckAfter, on: connection).map(CredentialEventHandOff.handOff)
    }

    /// The component for `paypipe-notify`'s `components`.
    public static func components(_ context: WorkerContext) -> [any WorkerComponent] {
        let interval = context.configuration.reconcileIntervalSeconds
        return [ThreadsComponent(name: "paypipe-notify-credential-events", count: interval > 0 ? 1 : 0,
                                 body: { _ in run(context: context, interval: interval) }, onStop: {})]
    }

    private static func run(context: WorkerContext, interval: Double) {
        var database: PostgresConnection?
        var nextRun = Date()
        while !context.isStopRequested {
            guard Date() >= nextRun else {
                Thread.sleep(forTimeInterval: min(0.25, interval))
                continue
            }
            nextRun = Date().addingTimeInterval(interval)
            guard let connection = context.connected(&database) else { continue }
            do {
                let handOffs = try claim(stuckAfter: context.configuration.stuckAfterSeconds, on: connection)
                if !handOffs.isEmpty, context.publish(handOffs) {
                    context.logger.info("credential_events_handed", [("count", .int(handOffs.count))])
                }
            } catch {
                context.logger.error("credential_events_relay_failed", [("error", .string(String(describing: error)))])
            }
        }
        database?.close()
    }
}
