import Foundation
import PaymentDomain
import Testing

@Suite struct StageMessageTests {
    let message = StageMessage(paymentId: UUID(), merchantId: "merchant.test", jobId: "job \"1\" / ü")

    @Test func encodesSortedKeysAndRoundTrips() throws {
        let text = String(decoding: message.encoded(), as: UTF8.self)
        #expect(text == #"{"jobId":"job \"1\" / ü","merchantId":"merchant.test","paymentId":"\#(message.paymentId.paymentIDText)"}"#)
        #expect(try StageMessage.decode(message.encoded()) == message)
    }

    /// The one rendering of payment ids (lowercase, as PostgreSQL prints them), where hand-offs once wrote uppercase.
    @Test func writesThePaymentIdLowercase() {
        let text = String(decoding: message.encoded(), as: UTF8.self)
        #expect(text.contains(message.paymentId.uuidString.lowercased()))
        #expect(!text.contains(message.paymentId.uuidString.uppercased()))
    }

    @Test func ignoresUnknownMembersAndAcceptsEitherCase() throws {
        let upper = #"{"paymentId":"\#(message.paymentId.uuidString.uppercased())","merchantId":"m","jobId":"j"}"#
        #expect(try StageMessage.decode(Array(upper.utf8)).paymentId == message.paymentId)
        let body = #"{"paymentId":"\#(message.paymentId.paymentIDText)","merchantId":"m","jobId":"j","extra":[1,{}]}"#
        #expect(try StageMessage.decode(Array(body.utf8)) == StageMessage(paymentId: message.paymentId, merchantId: "m", jobId: "j"))
    }

    @Test(arguments: [
        "", "[]", "null", #"{"paymentId":"not-a-uuid","merchantId":"m","jobId":"j"}"#,
        #"{"merchantId":"m","jobId":"j"}"#, #"{"paymentId":"00000000-0000-0000-0000-000000000001","merchantId":1,"jobId":"j"}"#,
        #"{"paymentId":"00000000-0000-0000-0000-000000000001","merchantId":"m","jobId":"j","jobId":"k"}"#,
        #"{"paymentId":"00000000-0000-0000-0000-000000000001","merchantId":"m","jobId":"j"} trailing"#,
    ])
    func malformedMessagesAreUnattributable(body: String) {
        #expect {
            try StageMessage.decode(Array(body.utf8))
        } throws: { error in
            guard case .unattributable(let code, _) = error as? StageFailure else { return false }
            return code == "malformed_message"
        }
    }
}
