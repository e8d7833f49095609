import Foundation
import HTTP
import PaymentStages
import PayPipeDevTools
import Synchronization
import Testing

/// The sandbox receiver's own behaviour: verification, method check, forced first failures, duplicate marking.
@Suite struct WebhookReceiverTests {
    static let secret = WebhookSignerTests.secret

    final class Events: Sendable {
        let verified = Mutex<[WebhookReceiver.Event]>([])
        let rejected = Mutex<[String]>([])
        let failedOnPurpose = Mutex<[WebhookReceiver.Event]>([])
    }

    func withReceiver(failFirstPercent: Int = 0, _ body: (WebhookReceiver, Events) throws -> Void) throws {
        let events = Events()
        let receiver = WebhookReceiver(
            host: "127.0.0.1", port: 0, verifier: try WebhookVerifier(secrets: [Self.secret]), failFirstPercent: failFirstPercent,
            onEvent: { event in events.verified.withLock { $0.append(event) } },
            onRejected: { reason in events.rejected.withLock { $0.append(reason) } },
            onSimulatedFailure: { event in events.failedOnPurpose.withLock { $0.append(event) } })
        try receiver.start()
        defer { receiver.stop() }
        try body(receiver, events)
    }

    func post(_ receiver: WebhookReceiver, id: String = "evt_0001", secret: String = secret, method: String = "POST") throws -> Int {
        let body = Array(#"{"type":"payment.authorized","timestamp":"2026-01-01T00:00:00.000Z","data":{"paymentId":"p1"}}"#.utf8)
        let signer = try WebhookSigner(secrets: [secret])
        let headers = signer.headers(id: id, timestamp: Int64(Date().timeIntervalSince1970), body: body).map { HTTPHeader($0.name, $0.value) }
        let client = HTTPClient()
        return try client.send(HTTPRequest(method: method, url: "http://127.0.0.1:\(receiver.boundPort)/webhooks", headers: headers, body: body)).status
    }

    @Test func acceptsSignedEventsAndMarksDuplicates() throws {
        try withReceiver { receiver, events in
            let status1 = try post(receiver)
            #expect(status1 == 204)
            let status2 = try post(receiver)
            #expect(status2 == 204)
            let verified = events.verified.withLock { $0 }
            #expect(verified.map(\.type) == ["payment.authorized", "payment.authorized"])
            #expect(verified.map(\.paymentId) == ["p1", "p1"])
            #expect(verified.map(\.duplicate) == [false, true])
        }
    }

    @Test func rejectsWrongSignaturesAndMethods() throws {
        try withReceiver { receiver, events in
            let other = "whsec_" + Data((1...32).map { UInt8(200 + $0 % 50) }).base64EncodedString()
            let status3 = try post(receiver, secret: other)
            #expect(status3 == 401)
            let status4 = try post(receiver, method: "PUT")
            #expect(status4 == 405)
            #expect(events.verified.withLock { $0.isEmpty })
            #expect(events.rejected.withLock { $0 } == ["no matching v1 signature"])
        }
    }

    @Test func failsTheFirstDeliveryOfSelectedEventsOnly() throws {
        try withReceiver(failFirstPercent: 100) { receiver, events in
            let status5 = try post(receiver, id: "evt_a")
            #expect(status5 == 503)
            let status6 = try post(receiver, id: "evt_a")
            #expect(status6 == 204)
            let status7 = try post(receiver, id: "evt_a")
            #expect(status7 == 204)
            #expect(events.verified.withLock { $0.map(\.duplicate) } == [false, true])
            // The failed attempt is reported with the same webhook-id and payment as the deliveries.
            #expect(events.failedOnPurpose.withLock { $0.map(\.webhookId) } == ["evt_a"])
            #expect(events.failedOnPurpose.withLock { $0.map(\.paymentId) } == ["p1"])
        }
    }
}
