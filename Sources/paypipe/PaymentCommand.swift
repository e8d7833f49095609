import AMQP
import Foundation
import JSON
import PaymentStages
import Pipeline
import Postgres

/// `paypipe payment show`: a payment's state and audit trail. Card data is never shown, only whether it
/// is held (encrypted) or already purged.
enum PaymentCommand: CLICommand {
    static let name = "payment"
    static let summary = "show a payment's state, operations and audit trail; resolve one held for review; capture, void or refund it"
    static let usage = """
        usage: paypipe payment show ID [--json]
               paypipe payment show --job JOBID [--merchant ID] [--json]
          Prints the payment (status, stage, amount, error code and reason), whether card data is held or
          purged, and every audit event, as JSON (always; --json is accepted for symmetry with the other read
          commands). Exit 65 if no such payment.
               paypipe payment resolve ID --as authorized|declined|failed --reason TEXT [--operator NAME]
          Closes a needs_review payment after checking the gateway's records: the decision, the reason and the
          operator (default $USER) go to the audit trail, and the payment is handed to notification.
               paypipe payment capture|void|refund ID --operation-id X [--amount N]
          Publishes the operation job to paypipe.jobs (routing key payment.<kind>.requested), as a backend would:
          the operations worker performs it exactly once and reports it (docs/job-contract.md "Operations"). It never
          calls the gateway itself. --amount in minor units (capture: at most the authorised amount, refund: at most
          what is left; none for a void). Prints {"published": …}; `payment show ID` lists the operation's outcome.
               paypipe payment complete ID --operation-id X --amount N
          A deferred payment (its job had amountPending, status awaiting_amount): publishes payment.complete.requested
          with the amount in minor units (required; at most the job's amount). The operations worker hands the payment
          to authorize, and its AUTH is sent exactly once with that amount (docs/job-contract.md "Deferred
          payments (amount set later)").
        """

    static let syntax = CommandSyntax(
        [CommandSyntax.Form(["show"], operands: ["[ID]"], flags: ["--json"], options: ["--job", "--merchant"]),
         CommandSyntax.Form(["resolve"], operands: ["ID"], options: ["--as", "--reason", "--operator"])]
        + OperationRequest.Kind.allCases.map { CommandSyntax.Form([$0.rawValue], operands: ["ID"], options: ["--operation-id", "--amount"]) }
        + [CommandSyntax.Form(["complete"], operands: ["ID"], options: ["--operation-id", "--amount"])])

    static func run(_ arguments: CommandArguments) -> Int32 {
        let verb = arguments.positionals[0]
        if verb == "resolve" { return resolve(arguments) }
        if let kind = OperationRequest.Kind(rawValue: verb) {
            return operate(routingKey: kind.routingKey, arguments) { bytes throws(OperationRequest.DecodingError) in _ = try OperationRequest.decode(bytes, kind: kind) }
        }
        if verb == "complete" {
            guard arguments.value("--amount") != nil else { return report(usage: .init(description: "--amount is required: the deferred payment's amount in minor units")) }
            return operate(routingKey: CompletionRequest.routingKey, arguments) { bytes throws(OperationRequest.DecodingError) in _ = try CompletionRequest.decode(bytes) }
        }
        guard (arguments.positionals.count == 2) != (arguments.value("--job") != nil) else {
            return report(usage: .init(description: "give the payment ID or --job JOBID (one of them)"))
        }
        guard arguments.value("--merchant") == nil || arguments.value("--job") != nil else {
            return report(usage: .init(description: "--merchant goes with --job"))
        }
        do {
            let connection = try OperatorContext.database()
            defer { connection.close() }
            let store = PaymentStore()
            let payment: PaymentRecord?
            if let jobId = arguments.value("--job") {
                let merchant = arguments.value("--merchant")
                let rows = try connection.query(
                    "SELECT \(PaymentRecord.columns) FROM payments WHERE job_id = $1 AND ($2::text IS NULL OR merchant_id = $2) ORDER BY created_at LIMIT 2",
                    [jobId, merchant])
                guard rows.count <= 1 else {
                    printError("paypipe: job id \(jobId) exists for several merchants; add --merchant")
                    return ExitCode.usage
                }
                payment = try rows.first.map(PaymentRecord.init(row:))
            } else {
                guard let id = UUID(uuidString: try arguments.positional(1, "payment ID")) else {
                    throw CommandArguments.UsageError(description: "payment ID must be a UUID")
                }
                payment = try store.load(id, on: connection)
            }
            guard let payment else {
                printError("paypipe: no such payment")
                return ExitCode.dataError
            }
            print(try render(payment, on: connection))
            return ExitCode.ok
        } catch {
            return OperatorContext.report(error)
        }
    }

    static func resolve(_ arguments: CommandArguments) -> Int32 {
        do {
            guard let id = UUID(uuidString: try arguments.positional(1, "payment ID")) else {
                throw CommandArguments.UsageError(description: "payment ID must be a UUID")
            }
            let resolution = try PaymentResolution(
                paymentId: id, as: arguments.value("--as") ?? "", reason: arguments.value("--reason") ?? "",
                actor: arguments.value("--operator") ?? ProcessInfo.processInfo.environment["USER"] ?? "unknown")
            let configuration = try WorkerConfiguration(stage: nil)
            let connection = try OperatorContext.database()
            defer { connection.close() }
            let handOff = try resolution.apply(on: connection)
            let publisher = try OperatorContext.publisher(configuration)
            defer { publisher.close() }
            let router = DeliveryRouter(stage: .notify, retrySchedule: configuration.retrySchedule)
            try publisher.publish([router.handOff(handOff, to: .notify)], timeout: 30)
            print(try render(try PaymentStore().load(id, on: connection)!, on: connection))
            return ExitCode.ok
        } catch let error as PaymentResolution.ResolutionError {
            printError("paypipe: \(error)")
            if case .unknownPayment = error { return ExitCode.dataError }
            return ExitCode.usage
        } catch {
            return OperatorContext.report(error)
        }
    }

    /// Publishes an operation job for the payment, with publisher confirms, exactly as a backend does: the job goes
    /// through the operations worker's exactly-once protocol like any other.
    /// Publishes an operation job under `routingKey` after `check` (the worker's own decoder) accepted its body.
    static func operate(routingKey: String, _ arguments: CommandArguments, check: ([UInt8]) throws(OperationRequest.DecodingError) -> Void) -> Int32 {
        do {
            guard let id = UUID(uuidString: try arguments.positional(1, "payment ID")) else {
                throw CommandArguments.UsageError(description: "payment ID must be a UUID")
            }
            guard let operationId = arguments.value("--operation-id") else {
                throw CommandArguments.UsageError(description: "--operation-id is required (the idempotency key, unique per merchant)")
            }
            var amount: Int64?
            if let text = arguments.value("--amount") {
                guard let value = Int64(text), value > 0 else { throw CommandArguments.UsageError(description: "--amount must be a positive integer of minor units") }
                amount = value
            }
            let connection = try OperatorContext.database()
            defer { connection.close() }
            guard let payment = try PaymentStore().load(id, on: connection) else {
                printError("paypipe: no such payment")
                return ExitCode.dataError
            }
            var body: [(key: String, value: JSONValue)] = [
                ("operationId", .string(operationId)), ("merchantId", .string(payment.merchantId)), ("paymentId", .string(payment.id.paymentIDText)),
            ]
            if let amount { body.append(("amount", .integer(amount))) }
            let bytes = JSONValue.object(body).serialized()
            // The same checks the worker makes, so a typo fails here rather than in a dead letter.
            do {
                try check(bytes)
            } catch {
                throw CommandArguments.UsageError(description: "\(error)")
            }
            var properties = AMQPProperties()
            properties.contentType = "application/json"
            properties.messageId = operationId
            properties.persistent = true
            properties.appId = "paypipe-cli"
            let configuration = try WorkerConfiguration(stage: nil)
            let publisher = try OperatorContext.publisher(configuration)
            defer { publisher.close() }
            try publisher.publish([AMQPOutboundMessage(exchange: PipelineTopology.jobsExchange, routingKey: routingKey, body: bytes,
                                                       properties: properties, mandatory: true)], timeout: 30)
            print(String(decoding: (["published": .object(body), "routingKey": .string(routingKey)] as JSONValue).serialized(), as: UTF8.self))
            return ExitCode.ok
        } catch {
            return OperatorContext.report(error)
        }
    }

    static func render(_ payment: PaymentRecord, on connection: PostgresConnection) throws -> String {
        let card = try connection.query("SELECT purged_at FROM card_data WHERE payment_id = $1", [payment.id]).first
        let cardState = card == nil ? "none" : (card!.isNull("purged_at") ? "held (encrypted)" : "purged")
        let events = try connection.query(
            "SELECT at, from_status, to_status, stage, actor, error_code, detail FROM payment_events WHERE payment_id = $1 ORDER BY id",
            [payment.id])
        var object: [String: Any] = [
            "id": payment.id.paymentIDText, "merchantId": payment.merchantId, "jobId": payment.jobId,
            "status": payment.status.rawValue, "stage": payment.stage.rawValue, "cardData": cardState,
            "firstReceivedAt": Logger.timestamp(payment.firstReceivedAt), "updatedAt": Logger.timestamp(payment.updatedAt),
        ]
        object["orderReference"] = payment.orderReference
        if let amount = payment.amountMinor, let currency = payment.currency {
            object["amount"] = ["value": amount, "currency": currency]
        }
        object["errorCode"] = payment.errorCode
        object["errorMessage"] = payment.errorMessage
        object["events"] = try events.map { row -> [String: Any] in
            var event: [String: Any] = [
                "at": Logger.timestamp(try row.decode("at", as: Date.self)),
                "to": try row.decode("to_status", as: String.self),
                "stage": try row.decode("stage", as: String.self),
                "actor": try row.decode("actor", as: String.self),
            ]
            event["from"] = try row.decode("from_status", as: String?.self)
            event["errorCode"] = try row.decode("error_code", as: String?.self)
            event["detail"] = try row.decode("detail", as: String?.self)
            return event
        }
        if let money = try PaymentStore().money(payment.id, forUpdate: false, on: connection), let lifecycle = money.lifecycle {
            var summary: [String: Any] = [
                "status": lifecycle.status.rawValue, "captureMode": lifecycle.captureMode.rawValue, "authorized": lifecycle.authorizedAmount,
                "captured": lifecycle.capturedAmount, "refunded": lifecycle.refundedAmount,
            ]
            summary["captureDeadline"] = lifecycle.captureDeadline.map(Logger.timestamp)
            summary["settleStatus"] = money.settleStatus?.storedCode
            object["lifecycle"] = summary
        }
        let operations = OperationStore()
        object["operations"] = try operations.operations(paymentId: payment.id, on: connection).map { operation -> [String: Any] in
            var entry: [String: Any] = [
                "operationId": operation.operationId, "kind": operation.kind.rawValue, "state": operation.state.rawValue,
                "requestedBy": operation.requestedBy.rawValue, "createdAt": Logger.timestamp(operation.createdAt),
                "attempts": try operations.attempts(operation.id, on: connection).map { ["requestType": $0.requestType, "state": $0.state.rawValue] },
            ]
            entry["amount"] = operation.amount
            entry["request"] = operation.requestType
            entry["event"] = operation.state == .succeeded ? operation.effect?.event.rawValue : nil
            entry["eventAmount"] = operation.state == .succeeded ? operation.effect?.amount : nil
            entry["gatewayReference"] = operation.gatewayReference
            entry["errorCode"] = operation.errorCode
            entry["errorMessage"] = operation.errorMessage
            entry["finishedAt"] = operation.finishedAt.map(Logger.timestamp)
            return entry
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
