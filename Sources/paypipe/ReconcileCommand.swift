import AMQP
import PaymentStages
import Pipeline

/// `paypipe reconcile`: one reconciler pass over every stage, for cron or an operator.
/// Workers also run the same pass periodically for their own stage (`PAYPIPE_RECONCILE_INTERVAL`).
enum ReconcileCommand: CLICommand {
    static let name = "reconcile"
    static let summary = "re-drive payments stuck in a stage longer than a threshold"
    static let usage = """
        usage: paypipe reconcile [--stuck-after DURATION]
          Finds payments that sat in the authorize, submit or notify stage longer than DURATION
          (default PAYPIPE_STUCK_AFTER, 5m) and publishes their hand-off again. Safe to repeat: every
          stage is idempotent. Prints one JSON line per stage with the number re-driven.
          --stuck-after must be at least the submit reconciliation time (PAYPIPE_SEND_WINDOW + the longer of
          PAYPIPE_GATEWAY_TIMEOUT and PAYPIPE_WEBSERVICES_TIMEOUT + PAYPIPE_RECONCILE_GRACE, 95s by default).
        """

    static let syntax = CommandSyntax(.init(options: ["--stuck-after"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        do {
            let configuration = try WorkerConfiguration(stage: nil)
            let reconciliation = try SubmitStage.reconciliationSeconds()
            let stuckAfter = try arguments.value("--stuck-after").map { text throws(CommandArguments.UsageError) in
                guard let seconds = DurationParser.seconds(text) else { throw .init(description: "--stuck-after: not a duration: \(text)") }
                guard seconds >= reconciliation else {
                    throw .init(description: "--stuck-after: \(text) is below the submit reconciliation time of \(reconciliation)s "
                                + "(PAYPIPE_SEND_WINDOW + max(PAYPIPE_GATEWAY_TIMEOUT, PAYPIPE_WEBSERVICES_TIMEOUT) + PAYPIPE_RECONCILE_GRACE)")
                }
                return seconds
            } ?? configuration.stuckAfterSeconds
            let connection = try OperatorContext.database()
            defer { connection.close() }
            let publisher = try OperatorContext.publisher(configuration)
            defer { publisher.close() }
            for stage in Stage.allCases where stage != .decrypt {
                let router = DeliveryRouter(stage: stage, retrySchedule: configuration.retrySchedule)
                let stuck = try Reconciler(stage: stage, stuckAfterSeconds: stuckAfter).claimStuck(on: connection)
                try publisher.publish(stuck.map { router.handOff($0, to: stage) }, timeout: 30)
                print("{\"stage\":\"\(stage.rawValue)\",\"redriven\":\(stuck.count)}")
            }
            return ExitCode.ok
        } catch {
            return OperatorContext.report(error)
        }
    }
}
