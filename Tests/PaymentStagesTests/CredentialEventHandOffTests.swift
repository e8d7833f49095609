import Foundation
import PaymentDomain
@testable import PaymentStages
import Pipeline
import Testing

/// The pure parts of credential events: the hand-off names its event and round-trips into the request notify reads;
/// an operation's hand-off keeps its meaning; the results message is correlated by the credential's id.
@Suite struct CredentialEventHandOffTests {
    static let paymentId = UUID(uuidString: "6f9619ff-8b86-d011-b42d-00c04fc964ff")!

    @Test func aCredentialEventHandOffAsksForThatEventNotThePaymentsResult() throws {
        let handOff = CredentialEventHandOff.handOff(.init(rowId: 42, merchantId: "m1", paymentId: Self.paymentId, jobId: "job-1"))
        #expect(handOff.target == Stage.notify.name && handOff.id == "credential-event:42:notify")
        #expect(CredentialEventHandOff.rowId(in: handOff.body) == 42)
        let stageMessage = try StageMessage.decode(handOff.body)
        #expect(stageMessage == StageMessage(paymentId: Self.paymentId, merchantId: "m1", jobId: "job-1"))
        let message = NotifyMessage(message: stageMessage, inbound: InboundMessage(body: handOff.body, to: .notify),
                                    operation: OperationEventMessage.operation(in: handOff.body),
                                    credentialEvent: CredentialEventHandOff.rowId(in: handOff.body))
        #expect(message.request == .credential(42) && message.namesEvent)
        // A payment's own hand-off and an operation's are unchanged by the new member.
        #expect(CredentialEventHandOff.rowId(in: stageMessage.encoded()) == nil)
        let operation = OperationEventMessage(payment: stageMessage, operationRowId: 7).encoded()
        #expect(CredentialEventHandOff.rowId(in: operation) == nil)
        #expect(NotifyMessage(message: stageMessage, inbound: InboundMessage(body: operation, to: .notify), operation: 7).request == .operation(7))
        #expect(NotifyMessage(message: stageMessage, inbound: InboundMessage(body: stageMessage.encoded(), to: .notify)).request == .payment(Self.paymentId))
        // Not a row id: a string, zero or negative is no credential event.
        for body in [#"{"credentialEvent":"42"}"#, #"{"credentialEvent":0}"#, #"{"credentialEvent":-3}"#] {
            #expect(CredentialEventHandOff.rowId(in: Array(body.utf8)) == nil)
        }
    }

    /// An operation's hand-off goes to notify under one `message_id` per operation, carrying the operation's row id; built
    /// from a payment's row it keeps the trace the row kept, else the handled delivery's applies (no trace of its own).
    @Test func anOperationHandOffNamesItsOperationAndKeepsTheRowsTrace() throws {
        let payment = StageMessage(paymentId: Self.paymentId, merchantId: "m1", jobId: "job-1")
        let handOff = HandOffMessage(OperationEventMessage(payment: payment, operationRowId: 7))
        #expect(handOff.target == Stage.notify.name && handOff.id == "operation:7:notify" && handOff.trace == nil)
        #expect(OperationEventMessage.operation(in: handOff.body) == 7)
        #expect(try StageMessage.decode(handOff.body) == payment)
        #expect(OperationEventMessage.operation(in: payment.encoded()) == nil)
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let traced = StageMessage(paymentId: Self.paymentId, merchantId: "m1", jobId: "job-1", traceparent: traceparent, tracestate: "vendor=abc")
        let released = HandOffMessage(OperationEventMessage(payment: traced, operationRowId: 7))
        #expect(released.trace?.traceparent == traceparent && released.trace?.state == "vendor=abc" && released.body == handOff.body)
    }

    @Test func aCredentialEventIsCorrelatedByItsCredentialId() {
        let subject = ResultSubject(merchantId: "m1", jobId: "job-1", paymentId: Self.paymentId.paymentIDText, credentialId: "cred_0123456789abcdef01234567")
        let message = ResultsMessageTests.router.message(for: subject.resultsMessage(
            id: "evt_x", type: "credential.unlinked", body: [], timestamp: Date(timeIntervalSince1970: 0), merchantId: "m1"))
        #expect(message.properties.correlationId == "cred_0123456789abcdef01234567")
        #expect(message.properties.headers.compactMapValues(\.stringValue) == [
            "merchantId": "m1", "jobId": "job-1", "paymentId": Self.paymentId.paymentIDText, "credentialId": "cred_0123456789abcdef01234567",
            "type": "credential.unlinked",
        ])
        #expect(message.routingKey == "credential.unlinked")
        #expect(message.properties.headers["CC"] == .array([.string("credential.unlinked.m1")]))
    }
}
