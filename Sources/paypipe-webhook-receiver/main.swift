import Foundation
import PayPipeDevTools
import Pipeline

// paypipe-webhook-receiver: a merchant-side endpoint for sandbox runs. Verifies each request's Standard Webhooks
// signature with PAYPIPE_WEBHOOK_SECRET (whsec_…, several space-separated during a rotation) and prints every
// verified event as one JSON line on stdout (rejections go to stderr). PAYPIPE_RECEIVER_PORT (9190, the sandbox
// merchant's http://127.0.0.1:9190/webhooks), PAYPIPE_RECEIVER_HOST (127.0.0.1), PAYPIPE_RECEIVER_FAIL_FIRST_PERCENT
// (0: answer 503 to the first delivery of that share of events, to exercise retries; each such attempt is logged as
// webhook_failed_on_purpose with its webhook-id).
// Created first: it blocks SIGTERM/SIGINT for the server threads started later, so only `wait()` receives them.
let signals = ShutdownSignal()
let environment = EnvironmentReader()
let logger = Logger(component: "webhook-receiver", threshold: .info)
let receiver: WebhookReceiver
do {
    guard let secrets = environment.raw("PAYPIPE_WEBHOOK_SECRET")?.split(separator: " ").map(String.init), !secrets.isEmpty else {
        throw ConfigurationError(variable: "PAYPIPE_WEBHOOK_SECRET", problem: "required (whsec_…)")
    }
    let verifier: WebhookVerifier
    do {
        verifier = try WebhookVerifier(secrets: secrets)
    } catch {
        throw ConfigurationError(variable: "PAYPIPE_WEBHOOK_SECRET", problem: error.description)
    }
    let port: UInt16 = try environment.read(DevToolSettings.receiverPort)
    let failFirst: Int = try environment.read(DevToolSettings.receiverFailFirstPercent)
    receiver = WebhookReceiver(
        host: try environment.read(DevToolSettings.receiverHost), port: port, verifier: verifier,
        failFirstPercent: failFirst,
        onEvent: { event in
            logger.info("webhook_verified", [
                ("webhookId", .string(event.webhookId)), ("type", .string(event.type ?? "")),
                ("paymentId", .string(event.paymentId ?? "")), ("timestamp", .int(Int(event.timestamp))),
                ("duplicate", .bool(event.duplicate)), ("body", .string(String(decoding: event.body, as: UTF8.self))),
                ("traceparent", .string(event.traceparent ?? "")),
            ])
        },
        onRejected: { reason in logger.warning("webhook_rejected", [("reason", .string(reason))]) },
        onSimulatedFailure: { event in
            logger.info("webhook_failed_on_purpose", [
                ("webhookId", .string(event.webhookId)), ("type", .string(event.type ?? "")),
                ("paymentId", .string(event.paymentId ?? "")), ("timestamp", .int(Int(event.timestamp))),
            ])
        })
    try receiver.start()
    logger.info("receiver_listening", [("port", .int(Int(receiver.boundPort)))])
} catch {
    logger.error("receiver_failed", [("error", .string(String(describing: error)))])
    exit(78)
}
signals.wait()
receiver.stop()
exit(0)
