import Foundation
import JSON
import PaymentStages
import Pipeline
import Testing

@Suite struct PaymentEventTests {
    static let paymentId = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!

    static func event(_ type: PaymentEventType = .authorized) -> PaymentEvent {
        PaymentEvent(
            type: type, paymentId: paymentId, jobId: "job-1", merchantId: "m1", orderReference: "ORDER-1",
            amount: .init(value: 1050, currency: "GBP"),
            gateway: .init(transactionReference: "1-2-346", errorCode: "0", errorMessage: "Ok", settleStatus: "0", authCode: nil),
            card: .init(network: "visa", last4: "4242"), errorCode: nil, errorReason: nil,
            metadata: .object([("customer", .string("c-9"))]),
            receivedAt: Date(timeIntervalSince1970: 1_767_225_600), occurredAt: Date(timeIntervalSince1970: 1_767_225_601.5))
    }

    @Test func serialisesTheStandardWebhooksEnvelopeDeterministically() throws {
        let event = Self.event()
        let expected = #"{"type":"payment.authorized","timestamp":"2026-01-01T00:00:01.500Z","data":{"id":"\#(event.id)","paymentId":"6f9619ff-8b86-d011-b42d-00c04fc964ff","jobId":"job-1","merchantId":"m1","orderReference":"ORDER-1","amount":{"value":1050,"currency":"GBP"},"status":"authorized","gateway":{"transactionReference":"1-2-346","errorCode":"0","errorMessage":"Ok","settleStatus":"0"},"card":{"network":"visa","last4":"4242"},"metadata":{"customer":"c-9"},"receivedAt":"2026-01-01T00:00:00.000Z","completedAt":"2026-01-01T00:00:01.500Z"}}"#
        #expect(String(decoding: event.body, as: UTF8.self) == expected)
        #expect(event.body == Self.event().body)
        // Valid JSON for any consumer.
        _ = try JSONSerialization.jsonObject(with: Data(event.body))
    }

    @Test func omitsWhatIsUnknownAndCarriesFailureReasons() throws {
        var event = Self.event(.failed)
        event.gateway = nil
        event.card = nil
        event.amount = nil
        event.orderReference = nil
        event.errorCode = "invalid_amount"
        event.errorReason = "amount must be positive"
        let json = try JSONValue.parse(event.body)
        #expect(json["type"]?.stringValue == "payment.failed")
        #expect(json["data"]?["status"]?.stringValue == "failed")
        #expect(json["data"]?["gateway"] == nil)
        #expect(json["data"]?["card"] == nil)
        #expect(json["data"]?["amount"] == nil)
        #expect(json["data"]?["error"]?["code"]?.stringValue == "invalid_amount")
        #expect(json["data"]?["error"]?["reason"]?.stringValue == "amount must be positive")
        #expect(Self.event(.needsReview).status == "needs_review")
    }

    @Test func eventIdIsStablePerPaymentAndStatus() {
        let id = Self.event().id
        #expect(id == PaymentEvent.id(paymentId: Self.paymentId, type: .authorized))
        #expect(id.hasPrefix("evt_") && id.count == 36 && !id.contains("."))
        #expect(id != Self.event(.declined).id)
        #expect(id != PaymentEvent.id(paymentId: UUID(), type: .authorized))
    }

    /// One event per terminal status, and `payment.awaiting_amount` for the one status that waits on the merchant.
    @Test func eventTypesFollowTerminalStatuses() {
        #expect(PaymentStatus.allCases.compactMap(PaymentEventType.init(status:)).map(\.rawValue)
                == ["payment.awaiting_amount", "payment.authorized", "payment.declined", "payment.failed", "payment.needs_review"])
        for status in PaymentStatus.allCases {
            #expect((PaymentEventType(status: status) != nil) == (status.isTerminal || status == .awaitingAmount))
        }
        #expect(Self.event(.awaitingAmount).json["data"]?["status"] == "awaiting_amount")
        #expect(Self.event(.awaitingAmount).id != Self.event(.authorized).id, "the outcome's event that follows has its own id")
    }
}
