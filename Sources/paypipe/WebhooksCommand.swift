import Foundation
import PaymentStages
import Pipeline
import Postgres

/// `paypipe webhooks`: the webhook delivery log and manual re-delivery (Standard Webhooks recommends both: a failure
/// log and replay/recovery for merchants whose endpoint was down).
enum WebhooksCommand: CLICommand {
    static let name = "webhooks"
    static let summary = "list webhook delivery attempts, replay webhooks, list and re-enable endpoints"
    static let usage = """
        usage: paypipe webhooks list [--failed] [--payment ID] [--limit N] [--json]
          Prints delivery attempts, newest first, one JSON object per line (payment, event id and type, URL, attempt,
          status code, latency, error, outcome). --failed keeps attempts that failed for good or disabled the endpoint.

               paypipe webhooks replay --payment ID
               paypipe webhooks replay --since TIME
          Re-delivers with the SAME webhook-id (receivers dedupe on it): puts the payment(s) back in the notify stage
          (stage done → notify) and publishes their hand-offs to paypipe.notify; the paypipe-notify worker then signs
          and POSTs afresh and publishes the results event again. --since replays every payment with a failed or
          disabled attempt since TIME (ISO 8601, e.g. 2026-01-01T00:00:00Z, or a duration ago such as 2h).
          A merchant endpoint disabled by a 410 must be re-enabled first (paypipe merchant apply).
          Exit 65 if nothing matched.

               paypipe webhooks endpoints [--disabled] [--merchant ID] [--json]
          Prints the endpoints that have failed (or are disabled), disabled first, one JSON object per line: merchant,
          host (scheme://host:port), URL without user info and query, failingSince, lastError, disabledAt, reason,
          heldDeliveries. An endpoint failing continuously for PAYPIPE_WEBHOOK_DISABLE_AFTER (5d) is disabled: its
          deliveries are held (not sent, not dropped) until it is re-enabled.

               paypipe webhooks endpoints enable MERCHANT [--url URL]
          Re-enables the merchant's disabled endpoints (or only URL, exactly as stored), forgets their failure record
          and re-delivers every held delivery (same webhook-id) by publishing its hand-off to paypipe.notify.
          Exit 65 if no disabled endpoint matched.

          list and endpoints always print JSON lines; --json is accepted for symmetry with the other read commands.
        """

    static let syntax = CommandSyntax(
        .init(["list"], flags: ["--failed", "--json"], options: ["--payment", "--limit"]),
        .init(["replay"], options: ["--payment", "--since"]),
        .init(["endpoints"], flags: ["--disabled", "--json"], options: ["--merchant"]),
        .init(["endpoints", "enable"], operands: ["MERCHANT"], options: ["--url"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        let action = arguments.positionals[0]
        do {
            switch action {
            case "list": return try list(arguments)
            case "replay": return try replay(arguments)
            case "endpoints": return try endpoints(arguments)
            default:
                printError(usage)
                return ExitCode.usage
            }
        } catch {
            return OperatorContext.report(error)
        }
    }

    private static func list(_ arguments: CommandArguments) throws -> Int32 {
        let paymentId = try arguments.value("--payment").map(paymentID)
        guard let limit = Int(arguments.value("--limit") ?? "100"), limit > 0 else {
            throw CommandArguments.UsageError(description: "--limit must be a positive integer")
        }
        let connection = try OperatorContext.database()
        defer { connection.close() }
        let records = try WebhookDeliveryStore().list(paymentId: paymentId, failedOnly: arguments.flag("--failed"), limit: limit, on: connection)
        for record in records {
            var object: [String: Any] = [
                "id": record.id, "paymentId": record.paymentId.paymentIDText, "eventId": record.eventId,
                "eventType": record.eventType, "url": record.url, "attempt": record.attempt, "outcome": record.outcome,
                "attemptedAt": Logger.timestamp(record.attemptedAt),
            ]
            object["statusCode"] = record.statusCode
            object["latencyMs"] = record.latencyMs
            object["error"] = record.error
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
        }
        return ExitCode.ok
    }

    private static func replay(_ arguments: CommandArguments) throws -> Int32 {
        let selection: WebhookReplay.Selection
        switch (arguments.value("--payment"), arguments.value("--since")) {
        case (let id?, nil): selection = .payment(try paymentID(id))
        case (nil, let since?): selection = .failedSince(try time(since))
        default: throw CommandArguments.UsageError(description: "give exactly one of --payment ID or --since TIME")
        }
        let configuration = try WorkerConfiguration(stage: nil)
        let connection = try OperatorContext.database()
        defer { connection.close() }
        let replay = WebhookReplay()
        // Reset first, then publish: if publishing fails the payments sit in the notify stage, where the reconciler
        // re-drives them; the other order could lose a replay.
        let messages = try replay.reset(selection, on: connection)
        guard !messages.isEmpty else {
            printError("paypipe: no terminal payment matched")
            return ExitCode.dataError
        }
        let publisher = try OperatorContext.publisher(configuration)
        defer { publisher.close() }
        try publisher.publish(messages.map(replay.handOff), timeout: 60)
        for message in messages {
            print("replaying \(message.paymentId.paymentIDText) (merchant \(message.merchantId), job \(message.jobId))")
        }
        return ExitCode.ok
    }

    private static func endpoints(_ arguments: CommandArguments) throws -> Int32 {
        arguments.positionals.count == 1 ? try listEndpoints(arguments) : try enableEndpoints(arguments)
    }

    private static func listEndpoints(_ arguments: CommandArguments) throws -> Int32 {
        let connection = try OperatorContext.database()
        defer { connection.close() }
        let rows = try WebhookEndpointStore().list(merchantId: arguments.value("--merchant"), disabledOnly: arguments.flag("--disabled"), on: connection)
        let held = try WebhookDeliveryStore().heldCounts(on: connection)
        for row in rows {
            var object: [String: Any] = [
                "merchant": row.endpoint.merchantId, "host": NotifyStage.endpointKey(row.endpoint.url),
                "url": OperationalEvent.redacted(row.endpoint.url), "state": row.health.isDisabled ? "disabled" : (row.health.failingSince == nil ? "healthy" : "failing"),
                "heldDeliveries": held[row.endpoint] ?? 0, "updatedAt": Logger.timestamp(row.updatedAt),
            ]
            object["failingSince"] = row.health.failingSince.map(Logger.timestamp)
            object["lastFailureAt"] = row.health.lastFailureAt.map(Logger.timestamp)
            object["lastSuccessAt"] = row.health.lastSuccessAt.map(Logger.timestamp)
            object["lastError"] = row.health.lastError
            object["disabledAt"] = row.health.disabledAt.map(Logger.timestamp)
            object["reason"] = row.health.disabledReason
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
        }
        return ExitCode.ok
    }

    private static func enableEndpoints(_ arguments: CommandArguments) throws -> Int32 {
        let merchant = arguments.positionals[2]
        let configuration = try WorkerConfiguration(stage: nil)
        let connection = try OperatorContext.database()
        defer { connection.close() }
        // Enable and release in one transaction, then publish: if publishing fails the released payments have
        // `redriven_at` cleared and the reconciler re-drives them.
        let (enabled, messages, operations) = try connection.transaction { transaction in
            let enabled = try WebhookEndpointStore().enable(merchantId: merchant, url: arguments.value("--url"), on: transaction)
            return (enabled, try WebhookDeliveryStore().releaseHeld(enabled, on: transaction),
                    try OperationEvents().held(enabled, on: transaction))
        }
        guard !enabled.isEmpty else {
            printError("paypipe: no disabled endpoint of merchant \(merchant) matched")
            return ExitCode.dataError
        }
        if !messages.isEmpty || !operations.isEmpty {
            let publisher = try OperatorContext.publisher(configuration)
            defer { publisher.close() }
            let replay = WebhookReplay()
            try publisher.publish(messages.map(replay.handOff) + operations.map(replay.handOff), timeout: 60)
        }
        for endpoint in enabled {
            print("enabled \(NotifyStage.endpointKey(endpoint.url)) for merchant \(endpoint.merchantId)")
        }
        let released = messages.count + operations.count
        print("re-delivering \(released) held deliver\(released == 1 ? "y" : "ies")")
        return ExitCode.ok
    }

    private static func paymentID(_ text: String) throws -> UUID {
        guard let id = UUID(uuidString: text) else { throw CommandArguments.UsageError(description: "payment ID must be a UUID") }
        return id
    }

    /// ISO 8601 (with or without fractional seconds) or a duration ago (`90s`, `2h`).
    static func time(_ text: String, now: Date = Date()) throws -> Date {
        if let seconds = DurationParser.seconds(text) { return now.addingTimeInterval(-seconds) }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        throw CommandArguments.UsageError(description: "--since must be ISO 8601 (2026-01-01T00:00:00Z) or a duration such as 2h")
    }
}
