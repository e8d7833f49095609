import Crypto
import Foundation
import HTTP
import JSON
import PaymentStages
import Synchronization

/// A merchant-side webhook endpoint for local runs and tests (`paypipe-webhook-receiver`): verifies every request's
/// Standard Webhooks signature and reports verified events through `onEvent` (the executable prints them as JSON
/// lines).
///
/// `failFirstPercent` makes the first delivery of that share of events fail with 503, chosen deterministically
/// from the `webhook-id`, so a sandbox run exercises retries (the retry reuses the id and then succeeds). Those
/// failed attempts are reported through `onSimulatedFailure`, so a run can check that the retry kept the id.
public final class WebhookReceiver: Sendable {
    /// One verified request.
    public struct Event: Sendable {
        public let webhookId: String
        public let timestamp: Int64
        public let signature: String
        public let body: [UInt8]
        /// The `type` of the body, if it is a JSON envelope.
        public let type: String?
        public let paymentId: String?
        /// Whether this id had been delivered before (receivers dedupe on `webhook-id`).
        public let duplicate: Bool
        /// The request's W3C `traceparent` header: the payment's trace, which a merchant's service may continue.
        public let traceparent: String?
    }

    public let verifier: WebhookVerifier
    public let failFirstPercent: Int
    private let server: HTTPServer
    private let ledger = Ledger()

    /// Ids delivered (answered 2xx) and ids whose first delivery was failed on purpose. A class, so the server's
    /// handler closure (built before `self` exists) can share it.
    private final class Ledger: Sendable {
        let state = Mutex<(delivered: Set<String>, failed: Set<String>)>(([], []))
    }

    public init(host: String = "0.0.0.0", port: UInt16, verifier: WebhookVerifier, failFirstPercent: Int = 0,
                onEvent: @escaping @Sendable (Event) -> Void, onRejected: @escaping @Sendable (String) -> Void = { _ in },
                onSimulatedFailure: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.verifier = verifier
        self.failFirstPercent = min(100, max(0, failFirstPercent))
        let ledger = ledger
        let failFirstPercent = self.failFirstPercent
        server = HTTPServer(host: host, port: port, threads: 4) { request in
            Self.handle(request, verifier: verifier, failFirstPercent: failFirstPercent, ledger: ledger, onEvent: onEvent,
                        onRejected: onRejected, onSimulatedFailure: onSimulatedFailure)
        }
    }

    public func start() throws(HTTPServerError) { try server.start() }
    public func stop() { server.stop() }
    public var boundPort: UInt16 { server.boundPort }

    private static func handle(
        _ request: HTTPServerRequest, verifier: WebhookVerifier, failFirstPercent: Int, ledger: Ledger,
        onEvent: @Sendable (Event) -> Void, onRejected: @Sendable (String) -> Void, onSimulatedFailure: @Sendable (Event) -> Void
    ) -> HTTPServerResponse {
        guard request.method == "POST" else { return .text("method not allowed\n", status: 405) }
        do {
            try verifier.verify(body: request.body) { request.header($0) }
        } catch {
            onRejected(error.description)
            return .text("\(error.description)\n", status: 401)
        }
        let id = request.header("webhook-id") ?? ""
        let selected = failFirstPercent > 0 && Int(SHA256.hash(Array(id.utf8))[0]) * 100 / 256 < failFirstPercent
        let firstTime: Bool? = ledger.state.withLock { state in
            if selected, !state.delivered.contains(id), state.failed.insert(id).inserted { return nil }
            return state.delivered.insert(id).inserted
        }
        let json = try? JSONValue.parse(request.body)
        let event = Event(
            webhookId: id, timestamp: Int64(request.header("webhook-timestamp") ?? "") ?? 0,
            signature: request.header("webhook-signature") ?? "", body: request.body,
            type: json?["type"]?.stringValue, paymentId: json?["data"]?["paymentId"]?.stringValue, duplicate: !(firstTime ?? true),
            traceparent: request.header("traceparent"))
        guard firstTime != nil else {
            onSimulatedFailure(event)
            return .text("simulated failure\n", status: 503)
        }
        onEvent(event)
        return HTTPServerResponse(status: 204)
    }
}
